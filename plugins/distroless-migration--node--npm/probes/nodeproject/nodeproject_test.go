package nodeproject

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
)

func run(t *testing.T, files map[string]string) probe.Output {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := probe.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := New().Run(t.Context(), repo, &probe.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Validate(); err != nil {
		t.Fatalf("invalid output: %v", err)
	}
	return out
}

func TestGoodPackageJSON(t *testing.T) {
	t.Parallel()
	out := run(t, map[string]string{
		"package.json": `{
  "name": "@acme/api",
  "version": "2.1.0",
  "main": "dist/index.js",
  "type": "module",
  "packageManager": "pnpm@9.1.0",
  "engines": {"node": ">=20 <23", "npm": ">=10"},
  "scripts": {"start": "node --require ./otel.js index.js", "prestart": "node check.js"},
  "dependencies": {"express": "^4.19.0", "pg": "8.11.0"},
  "devDependencies": {"typescript": "^5"},
  "bin": "./cli.js",
  "unknownButFine": {"nested": true}
}`,
		"pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
	})
	want := &Facts{
		Present: true, Name: "@acme/api", Version: "2.1.0", Main: "dist/index.js", Type: "module",
		PackageManager: "pnpm@9.1.0", EnginesNode: ">=20 <23",
		Scripts:         map[string]string{"start": "node --require ./otel.js index.js", "prestart": "node check.js"},
		Dependencies:    []Dependency{{"express", "^4.19.0"}, {"pg", "8.11.0"}},
		DevDependencies: []Dependency{{"typescript", "^5"}},
		Bin:             []Bin{{Name: "api", Path: "./cli.js"}},
		Lockfile:        "pnpm", Lockfiles: []string{"pnpm-lock.yaml"},
	}
	if out.Confidence != probe.High {
		t.Fatalf("confidence %s (%s: %s), want high", out.Confidence, out.Reason, out.Detail)
	}
	if diff := cmp.Diff(want, out.Facts); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
}

func TestBinObjectAndLockfiles(t *testing.T) {
	t.Parallel()
	out := run(t, map[string]string{
		"package.json":      `{"name":"x","bin":{"b-tool":"./b.js","a-tool":"./a.js"}}`,
		"package-lock.json": "{}",
		"yarn.lock":         "",
	})
	f := out.Facts.(*Facts)
	if diff := cmp.Diff([]Bin{{"a-tool", "./a.js"}, {"b-tool", "./b.js"}}, f.Bin); diff != "" {
		t.Errorf("bin (-want +got):\n%s", diff)
	}
	if f.Lockfile != "npm" || len(out.Warnings) != 1 || out.Warnings[0].ID != WarnMultipleLockfiles {
		t.Errorf("lockfile %q, warnings %+v; want npm with a multiple_lockfiles warning", f.Lockfile, out.Warnings)
	}
}

func TestMissingPackageJSON(t *testing.T) {
	t.Parallel()
	out := run(t, nil)
	if out.Confidence != probe.High || out.Facts.(*Facts).Present {
		t.Fatalf("got %+v, want high confidence with present=false", out)
	}
	if len(out.Warnings) != 1 || out.Warnings[0].ID != WarnMissingPackageJSON {
		t.Errorf("warnings = %+v", out.Warnings)
	}
}

func TestInvalidPackageJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		line, col  int
		msgContain string
	}{
		{"trailing comma", "{\n  \"name\": \"x\",\n}\n", 3, 1, "invalid character"},
		{"unterminated", "{\n  \"name\": \"x\"", 2, 14, "unexpected end"},
		{"empty", "", 1, 1, "unexpected end"},
		{"scripts not object", "{\n  \"scripts\": 5\n}", 2, 14, `field "scripts"`},
		{"script not string", "{\"scripts\": {\"start\": true}}", 1, 26, `field "scripts`},
		{"bin number", "{\n\"name\":\"x\",\n\"bin\": 7}", 3, 8, `"bin" must be`},
		{"two values", "{}\n{}", 2, 2, "after the top-level value"},
		{"array", "[1,2]", 1, 1, "expected nodeproject.packageJSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := run(t, map[string]string{"package.json": tt.body})
			if out.Confidence != probe.Low || out.Reason != ReasonInvalidPackageJSON {
				t.Fatalf("got %s/%s, want low/invalid_package_json", out.Confidence, out.Reason)
			}
			if len(out.Evidence) != 1 {
				t.Fatalf("evidence = %+v", out.Evidence)
			}
			ev := out.Evidence[0]
			if ev.File != "package.json" || ev.Line != tt.line || ev.Column != tt.col {
				t.Errorf("evidence at %s:%d:%d, want package.json:%d:%d (%s)", ev.File, ev.Line, ev.Column, tt.line, tt.col, out.Detail)
			}
			if !strings.Contains(out.Detail, tt.msgContain) {
				t.Errorf("detail %q does not mention %q", out.Detail, tt.msgContain)
			}
			if len(out.Warnings) == 0 || out.Warnings[len(out.Warnings)-1].ID != WarnInvalidPackageJSON {
				t.Errorf("warnings = %+v, want invalid_package_json", out.Warnings)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","scripts":{"start":"node ."},"bin":{"x":"y"}}`,
		`{"name":"@s/p","bin":"./c.js","engines":{"node":"22"}}`,
		`{`, `[]`, `null`, `{"bin":null}`, "{\"a\":\"\xff\"}", `{"dependencies":{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var facts Facts
		err := Parse(data, &facts)
		if err == nil {
			return
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("Parse returned %T, want *ParseError", err)
		}
		lines := strings.Count(string(data), "\n") + 1
		if pe.Line < 1 || pe.Line > lines || pe.Column < 1 {
			t.Fatalf("error position %d:%d outside the input of %d lines", pe.Line, pe.Column, lines)
		}
	})
}
