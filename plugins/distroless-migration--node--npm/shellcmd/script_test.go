package shellcmd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAnalyzeScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		src    string
		want   Script
		reason string // a word of the reason when not DefaultsOnly
	}{
		{"defaults then exec args", "#!/bin/sh\nset -e\n# defaults\nexport PORT=${PORT:-3000}\nNODE_ENV=\"production\"\nexport NODE_ENV\nexec \"$@\"\n",
			Script{DefaultsOnly: true, Env: []string{"PORT=3000", "NODE_ENV=production"}, Exec: []string{`"$@"`}, ExecLine: 7, Lines: []int{2, 4, 5, 6, 7}}, ""},
		{"exec node", "#!/bin/sh\nexport LOG_LEVEL=info\nexec node server.js\n",
			Script{DefaultsOnly: true, Env: []string{"LOG_LEVEL=info"}, Exec: []string{"node", "server.js"}, ExecLine: 3, Lines: []int{2, 3}, Programs: []string{"node"}}, ""},
		{"exec node with the arguments", "#!/bin/sh\nexport PORT=\"${PORT:-3000}\"\nexec node /app/app.js \"$@\"\n",
			Script{DefaultsOnly: true, Env: []string{"PORT=3000"}, Exec: []string{"node", "/app/app.js", `"$@"`}, ExecLine: 3, Lines: []int{2, 3}, Programs: []string{"node"}}, ""},
		{"secret files", "#!/bin/sh\nif [ -f \"$DB_PASSWORD_FILE\" ]; then\n  export DB_PASSWORD=$(cat \"$DB_PASSWORD_FILE\")\nfi\nexec \"$@\"\n", Script{}, "if"},
		{"migration first", "#!/bin/sh\nnpx prisma migrate deploy\nexec node dist/main.js\n", Script{}, "runs npx"},
		{"trap", "#!/bin/bash\ntrap 'kill $PID' TERM\nnode app.js &\nPID=$!\nwait $PID\n", Script{}, "background"},
		{"computed default", "#!/bin/sh\nexport URL=${HOST}:8080\nexec \"$@\"\n", Script{}, "computed"},
		{"no exec", "#!/bin/sh\nexport A=1\n", Script{}, "does not end"},
		{"set -- rewrites the arguments", "#!/bin/sh\nset -- /bin/sh -c \"node m.js && node s.js\"\nexec \"$@\"\n", Script{}, "runs set"},
		{"exec with options", "#!/bin/sh\nexec -a app node s.js\n", Script{}, "runs exec"},
		// A variable set to a literal above is its value where it is a word.
		{"exec through a variable", "#!/bin/sh\nGOSU=\"gosu app\"\nexec $GOSU node s.js \"$@\"\n",
			Script{DefaultsOnly: true, Env: []string{"GOSU=gosu app"}, Exec: []string{"gosu", "app", "node", "s.js", `"$@"`}, ExecLine: 3, Lines: []int{2, 3},
				Programs: []string{"gosu", "node"}, Wrappers: []Wrapped{{Program: "gosu", Line: 3}}}, ""},
		{"an empty variable is no word", "#!/bin/sh\nRUNAS=\"\"\nexec ${RUNAS} \"$@\"\n",
			Script{DefaultsOnly: true, Env: []string{"RUNAS="}, Exec: []string{`"$@"`}, ExecLine: 3, Lines: []int{2, 3}}, ""},
		{"a variable from the environment", "#!/bin/sh\nexec $GOSU \"$@\"\n", Script{}, "an expanded word"},
		{"a default is not a known value", "#!/bin/sh\nexport RUN=${RUN:-gosu}\nexec $RUN app \"$@\"\n", Script{}, "an expanded word"},
	}
	// The programs a script runs, wherever it runs them.
	if diff := cmp.Diff([]string{"cat", "nc", "sleep", "wget", "node"}, AnalyzeScript("#!/bin/sh\nset -e\nif [ -f \"$F\" ]; then export A=$(cat \"$F\"); fi\nuntil nc -z db 5432; do sleep 1; done\nwget -qO /tmp/c http://config/\nexec node s.js\n").Programs); diff != "" {
		t.Errorf("programs (-want +got):\n%s", diff)
	}
	// A variable set in any branch: each value it may have (hedgedoc's
	// entrypoint), and the program an init or user wrapper runs.
	hedgedoc := AnalyzeScript("#!/bin/sh\nUID=\"$(id -u)\"\n[ \"$UID\" -eq 0 ] && GOSU=\"gosu hedgedoc\" || GOSU=\"\"\nsleep 3\nexec $GOSU \"$@\"\n")
	if diff := cmp.Diff([]string{"id", "sleep", "gosu"}, hedgedoc.Programs); diff != "" {
		t.Errorf("programs through a variable (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Wrapped{{Program: "gosu", Line: 5}}, hedgedoc.Wrappers); diff != "" {
		t.Errorf("wrappers (-want +got):\n%s", diff)
	}
	// The lines that do more than set defaults, for evidence.
	if diff := cmp.Diff([]int{2, 3, 4, 5}, hedgedoc.ReasonLines); diff != "" {
		t.Errorf("reason lines (-want +got):\n%s", diff)
	}
	wrapped := AnalyzeScript("#!/bin/sh\nif [ -n \"$X\" ]; then exec tini -- pm2-runtime app.js; fi\nexec su-exec node:node node s.js\n")
	if diff := cmp.Diff([]string{"tini", "pm2-runtime", "su-exec", "node"}, wrapped.Programs); diff != "" {
		t.Errorf("programs of wrappers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Wrapped{{Program: "tini", Line: 2}, {Program: "su-exec", Line: 3}}, wrapped.Wrappers); diff != "" {
		t.Errorf("wrappers (-want +got):\n%s", diff)
	}
	for _, tt := range tests {
		got := AnalyzeScript(tt.src)
		if tt.reason == "" {
			// Runs have a test of their own (TestScriptRuns).
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Script{}, "Runs")); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.name, diff)
			}
			continue
		}
		if got.DefaultsOnly || !strings.Contains(strings.Join(got.Reasons, "; "), tt.reason) {
			t.Errorf("%s: %+v, want not defaults-only with %q", tt.name, got, tt.reason)
		}
	}
}

