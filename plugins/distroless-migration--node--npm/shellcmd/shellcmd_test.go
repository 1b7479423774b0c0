package shellcmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAnalyze(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want Analysis
	}{
		{"node server.js", Analysis{Removable: true, Argv: []string{"node", "server.js"}}},
		{"node --require ./otel.js index.js", Analysis{Removable: true, Argv: []string{"node", "--require", "./otel.js", "index.js"}}},
		{`node "my app.js" 'x y'`, Analysis{Removable: true, Argv: []string{"node", "my app.js", "x y"}}},
		{"exec node server.js", Analysis{NeedsShell: true, Reasons: []string{ReasonExec}, Removable: true, Argv: []string{"node", "server.js"}}},
		{"NODE_ENV=production PORT=3000 node app.js", Analysis{NeedsShell: true, Reasons: []string{ReasonAssign}, Removable: true,
			Argv: []string{"node", "app.js"}, Env: []string{"NODE_ENV=production", "PORT=3000"}}},
		{"npm run migrate && npm start", Analysis{NeedsShell: true, Reasons: []string{"calls package script migrate", "calls package script start", "operator &&"}, Calls: []string{"migrate", "start"}}},
		{"node a.js || exit 1", Analysis{NeedsShell: true, Reasons: []string{"operator ||", "shell builtin exit"}}},
		{"node a.js; node b.js", Analysis{NeedsShell: true, Reasons: []string{"command list (; or newline)"}}},
		{"node a.js | tee log", Analysis{NeedsShell: true, Reasons: []string{"operator |"}}},
		{"node a.js > out.log 2>&1", Analysis{NeedsShell: true, Reasons: []string{"redirection"}}},
		{"node $ENTRY", Analysis{NeedsShell: true, Reasons: []string{"variable expansion"}}},
		{`node "${ENTRY:-a.js}"`, Analysis{NeedsShell: true, Reasons: []string{"variable expansion"}}},
		{"node $(cat entry)", Analysis{NeedsShell: true, Reasons: []string{"command substitution"}}},
		{"(cd dist && node .)", Analysis{NeedsShell: true, Reasons: []string{"operator &&", "shell builtin cd", "subshell"}}},
		{"cd dist", Analysis{NeedsShell: true, Reasons: []string{"shell builtin cd"}}},
		{"node dist/*.js", Analysis{NeedsShell: true, Reasons: []string{"glob pattern"}}},
		{"sh -c 'node x'", Analysis{NeedsShell: true, Reasons: []string{"runs a shell: sh"}}},
		{"if true; then node a; fi", Analysis{NeedsShell: true, Reasons: []string{"shell construct IfClause"}}},
		{"node a &", Analysis{NeedsShell: true, Reasons: []string{"background &"}}},
		{"npm-run-all build start", Analysis{NeedsShell: true, Reasons: []string{"calls package script build start"}, Calls: []string{"build start"}}},
		{"node 'unterminated", Analysis{NeedsShell: true, Reasons: []string{"not valid POSIX shell"}}},
		{"", Analysis{NeedsShell: true, Reasons: []string{"empty command"}}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			t.Parallel()
			got := Analyze(tt.line)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Analysis{}, "ParseError", "Commands")); diff != "" {
				t.Errorf("Analyze(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	got := Analyze(`A=1 exec node a.js && ./bin/run.sh --x "$Y" | tee log`).Commands
	want := [][]string{{"node", "a.js"}, {"./bin/run.sh", "--x", "<expanded>"}, {"tee", "log"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Commands (-want +got):\n%s", diff)
	}
	// The commands inside compound commands and command substitutions
	// run too: a step's classification reads every one.
	for line, want := range map[string][][]string{
		`A=$(sha256sum f | cut -d' ' -f1) && [ "$A" = x ]`:       {{"sha256sum", "f"}, {"cut", "-d ", "-f1"}, {"[", "<expanded>", "=", "x", "]"}},
		`if [ -f x ]; then ./setup.sh; else service x start; fi`: {{"[", "-f", "x", "]"}, {"./setup.sh"}, {"service", "x", "start"}},
		`curl -f "http://x:$(cat /port)/" && exit 0`:             {{"curl", "-f", "<expanded>"}, {"cat", "/port"}, {"exit", "0"}},
		`for f in $(ls /x); do rm "$f"; done`:                    {{"ls", "/x"}, {"rm", "<expanded>"}},
	} {
		if diff := cmp.Diff(want, Analyze(line).Commands); diff != "" {
			t.Errorf("Commands of %s (-want +got):\n%s", line, diff)
		}
	}
}

func TestParseInvocation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want *ScriptInvocation
	}{
		{[]string{"npm", "start"}, &ScriptInvocation{Runner: NPM, Script: "start"}},
		{[]string{"npm", "run", "serve", "--", "--port", "3"}, &ScriptInvocation{Runner: NPM, Script: "serve", Args: []string{"--port", "3"}}},
		{[]string{"npm", "--silent", "run-script", "x"}, &ScriptInvocation{Runner: NPM, Script: "x"}},
		{[]string{"/usr/local/bin/npm", "t"}, &ScriptInvocation{Runner: NPM, Script: "test"}},
		{[]string{"yarn", "start"}, &ScriptInvocation{Runner: Yarn, Script: "start"}},
		{[]string{"yarn", "run", "serve"}, &ScriptInvocation{Runner: Yarn, Script: "serve"}},
		{[]string{"pnpm", "start"}, &ScriptInvocation{Runner: PNPM, Script: "start"}},
		{[]string{"pnpm", "run", "start:prod"}, &ScriptInvocation{Runner: PNPM, Script: "start:prod"}},
		{[]string{"npm", "ci"}, nil},
		{[]string{"npm", "run"}, nil},
		{[]string{"yarn", "install"}, nil},
		{[]string{"pnpm", "exec", "x"}, nil},
		{[]string{"node", "start"}, nil},
		{[]string{"npm"}, nil},
	}
	for _, tt := range tests {
		got, ok := ParseInvocation(tt.argv)
		if (tt.want != nil) != ok {
			t.Errorf("ParseInvocation(%q) ok = %v", tt.argv, ok)
			continue
		}
		if ok {
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("ParseInvocation(%q) (-want +got):\n%s", tt.argv, diff)
			}
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"node a.js", "A=1 exec node x", "npm run a && b | c > d", "$(x) `y` ${z:-w}", "f() { x; }", "a\\ b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		a := Analyze(line)
		if !a.NeedsShell && len(a.Reasons) > 0 {
			t.Fatalf("no shell needed but reasons %v", a.Reasons)
		}
		if a.Removable && len(a.Argv) == 0 {
			t.Fatalf("removable without argv: %+v", a)
		}
	})
}
