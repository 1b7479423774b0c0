package recipe

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLauncherRunsStepsInOrder runs a generated launcher with this host's
// node over steps this test writes: each step runs in order with its own
// variables only (cross-env's and VAR=x's, not the step before's), and
// the first that fails stops the chain with its exit status, as sh ran
// `a && b` and npm a prestart hook.
func TestLauncherRunsStepsInOrder(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on this host to run the generated launcher")
	}
	// step.js appends its name, its arguments and the variables A and B to
	// log, and exits with the status its first argument names.
	const stepJS = `const fs = require('fs');
const [code, ...rest] = process.argv.slice(2);
fs.appendFileSync(process.env.LOG, [code, ...rest, 'A=' + (process.env.A || ''), 'B=' + (process.env.B || '')].join(' ') + '\n');
process.exit(Number(code));
`
	for _, tc := range []struct {
		name  string
		steps []step
		env   []string
		code  int
		log   []string
	}{
		{name: "each step its own variables",
			steps: []step{{Args: []string{"step.js", "0", "migrate"}, Env: envObject([]string{"A=1", "A=2"})}, {Args: []string{"step.js", "0", "serve"}, Env: envObject([]string{"B=x y"})}},
			log:   []string{"0 migrate A=2 B=", "0 serve A= B=x y"}},
		{name: "the first failure stops the chain with its status",
			steps: []step{{Args: []string{"step.js", "3", "migrate"}}, {Args: []string{"step.js", "0", "serve"}}},
			code:  3, log: []string{"3 migrate A= B="}},
		{name: "a node_modules/.bin step runs its JS file, then the node step",
			steps: []step{{Bin: "tool", Args: []string{"0", "migrate:latest"}}, {Args: []string{"step.js", "0", "serve"}}},
			log:   []string{"0 migrate:latest A= B=", "0 serve A= B="}},
		{name: "no step variables: the launcher's own environment",
			steps: []step{{Args: []string{"step.js", "0", "serve"}}},
			env:   []string{"A=outer"}, log: []string{"0 serve A=outer B="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "step.js"), []byte(stepJS), 0o644); err != nil {
				t.Fatal(err)
			}
			// node_modules/.bin/tool links to a package's JS file, as npm
			// links a bin.
			pkg := filepath.Join(dir, "node_modules", "tool")
			if err := os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pkg, "cli.js"), []byte("#!/usr/bin/env node\n"+stepJS), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../tool/cli.js", filepath.Join(dir, "node_modules", ".bin", "tool")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, LauncherName), launcher(tc.steps, nil), 0o644); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(dir, "log")
			cmd := exec.CommandContext(t.Context(), node, LauncherName)
			cmd.Dir = dir
			cmd.Env = append([]string{"PATH=/nonexistent", "LOG=" + log}, tc.env...)
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit status %d, want %d (output %q)", code, tc.code, out)
			}
			b, _ := os.ReadFile(log)
			if d := cmp.Diff(tc.log, strings.Split(strings.TrimSpace(string(b)), "\n")); d != "" {
				t.Errorf("steps ran (-want +got):\n%s", d)
			}
		})
	}
}
