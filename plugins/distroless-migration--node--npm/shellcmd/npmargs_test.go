package shellcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// npmCases are npm command lines with what npm does with them (npm 10 and
// 11, checked against the real npm by TestParseInvocationMatchesNPM): its
// own options are its own, positional arguments and those after -- go to
// the script, and an option npm does not know reaches the script only as
// npm_config_<name> in its environment.
var npmCases = []struct {
	argv []string
	want ScriptInvocation
	// unsupported is a word of the reason the invocation cannot be
	// rewritten, when it cannot.
	unsupported string
}{
	{argv: []string{"npm", "start"}, want: ScriptInvocation{Runner: NPM, Script: "start"}},
	{argv: []string{"npm", "start", "--silent"}, want: ScriptInvocation{Runner: NPM, Script: "start"}},
	{argv: []string{"npm", "--silent", "start"}, want: ScriptInvocation{Runner: NPM, Script: "start"}},
	{argv: []string{"npm", "start", "-s", "foo"}, want: ScriptInvocation{Runner: NPM, Script: "start", Args: []string{"foo"}}},
	{argv: []string{"npm", "start", "-sq"}, want: ScriptInvocation{Runner: NPM, Script: "start"}},
	{argv: []string{"npm", "start", "--loglevel", "warn", "x"}, want: ScriptInvocation{Runner: NPM, Script: "start", Args: []string{"x"}}},
	{argv: []string{"npm", "start", "--loglev", "warn", "x"}, want: ScriptInvocation{Runner: NPM, Script: "start", Args: []string{"x"}}},
	{argv: []string{"npm", "start", "--", "--silent"}, want: ScriptInvocation{Runner: NPM, Script: "start", Args: []string{"--silent"}}},
	{argv: []string{"npm", "run", "serve", "--", "--port", "3"}, want: ScriptInvocation{Runner: NPM, Script: "serve", Args: []string{"--port", "3"}}},
	{argv: []string{"npm", "run", "serve", "--port", "3"}, want: ScriptInvocation{Runner: NPM, Script: "serve", Args: []string{"3"}, Env: []string{"npm_config_port=true"}}},
	{argv: []string{"npm", "start", "--port=3000", "bar"}, want: ScriptInvocation{Runner: NPM, Script: "start", Args: []string{"bar"}, Env: []string{"npm_config_port=3000"}}},
	{argv: []string{"npm", "start", "--foo", "true", "z"}, want: ScriptInvocation{Runner: NPM, Script: "start", Args: []string{"z"}, Env: []string{"npm_config_foo=true"}}},
	{argv: []string{"npm", "start", "--no-foo"}, want: ScriptInvocation{Runner: NPM, Script: "start", Env: []string{"npm_config_foo="}}},
	{argv: []string{"npm", "start", "--cache", "/tmp/c", "e"}, want: ScriptInvocation{Runner: NPM, Script: "start", Args: []string{"e"}}},
	{argv: []string{"npm", "start", "--color", "always", "c"}, want: ScriptInvocation{Runner: NPM, Script: "start", Args: []string{"c"}}},
	{argv: []string{"npm", "start", "--ignore-scripts"}, want: ScriptInvocation{Runner: NPM, Script: "start", NoHooks: true}},
	{argv: []string{"npm", "run", "x", "--if-present", "a"}, want: ScriptInvocation{Runner: NPM, Script: "x", Args: []string{"a"}}},
	{argv: []string{"npm", "--silent", "run-script", "x"}, want: ScriptInvocation{Runner: NPM, Script: "x"}},
	{argv: []string{"npm", "start", "--node-options=--max-old-space-size=512"}, want: ScriptInvocation{Runner: NPM, Script: "start", Env: []string{"NODE_OPTIONS=--max-old-space-size=512"}}},
	{argv: []string{"npm", "--prefix", "/srv/app", "start"}, unsupported: "--prefix"},
	{argv: []string{"npm", "start", "-C", "api"}, unsupported: "--prefix"},
	{argv: []string{"npm", "run", "start", "-w", "api"}, unsupported: "--workspace"},
	{argv: []string{"npm", "start", "--help"}, unsupported: "--usage"},
	{argv: []string{"/usr/local/bin/npm", "t"}, want: ScriptInvocation{Runner: NPM, Script: "test"}},
}