// TestScriptRuns: the commands a script runs, past wrappers, with the
// builtins that run other code kept and the others left out.
func TestScriptRuns(t *testing.T) {
	t.Parallel()
	src := "#!/bin/sh\nset -ex\necho \"Running migrations\"\nnpx prisma migrate deploy\n" +
		"if [ -n \"$SEED\" ]; then npx prisma db seed; fi\n. ./env.sh\n$RUNNER x\nexec gosu app node main \"$@\"\n"
	want := []ScriptRun{
		{Argv: []string{"npx", "prisma", "migrate", "deploy"}, Line: 4},
		{Argv: []string{"npx", "prisma", "db", "seed"}, Line: 5},
		{Argv: []string{".", "./env.sh"}, Line: 6},
		{Argv: []string{"<expanded>"}, Line: 7},
		{Argv: []string{"node", "main", ScriptArgs}, Line: 8},
	}
	if diff := cmp.Diff(want, AnalyzeScript(src).Runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	// node's options in a variable before the script it runs (node-red's
	// entrypoint) are left out, so the script is known; a variable that
	// may be the script itself, or that follows it, still ends the words.
	src = "#!/bin/bash\n/usr/local/bin/node $NODE_OPTIONS app.js \"$@\" &\nexec node \"$OPTS\" $MORE dist/main.mjs --port 3\n" +
		"node $SCRIPT \"$@\"\nnode server.js $FLAGS\nkill $PID\n"
	want = []ScriptRun{
		{Argv: []string{"/usr/local/bin/node", "app.js", ScriptArgs}, Line: 2},
		{Argv: []string{"node", "dist/main.mjs", "--port", "3"}, Line: 3},
		{Argv: []string{"node", "<expanded>"}, Line: 4},
		{Argv: []string{"node", "server.js", "<expanded>"}, Line: 5},
		{Argv: []string{"kill", "<expanded>"}, Line: 6},
	}
	if diff := cmp.Diff(want, AnalyzeScript(src).Runs); diff != "" {
		t.Errorf("node options runs (-want +got):\n%s", diff)
	}
	// A script that hands over to its arguments ("$@"), itself or
	// through a user wrapper whose user is not known (pingvin-share's
	// create-user.sh), runs them: ScriptArgs. Another variable is not.
	src = "#!/bin/sh\n[ \"$(id -u)\" -ne 0 ] && exec \"$@\"\nadduser -u \"$PUID\" app\nexec su-exec \"$PUID:$PGID\" \"$@\"\nexec \"$CMD\"\n"
	want = []ScriptRun{
		{Argv: []string{"id", "-u"}, Line: 2},
		{Argv: []string{ScriptArgs}, Line: 2},
		{Argv: []string{"adduser", "-u", "<expanded>"}, Line: 3},
		{Argv: []string{ScriptArgs}, Line: 4},
		{Argv: []string{"<expanded>"}, Line: 5},
	}
	if diff := cmp.Diff(want, AnalyzeScript(src).Runs); diff != "" {
		t.Errorf("runs of a script that execs its arguments (-want +got):\n%s", diff)
	}
}
