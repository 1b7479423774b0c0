package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/strictjson"
)

// FuzzUnmarshal holds strictjson to its promise that no two parsers read an
// accepted document differently. For every document it accepts:
//
//   - no object holds a key twice (counted on the raw token stream, which
//     keeps what a map decode would collapse);
//   - every key of a struct-typed object is exactly a field's name;
//   - decoding it generically (exact-case, last key wins) and then into the
//     struct gives the value strictjson gave.
//
// And a refused document is refused with an error, never a panic.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","role":"gate","command":["a"],"workspace":{"dir":"/w"},"Untagged":1}`,
		`{"role":"probe","role":"gate"}`,
		`{"command":["a"],"Command":["b"]}`,
		`{"workspace":{"DIR":"/etc"}}`,
		`{"role":"probe","r\u006fle":"gate"}`,
		`{"nested":[{"dir":"a"},{"dir":"a","dir":"b"}],"ptr":{"dir":"x"}}`,
		`{"mirrors":{"a":"1","A":"2"},"raw":{"x":[1,{"y":null}]},"any":{"k":true}}`,
		`{"ID":"1"}`, `{"Skipped":1}`, `null`, `[]`, `{`, `{"role":"a"} x`,
		"{\"wor\u212aspace\":{}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got request
		if err := strictjson.Unmarshal(b, &got); err != nil {
			return
		}
		if key, path, ok := duplicateKey(b); ok {
			t.Fatalf("accepted a document with key %q twice in %s", key, path)
		}
		var generic any
		if err := json.Unmarshal(b, &generic); err != nil {
			t.Fatalf("encoding/json refuses what strictjson accepted: %v", err)
		}
		if path, ok := inexactKey(generic, reflect.TypeFor[request](), "$"); !ok {
			t.Fatalf("accepted a key that is not a field's exact name at %s", path)
		}
		again, err := json.Marshal(generic)
		if err != nil {
			t.Fatal(err)
		}
		var want request
		if err := json.Unmarshal(again, &want); err != nil {
			t.Fatalf("decoding the generic form %s: %v", again, err)
		}
		opts := cmp.Options{cmp.AllowUnexported(request{}), cmp.Comparer(func(a, b json.RawMessage) bool {
			return jsonEqual(a, b)
		})}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Fatalf("the generic and strict decodings differ (-generic +strict):\n%s", diff)
		}
	})
}

// duplicateKey reports a key that an object of b holds twice, walking the
// token stream of a document that is known to be valid.
func duplicateKey(b []byte) (key, path string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next token in an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, isDelim := tok.(json.Delim); isDelim && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k := tok.(string)
			if top.seen[k] {
				return k, "depth " + strings.Repeat(".", len(stack)), true
			}
			top.seen[k] = true
			top.key = false
			continue
		}
		if top != nil && top.object {
			top.key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, seen: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// inexactKey walks a generic decoding beside the type it was meant for and
// reports the path of a struct-typed object key that is not exactly one of
// the struct's JSON names.
func inexactKey(v any, t reflect.Type, path string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch v := v.(type) {
	case map[string]any:
		if t.Kind() == reflect.Map {
			for k, e := range v {
				if p, ok := inexactKey(e, t.Elem(), path+"."+k); !ok {
					return p, false
				}
			}
			return "", true
		}
		if t.Kind() != reflect.Struct {
			return "", true // RawMessage, any
		}
		names := jsonNames(t)
		for k, e := range v {
			ft, ok := names[k]
			if !ok {
				return path + "." + k, false
			}
			if p, ok := inexactKey(e, ft, path+"."+k); !ok {
				return p, false
			}
		}
	case []any:
		if t.Kind() == reflect.Slice {
			for _, e := range v {
				if p, ok := inexactKey(e, t.Elem(), path+"[]"); !ok {
					return p, false
				}
			}
		}
	}
	return "", true
}

// jsonNames lists the JSON names of the test types by hand: it does not
// share the package's reflection.
func jsonNames(t reflect.Type) map[string]reflect.Type {
	switch t {
	case reflect.TypeFor[request]():
		return map[string]reflect.Type{
			"id": reflect.TypeFor[string](), "role": reflect.TypeFor[string](), "command": reflect.TypeFor[[]string](),
			"workspace": reflect.TypeFor[workspace](), "nested": reflect.TypeFor[[]workspace](), "ptr": reflect.TypeFor[*workspace](),
			"mirrors": reflect.TypeFor[map[string]string](), "raw": reflect.TypeFor[json.RawMessage](), "any": reflect.TypeFor[any](),
			"Untagged": reflect.TypeFor[int](),
		}
	case reflect.TypeFor[workspace]():
		return map[string]reflect.Type{"dir": reflect.TypeFor[string](), "mount": reflect.TypeFor[string]()}
	}
	panic("no JSON names for " + t.String())
}

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b) || isNull(a) && isNull(b)
	}
	var x, y any
	if errors.Join(json.Unmarshal(a, &x), json.Unmarshal(b, &y)) != nil {
		return bytes.Equal(a, b)
	}
	return cmp.Equal(x, y)
}

func isNull(b []byte) bool { return len(b) == 0 || string(bytes.TrimSpace(b)) == "null" }
