// Package sariftest validates SARIF logs against the official SARIF 2.1.0
// JSON schema in tests. The schema is reference data of this workplace and
// is read from ../shared/schemas beside the repository, never copied in.
package sariftest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	once   sync.Once
	schema *jsonschema.Schema
	err    error
	path   string
)

// SchemaPath is where the schema is looked for.
func SchemaPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "schemas", "sarif-schema-2.1.0.json")
}

// Schema returns the compiled schema, or skips the test with the reason
// when the schema file is absent.
func Schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	once.Do(func() {
		path = SchemaPath()
		var f *os.File
		if f, err = os.Open(path); err != nil {
			return
		}
		defer f.Close()
		var doc any
		if doc, err = jsonschema.UnmarshalJSON(f); err != nil {
			return
		}
		c := jsonschema.NewCompiler()
		if err = c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
			return
		}
		schema, err = c.Compile("sarif-schema-2.1.0.json")
	})
	if os.IsNotExist(err) {
		t.Skipf("the SARIF 2.1.0 schema is not at %s (a clone outside the workplace has no ../shared); schema validation skipped, the other SARIF tests still run", path)
	}
	if err != nil {
		t.Fatalf("loading the SARIF schema: %v", err)
	}
	return schema
}

// Validate fails the test unless log is valid SARIF 2.1.0.
func Validate(t testing.TB, log []byte) {
	t.Helper()
	s := Schema(t)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(log))
	if err != nil {
		t.Fatalf("SARIF output is not JSON: %v", err)
	}
	if err := s.Validate(doc); err != nil {
		t.Fatalf("SARIF output does not validate against the 2.1.0 schema: %v\n%s", err, log)
	}
}
