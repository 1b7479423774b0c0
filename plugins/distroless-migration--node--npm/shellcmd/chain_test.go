package shellcmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAndList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want []Command
		why  string
	}{
		{line: "node server.js", want: []Command{{Argv: []string{"node", "server.js"}}}},
		{line: "npm run migrate && npm start", want: []Command{{Argv: []string{"npm", "run", "migrate"}}, {Argv: []string{"npm", "start"}}}},
		// Each command keeps its own assignments.
		{line: "A=1 node a.js && B='x y' exec node b.js", want: []Command{{Env: []string{"A=1"}, Argv: []string{"node", "a.js"}}, {Env: []string{"B=x y"}, Argv: []string{"node", "b.js"}}}},
		{line: "cd api && node .", want: []Command{{Argv: []string{"cd", "api"}}, {Argv: []string{"node", "."}}}},
		{line: "node a.js || node b.js", why: "operator ||"},
		{line: "node a.js && node b.js | tee x", why: "operator |"},
		{line: "node a.js; node b.js", why: "command list (; or newline)"},
		{line: "node a.js > log", why: "redirection"},
		{line: "node $APP", why: "expansion"},
		{line: "A=$B node a.js", why: "expansion in an assignment"},
		{line: "node dist/*.js", why: "glob pattern"},
		{line: "node ~/a.js", why: "tilde expansion"},
		{line: "(node a.js)", why: "a shell construct other than a simple command"},
		{line: "A=1", why: "assignment without a command"},
		{line: "node 'x", why: "not valid POSIX shell"},
	}
	for _, tt := range tests {
		got, why := AndList(tt.line)
		if !cmp.Equal(got, tt.want) || why != tt.why {
			t.Errorf("AndList(%q) = %+v, %q; want %+v, %q", tt.line, got, why, tt.want, tt.why)
		}
	}
}

func TestEnvPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv     []string
		env, cmd []string
		ok       bool
	}{
		{[]string{"cross-env", "NODE_ENV=production", "PORT=3000", "node", "server.js"}, []string{"NODE_ENV=production", "PORT=3000"}, []string{"node", "server.js"}, true},
		{[]string{"node_modules/.bin/cross-env", "--", "A=b=c", "node", "x.js"}, []string{"A=b=c"}, []string{"node", "x.js"}, true},
		{[]string{"env", "A=1", "node", "x.js"}, []string{"A=1"}, []string{"node", "x.js"}, true},
		{[]string{"cross-env", "node", "x.js"}, nil, []string{"node", "x.js"}, true},
		// env -i empties the environment; -u unsets: not kept by adding.
		{[]string{"env", "-i", "A=1", "node", "x.js"}, nil, nil, false},
		{[]string{"env", "-", "node", "x.js"}, nil, nil, false},
		{[]string{"cross-env", "A=1"}, nil, nil, false},
		{[]string{"cross-env-shell", "A=1", "node x.js"}, nil, nil, false},
		{[]string{"node", "x.js"}, nil, nil, false},
	}
	for _, tt := range tests {
		env, cmd, ok := EnvPrefix(tt.argv)
		if !cmp.Equal(env, tt.env) || !cmp.Equal(cmd, tt.cmd) || ok != tt.ok {
			t.Errorf("EnvPrefix(%q) = %q, %q, %v; want %q, %q, %v", tt.argv, env, cmd, ok, tt.env, tt.cmd, tt.ok)
		}
	}
}

func TestRunAll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv     []string
		names    []string
		parallel bool
		why      string
		ok       bool
	}{
		{argv: []string{"npm-run-all", "check-db", "start-server"}, names: []string{"check-db", "start-server"}, ok: true},
		{argv: []string{"run-s", "-l", "a", "b"}, names: []string{"a", "b"}, ok: true},
		{argv: []string{"run-p", "a", "b"}, names: []string{"a", "b"}, parallel: true, ok: true},
		{argv: []string{"npm-run-all", "-s", "a", "-p", "b", "c"}, names: []string{"a", "b", "c"}, parallel: true, ok: true},
		{argv: []string{"npm-run-all", "build:*"}, why: `the pattern or arguments "build:*"`, ok: true},
		{argv: []string{"run-s", "--continue-on-error", "a"}, why: "option --continue-on-error", ok: true},
		{argv: []string{"run-s", "a", "--", "x"}, why: "arguments passed to the scripts (--)", ok: true},
		{argv: []string{"run-s"}, why: "no script is named", ok: true},
		{argv: []string{"concurrently", "a"}},
	}
	for _, tt := range tests {
		names, parallel, why, ok := RunAll(tt.argv)
		if !cmp.Equal(names, tt.names) || parallel != tt.parallel || why != tt.why || ok != tt.ok {
			t.Errorf("RunAll(%q) = %q, %v, %q, %v; want %q, %v, %q, %v", tt.argv, names, parallel, why, ok, tt.names, tt.parallel, tt.why, tt.ok)
		}
	}
}
