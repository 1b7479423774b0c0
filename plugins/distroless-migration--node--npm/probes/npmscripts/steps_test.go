package npmscripts

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSteps: the start comes down to the commands that run, in order,
// each with its own variables and folder, through package managers, &&
// lines, hooks, npm-run-all and cross-env; a chain that converts has its
// one command as its one step.
func TestSteps(t *testing.T) {
	t.Parallel()
	type step struct {
		Argv []string
		Env  []string
		Dir  string
	}
	tests := []struct {
		name       string
		dockerfile string
		pkg        string
		more       map[string]string
		want       []step
		parallel   bool
		why        string // a prefix of StepsWhy
		// direct is Direct when the steps are one command.
		direct []string
	}{
		{name: "cross-env is its variables and the command", dockerfile: `CMD ["npm", "start"]`,
			pkg:    `{"scripts": {"start": "cross-env NODE_ENV=production PORT=3000 node server.js"}}`,
			want:   []step{{Argv: []string{"node", "server.js"}, Env: []string{"NODE_ENV=production", "PORT=3000"}}},
			direct: []string{"node", "server.js"}},
		{name: "an && line in CMD runs each script", dockerfile: `CMD npm run migrate && npm start`,
			pkg:  `{"scripts": {"migrate": "node migrate.js", "start": "node server.js"}}`,
			want: []step{{Argv: []string{"node", "migrate.js"}}, {Argv: []string{"node", "server.js"}}}},
		{name: "a script's && line of scripts, with hooks and per-command variables", dockerfile: `CMD ["yarn", "start"]`,
			pkg: `{"scripts": {"start": "npm run build && A=1 npm run server", "build": "node build.js", "preserver": "node check.js", "server": "node src/index.js"}}`,
			want: []step{{Argv: []string{"node", "build.js"}}, {Argv: []string{"node", "check.js"}, Env: []string{"A=1"}},
				{Argv: []string{"node", "src/index.js"}, Env: []string{"A=1"}}}},
		{name: "run-script-os runs the script tagged for Linux", dockerfile: `CMD ["pnpm", "start"]`,
			pkg:  `{"scripts": {"start": "run-script-os", "start:windows": "cd packages/server/bin && run start", "start:darwin:linux": "cd packages/server/bin && ./run start", "start:default": "node other.js"}}`,
			more: map[string]string{"packages/server/bin/run": "#!/usr/bin/env node\nrequire('../dist/index.js')\n"},
			want: []step{{Argv: []string{"./run", "start"}, Dir: "packages/server/bin"}}},
		{name: "run-script-os falls back to the default script", dockerfile: `CMD ["npm", "start"]`,
			pkg:  `{"scripts": {"start": "run-os", "start:win32": "server.exe", "start:default": "node server.js"}}`,
			want: []step{{Argv: []string{"node", "server.js"}}}},
		{name: "run-script-os with no script for Linux", dockerfile: `CMD ["npm", "start"]`,
			pkg:  `{"scripts": {"start": "run-script-os", "start:win32": "server.exe"}}`,
			want: []step{{Argv: []string{"run-script-os"}}}, // the program the start runs, not followed
			why:  "run-script-os: no start:linux"},
		{name: "npm-run-all runs each script through npm run", dockerfile: `CMD ["npm", "run", "start-docker"]`,
			pkg:  `{"scripts": {"start-docker": "npm-run-all check-db start-server", "check-db": "node scripts/check-db.js", "start-server": "cross-env NODE_ENV=production node server.js"}}`,
			want: []step{{Argv: []string{"node", "scripts/check-db.js"}}, {Argv: []string{"node", "server.js"}, Env: []string{"NODE_ENV=production"}}}},
		{name: "npm-run-all runs the scripts with the package manager that runs it: pnpm runs no hooks", dockerfile: `CMD ["pnpm", "start"]`,
			pkg:  `{"scripts": {"start": "run-s migrate serve", "premigrate": "node backup.js", "migrate": "node migrate.js", "serve": "node server.js"}}`,
			want: []step{{Argv: []string{"node", "migrate.js"}}, {Argv: []string{"node", "server.js"}}}},
		{name: "run-p runs at the same time", dockerfile: `CMD ["npm", "start"]`,
			pkg:      `{"scripts": {"start": "run-p api worker", "api": "node api.js", "worker": "node worker.js"}}`,
			want:     []step{{Argv: []string{"node", "api.js"}}, {Argv: []string{"node", "worker.js"}}},
			parallel: true},
		{name: "run-s of one script is that script", dockerfile: `CMD ["npm", "start"]`,
			pkg:    `{"scripts": {"start": "run-s serve", "serve": "node server.js"}}`,
			want:   []step{{Argv: []string{"node", "server.js"}}},
			direct: []string{"node", "server.js"}},
		{name: "cd in a line moves the later commands", dockerfile: `CMD ["npm", "start"]`,
			pkg:  `{"scripts": {"start": "node migrate.js && cd api && node server.js"}}`,
			more: map[string]string{"api/server.js": ""},
			want: []step{{Argv: []string{"node", "migrate.js"}}, {Argv: []string{"node", "server.js"}, Dir: "api"}}},
		{name: "npm's arguments follow the line's last command", dockerfile: `CMD ["npm", "start", "--", "--port", "80"]`,
			pkg:  `{"scripts": {"start": "node migrate.js && node server.js"}}`,
			want: []step{{Argv: []string{"node", "migrate.js"}}, {Argv: []string{"node", "server.js", "--port", "80"}}}},
		{name: "an entrypoint script that only sets defaults is the command it execs", dockerfile: "ENTRYPOINT [\"/app/bin/start.sh\"]\nCMD [\"--port\", \"80\"]",
			more: map[string]string{"bin/start.sh": "#!/bin/sh\nexport NODE_ENV=\"${NODE_ENV:-production}\"\nexec node /app/server.js \"$@\"\n"},
			want: []step{{Argv: []string{"node", "/app/server.js", "--port", "80"}, Env: []string{"NODE_ENV=production"}}}},
		{name: "bash runs the script; its exec \"$@\" runs CMD", dockerfile: "ENTRYPOINT [\"bash\", \"/app/entry\"]\nCMD [\"npm\", \"start\"]",
			pkg:  `{"scripts": {"start": "node server.js"}}`,
			more: map[string]string{"entry": "set -e\nexec \"$@\"\n"},
			want: []step{{Argv: []string{"node", "server.js"}}}},
		{name: "sh with options runs the script, with its arguments", dockerfile: `CMD ["npm", "start"]`,
			pkg:  `{"scripts": {"start": "sh -e bin/start.sh --port 80"}}`,
			more: map[string]string{"bin/start.sh": "export NODE_ENV=production\nexec node server.js \"$@\"\n"},
			want: []step{{Argv: []string{"node", "server.js", "--port", "80"}, Env: []string{"NODE_ENV=production"}}}},
		{name: "sh with options before -c runs the line", dockerfile: `CMD ["bash", "-ec", "node migrate.js && node server.js"]`,
			want: []step{{Argv: []string{"node", "migrate.js"}}, {Argv: []string{"node", "server.js"}}}},
		{name: "sh -c with positional arguments is not read as the line alone", dockerfile: `CMD ["sh", "-c", "node \"$1\"", "sh", "server.js"]`,
			want: []step{{Argv: []string{"sh", "-c", "node \"$1\"", "sh", "server.js"}}}},
		{name: "a script that does more is not followed", dockerfile: "ENTRYPOINT [\"/app/entry.sh\"]\nCMD [\"node\", \"server.js\"]",
			more: map[string]string{"entry.sh": "#!/bin/bash\ngit pull\nexec \"$@\"\n"},
			want: []step{{Argv: []string{"/app/entry.sh", "node", "server.js"}}},
			why:  "entry.sh is a shell script that does more than set defaults and exec a command ("},
		{name: "|| is not a list of steps", dockerfile: `CMD ["npm", "start"]`,
			pkg: `{"scripts": {"start": "node migrate.js || node server.js"}}`,
			why: `script "start" needs a shell: operator ||`},
		{name: "a missing script", dockerfile: `CMD ["npm", "start"]`,
			pkg: `{"scripts": {"start": "npm run nope && node server.js"}}`,
			why: `script "nope" is not defined`},
		{name: "a pattern of npm-run-all", dockerfile: `CMD ["npm", "start"]`,
			pkg: `{"scripts": {"start": "npm-run-all 'start:*'", "start:a": "node a.js"}}`,
			why: `npm-run-all: the pattern or arguments "start:*"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.pkg == "" {
				tt.pkg = `{"name": "svc"}`
			}
			files := map[string]string{"Dockerfile": "FROM node:22\nWORKDIR /app\nCOPY . .\n" + tt.dockerfile + "\n", "package.json": tt.pkg}
			for k, v := range tt.more {
				files[k] = v
			}
			facts, _ := runOn(t, files)
			c := facts.Chains[0]
			var got []step
			for _, s := range c.Steps {
				got = append(got, step{Argv: s.Argv, Env: s.Env, Dir: s.Dir})
			}
			if d := cmp.Diff(tt.want, got); d != "" || c.Parallel != tt.parallel || !strings.HasPrefix(c.StepsWhy, tt.why) || (tt.why == "") != (c.StepsWhy == "") {
				t.Errorf("steps (-want +got):\n%s\nparallel %v (want %v), why %q (want %q)", d, c.Parallel, tt.parallel, c.StepsWhy, tt.why)
			}
			if tt.direct != nil && (!slices.Equal(c.Direct, tt.direct) || !c.Convertible || !slices.Equal(c.Env, c.Steps[0].Env)) {
				t.Errorf("Direct %q, Env %q, convertible %v; want the one step %q, %q", c.Direct, c.Env, c.Convertible, tt.direct, c.Steps[0].Env)
			}
			if c.Convertible && (len(c.Steps) != 1 || !slices.Equal(c.Steps[0].Argv, c.Direct)) && c.Steps[0].Via == "" {
				t.Errorf("the chain converts to %q, but its steps are %v", c.Direct, c.Steps)
			}
		})
	}
}

// TestHookGraph: a pre hook that needs a shell leaves the start without
// steps, but the module graph still starts from what runs node: the
// hook's node commands, then the script's own steps. An unknown command
// in the hook, or a script line that needs a shell too, leaves no graph.
func TestHookGraph(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, prestart, start string
		want                  [][]string
	}{
		{"the hook runs no code", "test -f app/config.js || cp app/config.template.js app/config.js", "node app/server.js",
			[][]string{{"node", "app/server.js"}}},
		{"the hook runs node", "node migrate.js || exit 1", "node server.js",
			[][]string{{"node", "migrate.js"}, {"node", "server.js"}}},
		{"the hook runs what it reads", "$(cat cmd) || true", "node server.js", nil},
		{"the script needs a shell too", "test -f c.js || cp t.js c.js", "node a.js || node b.js", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pj, err := json.Marshal(map[string]any{"scripts": map[string]string{"prestart": tc.prestart, "start": tc.start}})
			if err != nil {
				t.Fatal(err)
			}
			facts, _ := runOn(t, map[string]string{"Dockerfile": "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"npm\", \"start\"]\n", "package.json": string(pj)})
			c := facts.Chains[0]
			if !strings.HasPrefix(c.StepsWhy, `script "prestart" needs a shell`) {
				t.Errorf("why %q, want the prestart's shell", c.StepsWhy)
			}
			var got [][]string
			for _, s := range c.GraphSteps {
				got = append(got, s.Argv)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("graph steps (-want +got):\n%s", d)
			}
		})
	}
}
