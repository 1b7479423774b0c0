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
	{argv: []string{"npm", "--prefix", "/srv/app", "start"}, want: ScriptInvocation{Runner: NPM, Script: "start", Dir: "/srv/app"}},
	{argv: []string{"npm", "start", "-C", "api"}, want: ScriptInvocation{Runner: NPM, Script: "start", Dir: "api"}},
	{argv: []string{"npm", "--prefix=apps/api", "run", "serve", "x"}, want: ScriptInvocation{Runner: NPM, Script: "serve", Args: []string{"x"}, Dir: "apps/api"}},
	{argv: []string{"npm", "run", "start", "-w", "api"}, want: ScriptInvocation{Runner: NPM, Script: "start", Workspace: "api"}},
	{argv: []string{"npm", "-w", "packages/api", "start"}, want: ScriptInvocation{Runner: NPM, Script: "start", Workspace: "packages/api"}},
	{argv: []string{"npm", "--workspace=@acme/api", "run", "serve"}, want: ScriptInvocation{Runner: NPM, Script: "serve", Workspace: "@acme/api"}},
	{argv: []string{"npm", "start", "-w", "a", "-w", "b"}, unsupported: "several workspaces"},
	{argv: []string{"npm", "start", "--workspaces"}, unsupported: "--workspaces"},
	{argv: []string{"npm", "start", "-w", "a", "--include-workspace-root"}, unsupported: "--include-workspace-root"},
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
		{[]string{"pnpm", "-r", "start"}, "start", nil, "-r"},
		{[]string{"pnpm", "--filter", "a", "--filter", "b", "start"}, "start", nil, "twice"},
		{[]string{"pnpm", "--filter", "api...", "start"}, "start", nil, "dependencies"},
		{[]string{"pnpm", "--filter", "!api", "start"}, "start", nil, "exclusion"},
		{[]string{"yarn", "workspace", "a", "workspace", "b", "start"}, "start", nil, "twice"},
		{[]string{"npx", "--no-install", "x"}, "", nil, ""},
	} {
		if tt.script == "" {
			if _, ok := ParseInvocation(tt.argv); ok {
				t.Errorf("ParseInvocation(%q) is a script invocation; want none", tt.argv)
			}
			continue
		}
		got, ok := ParseInvocation(tt.argv)
		if !ok || got.Script != tt.script || !cmp.Equal(got.Args, tt.args, cmpopts.EquateEmpty()) ||
			!strings.Contains(strings.Join(got.Unsupported, "; "), tt.unsupported) || (tt.unsupported == "") != (len(got.Unsupported) == 0) {
			t.Errorf("ParseInvocation(%q) = %+v, %v; want script %s, args %q, unsupported %q", tt.argv, got, ok, tt.script, tt.args, tt.unsupported)
		}
	}
}

// TestParseInvocationOtherPackage: the command lines that run another
// directory's or a workspace's script name it, and nothing about them is
// unsupported.
func TestParseInvocationOtherPackage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		argv []string
		want ScriptInvocation
	}{
		{[]string{"yarn", "--cwd", "api", "start"}, ScriptInvocation{Runner: Yarn, Script: "start", Dir: "api"}},
		{[]string{"yarn", "--cwd=apps/api", "run", "serve", "-p", "3"}, ScriptInvocation{Runner: Yarn, Script: "serve", Args: []string{"-p", "3"}, Dir: "apps/api"}},
		{[]string{"yarn", "workspace", "@acme/server", "start"}, ScriptInvocation{Runner: Yarn, Script: "start", Workspace: "@acme/server"}},
		{[]string{"yarn", "--silent", "workspace", "server", "run", "serve", "--", "x"}, ScriptInvocation{Runner: Yarn, Script: "serve", Args: []string{"x"}, Workspace: "server"}},
		{[]string{"pnpm", "--filter", "./apps/server", "run", "start"}, ScriptInvocation{Runner: PNPM, Script: "start", Workspace: "./apps/server"}},
		{[]string{"pnpm", "--filter=@acme/server", "start"}, ScriptInvocation{Runner: PNPM, Script: "start", Workspace: "@acme/server"}},
		{[]string{"pnpm", "-F", "{apps/server}", "start"}, ScriptInvocation{Runner: PNPM, Script: "start", Workspace: "./apps/server"}},
		{[]string{"pnpm", "-C", "apps/server", "start"}, ScriptInvocation{Runner: PNPM, Script: "start", Dir: "apps/server"}},
		{[]string{"pnpm", "--dir", "apps/server", "start", "--port", "3"}, ScriptInvocation{Runner: PNPM, Script: "start", Args: []string{"--port", "3"}, Dir: "apps/server"}},
		{[]string{"pnpm", "--dir=apps/server", "run", "start"}, ScriptInvocation{Runner: PNPM, Script: "start", Dir: "apps/server"}},
		{[]string{"node", "--run", "start"}, ScriptInvocation{Runner: NodeRun, Script: "start", NoHooks: true}},
		{[]string{"/usr/local/bin/node", "--run=serve", "--", "--port", "3"}, ScriptInvocation{Runner: NodeRun, Script: "serve", Args: []string{"--port", "3"}, NoHooks: true}},
	} {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			t.Parallel()
			got, ok := ParseInvocation(tt.argv)
			if !ok {
				t.Fatalf("ParseInvocation(%q) is not a script invocation", tt.argv)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseInvocation(%q) (-want +got):\n%s", tt.argv, diff)
			}
		})
	}
}