func TestParseInvocationYarnPnpmOptions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		argv        []string
		script      string
		args        []string
		unsupported string
	}{
		{[]string{"yarn", "--silent", "start"}, "start", nil, ""},
		{[]string{"yarn", "start", "--port", "3"}, "start", []string{"--port", "3"}, ""},
		{[]string{"yarn", "--cwd", "api", "start"}, "start", nil, "--cwd"},
		{[]string{"pnpm", "--filter=api", "start"}, "start", nil, "--filter"},
		{[]string{"pnpm", "-r", "start"}, "start", nil, "-r"},
	} {
		got, ok := ParseInvocation(tt.argv)
		if !ok || got.Script != tt.script || !cmp.Equal(got.Args, tt.args, cmpopts.EquateEmpty()) ||
			!strings.Contains(strings.Join(got.Unsupported, "; "), tt.unsupported) || (tt.unsupported == "") != (len(got.Unsupported) == 0) {
			t.Errorf("ParseInvocation(%q) = %+v, %v; want script %s, args %q, unsupported %q", tt.argv, got, ok, tt.script, tt.args, tt.unsupported)
		}
	}
}

func TestParseInvocationNPMOptions(t *testing.T) {
	t.Parallel()
	for _, tt := range npmCases {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			t.Parallel()
			got, ok := ParseInvocation(tt.argv)
			if !ok {
				t.Fatalf("ParseInvocation(%q) is not a script invocation", tt.argv)
			}
			if tt.unsupported != "" {
				if !strings.Contains(strings.Join(got.Unsupported, "; "), tt.unsupported) {
					t.Fatalf("ParseInvocation(%q).Unsupported = %q, want one naming %s", tt.argv, got.Unsupported, tt.unsupported)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseInvocation(%q) (-want +got):\n%s", tt.argv, diff)
			}
		})
	}
}

// TestParseInvocationMatchesNPM runs each case with the host's npm, with
// a script that prints its arguments and npm_config_ environment, and
// compares what the script saw with what ParseInvocation says.
func TestParseInvocationMatchesNPM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("no npm on this host to compare with")
	}
	dir := t.TempDir()
	pkg := `{"name":"t","version":"1.0.0","scripts":{"start":"node p.js","serve":"node p.js","x":"node p.js","test":"node p.js","prestart":"node -e \"console.log(JSON.stringify({hook:true}))\""}}`
	script := `const env = Object.keys(process.env).filter(k => /^npm_config_(port|foo)$/.test(k) || (k === 'NODE_OPTIONS' && process.env[k])).sort().map(k => k + '=' + process.env[k]);
console.log(JSON.stringify({argv: process.argv.slice(2), env}));`
	for name, body := range map[string]string{"package.json": pkg, "p.js": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range npmCases {
		if tt.unsupported != "" {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := exec.CommandContext(ctx, npm, tt.argv[1:]...)
		cmd.Dir = dir
		cmd.Env = []string{"npm_config_update_notifier=false", "npm_config_offline=true", "npm_config_fund=false"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "NODE_OPTIONS=") && !strings.HasPrefix(strings.ToLower(kv), "npm_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Errorf("npm %q: %v", tt.argv[1:], err)
			continue
		}
		var seen struct {
			Argv []string `json:"argv"`
			Env  []string `json:"env"`
		}
		hook := false
		for _, line := range strings.Split(out.String(), "\n") {
			switch {
			case strings.HasPrefix(line, `{"hook"`):
				hook = true
			case strings.HasPrefix(line, `{"argv"`):
				if err := json.Unmarshal([]byte(line), &seen); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, _ := ParseInvocation(tt.argv)
		want := struct{ Argv, Env []string }{seen.Argv, seen.Env}
		have := struct{ Argv, Env []string }{got.Args, got.Env}
		if diff := cmp.Diff(want, have, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("npm %q (-npm +ParseInvocation):\n%s", tt.argv[1:], diff)
		}
		if got.Script == "start" && hook == got.NoHooks {
			t.Errorf("npm %q: prestart ran %v, but NoHooks is %v", tt.argv[1:], hook, got.NoHooks)
		}
	}
}
