// Package testbin builds the codegenie binary once per test process, for
// the tests that run it as a process of its own (gate-control, workers, a
// client to kill).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	path string
	err  error
)

// Build builds cmd/codegenie on its first call and returns its path.
func Build() (string, error) {
	once.Do(func() {
		if dir, err = os.MkdirTemp("", "cgbin"); err != nil {
			return
		}
		path = filepath.Join(dir, "codegenie")
		if out, berr := exec.Command("go", "build", "-o", path, "github.com/codegenie/codegenie/cmd/codegenie").CombinedOutput(); berr != nil {
			err = fmt.Errorf("building codegenie: %w\n%s", berr, out)
		}
	})
	return path, err
}

// Path is Build for a test: a build failure fails it.
func Path(tb testing.TB) string {
	tb.Helper()
	p, err := Build()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Remove deletes the binary; call it from TestMain after m.Run.
func Remove() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