func TestNodeRunUnsupported(t *testing.T) {
	t.Parallel()
	for _, argv := range [][]string{
		{"node", "--env-file=.env", "--run", "start"},
		{"node", "--run", "start", "extra"},
	} {
		got, ok := ParseInvocation(argv)
		if !ok || len(got.Unsupported) == 0 {
			t.Errorf("ParseInvocation(%q) = %+v, %v; want a node --run invocation with an unsupported option", argv, got, ok)
		}
	}
	if _, ok := ParseInvocation([]string{"node", "server.js"}); ok {
		t.Errorf("ParseInvocation(node server.js) is a script invocation")
	}
}

func TestNpxBin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		argv        []string
		bin         []string
		unsupported string
		ok          bool
	}{
		{[]string{"npx", "--no-install", "next", "start"}, []string{"next", "start"}, "", true},
		{[]string{"npx", "-y", "fastify", "start", "-l", "info"}, []string{"fastify", "start", "-l", "info"}, "", true},
		{[]string{"/usr/bin/npx", "--", "tsx", "src/a.ts"}, []string{"tsx", "src/a.ts"}, "", true},
		{[]string{"npx", "-p", "serve@14", "serve"}, []string{"serve"}, "-p", true},
		{[]string{"npx", "-c", "node a.js"}, nil, "-c", false},
		{[]string{"npx", "--no-install"}, nil, "", false},
		{[]string{"npm", "start"}, nil, "", false},
	} {
		bin, un, ok := NpxBin(tt.argv)
		if ok != tt.ok || !cmp.Equal(bin, tt.bin, cmpopts.EquateEmpty()) || !strings.Contains(strings.Join(un, "; "), tt.unsupported) || (tt.unsupported == "") != (len(un) == 0) {
			t.Errorf("NpxBin(%q) = %q, %q, %v; want %q, unsupported %q, %v", tt.argv, bin, un, ok, tt.bin, tt.unsupported, tt.ok)
		}
	}
}

func TestCdThen(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		line string
		dir  string
		argv []string
		ok   bool
	}{
		{"cd packages/core && npm start", "packages/core", []string{"npm", "start"}, true},
		{"cd /app/api && exec node server.js", "/app/api", []string{"node", "server.js"}, true},
		{"cd api && pnpm run serve -- --port 3", "api", []string{"pnpm", "run", "serve", "--", "--port", "3"}, true},
		{"cd api; npm start", "", nil, false},
		{"cd api || npm start", "", nil, false},
		{"cd $APP && npm start", "", nil, false},
		{"cd - && npm start", "", nil, false},
		{"cd api && PORT=3 node a.js", "", nil, false},
		{"cd api && node a.js > log", "", nil, false},
		{"cd api && cd b", "", nil, false},
		{"cd a && npm run build && node x.js", "", nil, false},
		{"npm start", "", nil, false},
	} {
		dir, argv, ok := CdThen(Analyze(tt.line))
		if ok != tt.ok || dir != tt.dir || !cmp.Equal(argv, tt.argv, cmpopts.EquateEmpty()) {
			t.Errorf("CdThen(%q) = %q, %q, %v; want %q, %q, %v", tt.line, dir, argv, ok, tt.dir, tt.argv, tt.ok)
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
		if tt.unsupported != "" || tt.want.Dir != "" || tt.want.Workspace != "" {
			continue // another package's script: the resolver's, not npm's parsing
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
