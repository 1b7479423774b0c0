package npmscripts

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/probe/probetest"
)

func runOn(t *testing.T, files map[string]string) (*Facts, probe.Output) {
	t.Helper()
	out := probetest.Run(t, New(), probetest.Repo(t, files))
	return out.Facts.(*Facts), out
}

func warningIDs(out probe.Output) []string { return probetest.WarningIDs(out) }

func TestChains(t *testing.T) {
	t.Parallel()
	type want struct {
		Launcher    string
		Script      string
		Program     []string
		Direct      []string
		Env         []string
		Convertible bool
		Warnings    []string
	}
	tests := []struct {
		name  string
		files map[string]string
		want  want
	}{
		{
			name: "npm start with plain node script",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"npm\", \"start\"]\n",
				"package.json": `{"scripts": {"start": "node --require ./otel.js index.js"}}`,
			},
			want: want{Launcher: "npm", Script: "start", Program: []string{"npm", "start"},
				Direct: []string{"node", "--require", "./otel.js", "index.js"}, Convertible: true,
				Warnings: []string{WarnPackageManagerStart}},
		},
		{
			name: "tini runs the node image's own docker-entrypoint.sh, which execs npm",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nENTRYPOINT [\"/tini\", \"--\", \"/usr/local/bin/docker-entrypoint.sh\"]\nCMD [\"npm\", \"start\"]\n",
				"package.json": `{"scripts": {"start": "node index.js"}}`,
			},
			want: want{Launcher: "npm", Script: "start", Program: []string{"npm", "start"},
				Direct: []string{"node", "index.js"}, Convertible: true, Warnings: []string{WarnPackageManagerStart}},
		},
		{
			name: "a docker-entrypoint.sh of the repository's own is that script",
			files: map[string]string{
				"Dockerfile":           "FROM node:22\nCOPY docker-entrypoint.sh /usr/local/bin/\nENTRYPOINT [\"/tini\", \"--\", \"/usr/local/bin/docker-entrypoint.sh\"]\nCMD [\"npm\", \"start\"]\n",
				"docker-entrypoint.sh": "#!/bin/sh\nchown -R node /data\nexec \"$@\"\n",
				"package.json":         `{"scripts": {"start": "node index.js"}}`,
			},
			want: want{Launcher: "other", Program: []string{"/usr/local/bin/docker-entrypoint.sh", "npm", "start"},
				Direct: []string{"/usr/local/bin/docker-entrypoint.sh", "npm", "start"}, Convertible: true},
		},
		{
			name: "npm's own options are not the script's",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"npm\", \"start\", \"--silent\", \"--loglevel\", \"warn\"]\n",
				"package.json": `{"scripts": {"start": "node index.js"}}`,
			},
			want: want{Launcher: "npm", Script: "start", Program: []string{"npm", "start", "--silent", "--loglevel", "warn"},
				Direct: []string{"node", "index.js"}, Convertible: true, Warnings: []string{WarnPackageManagerStart}},
		},
		{
			name: "positional arguments and those after -- go to the script; an option npm does not know goes to its environment",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"npm\", \"run\", \"serve\", \"-s\", \"--port=3000\", \"api\", \"--\", \"--verbose\"]\n",
				"package.json": `{"scripts": {"serve": "node app.js"}}`,
			},
			want: want{Launcher: "npm", Script: "serve", Program: []string{"npm", "run", "serve", "-s", "--port=3000", "api", "--", "--verbose"},
				Direct: []string{"node", "app.js", "api", "--verbose"}, Env: []string{"npm_config_port=3000"}, Convertible: true,
				Warnings: []string{WarnPackageManagerStart}},
		},
		{
			name: "--ignore-scripts runs no hooks",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"npm\", \"start\", \"--ignore-scripts\"]\n",
				"package.json": `{"scripts": {"prestart": "node check.js", "start": "node server.js"}}`,
			},
			want: want{Launcher: "npm", Script: "start", Program: []string{"npm", "start", "--ignore-scripts"},
				Direct: []string{"node", "server.js"}, Convertible: true, Warnings: []string{WarnPackageManagerStart}},
		},
		{
			name: "--prefix runs another package's script",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"npm\", \"--prefix\", \"api\", \"start\"]\n",
				"package.json": `{"scripts": {"start": "node server.js"}}`,
			},
			want: want{Launcher: "npm", Script: "start", Program: []string{"npm", "--prefix", "api", "start"},
				Warnings: []string{WarnPackageManagerStart}},
		},
		{
			name: "chained script",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"npm\", \"start\"]\n",
				"package.json": "{\n\"scripts\": {\n\"start\": \"npm run migrate && node server.js\",\n\"migrate\": \"node migrate.js\"}}",
			},
			want: want{Launcher: "npm", Script: "start", Program: []string{"npm", "start"},
				Warnings: []string{WarnPackageManagerStart, WarnScriptNeedsShell}},
		},
		{
			name: "VAR=x prefix moves to ENV",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"npm\", \"run\", \"serve\"]\n",
				"package.json": `{"scripts": {"serve": "NODE_ENV=production node app.js"}}`,
			},
			want: want{Launcher: "npm", Script: "serve", Program: []string{"npm", "run", "serve"},
				Direct: []string{"node", "app.js"}, Env: []string{"NODE_ENV=production"}, Convertible: true,
				Warnings: []string{WarnPackageManagerStart}},
		},
		{
			name: "prestart hook blocks a silent rewrite",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"npm\", \"start\"]\n",
				"package.json": `{"scripts": {"prestart": "node check.js", "start": "node server.js"}}`,
			},
			want: want{Launcher: "npm", Script: "start", Program: []string{"npm", "start"},
				Warnings: []string{WarnPackageManagerStart, WarnLifecycleHooks}},
		},
		{
			name: "npm start without a start script runs server.js",
			files: map[string]string{
				"Dockerfile": "FROM node:22\nCMD [\"npm\", \"start\"]\n", "package.json": `{}`, "server.js": "",
			},
			want: want{Launcher: "npm", Script: "start", Program: []string{"npm", "start"},
				Direct: []string{"node", "server.js"}, Convertible: true, Warnings: []string{WarnPackageManagerStart}},
		},
		{
			name: "missing script",
			files: map[string]string{
				"Dockerfile": "FROM node:22\nCMD [\"yarn\", \"serve\"]\n", "package.json": `{}`,
			},
			want: want{Launcher: "yarn", Script: "serve", Program: []string{"yarn", "serve"},
				Warnings: []string{WarnPackageManagerStart, WarnMissingScript}},
		},
		{
			name:  "shell-form CMD of one command is removable",
			files: map[string]string{"Dockerfile": "FROM node:22\nCMD node server.js\n"},
			want:  want{Launcher: "node", Program: []string{"node", "server.js"}, Direct: []string{"node", "server.js"}, Convertible: true},
		},
		{
			name:  "shell-form CMD with operators",
			files: map[string]string{"Dockerfile": "FROM node:22\nCMD node migrate.js && node server.js\n"},
			want:  want{Launcher: "shell", Warnings: []string{WarnShellFormStart}},
		},
		{
			name:  "exec form node",
			files: map[string]string{"Dockerfile": "FROM node:22-slim\nCMD [\"node\", \"server.js\"]\n"},
			want:  want{Launcher: "node", Program: []string{"node", "server.js"}, Direct: []string{"node", "server.js"}, Convertible: true},
		},
		{
			name:  "distroless with node in CMD",
			files: map[string]string{"Dockerfile": "FROM gcr.io/distroless/nodejs22-debian13\nCMD [\"node\", \"app.js\"]\n"},
			want: want{Launcher: "node", Program: []string{"node", "node", "app.js"}, Direct: []string{"node", "node", "app.js"}, Convertible: true,
				Warnings: []string{WarnDistrolessNodeTwice}},
		},
		{
			name:  "distroless done right",
			files: map[string]string{"Dockerfile": "FROM gcr.io/distroless/nodejs22-debian13\nCMD [\"app.js\"]\n"},
			want:  want{Launcher: "node", Program: []string{"node", "app.js"}, Direct: []string{"node", "app.js"}, Convertible: true},
		},
		{
			name: "pnpm start ignores hooks",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nCMD [\"pnpm\", \"start\"]\n",
				"package.json": `{"scripts": {"prestart": "x", "start": "node index.js"}}`,
			},
			want: want{Launcher: "pnpm", Script: "start", Program: []string{"pnpm", "start"}, Direct: []string{"node", "index.js"}, Convertible: true,
				Warnings: []string{WarnPackageManagerStart}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			facts, out := runOn(t, tt.files)
			if len(facts.Chains) != 1 {
				t.Fatalf("chains = %+v", facts.Chains)
			}
			c := facts.Chains[0]
			got := want{c.Launcher, c.Script, c.Program, c.Direct, c.Env, c.Convertible, warningIDs(out)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chain (-want +got):\n%s", diff)
			}
			for _, w := range out.Warnings {
				for _, ev := range w.Evidence {
					if ev.File == "" || ev.Line < 1 {
						t.Errorf("warning %s has evidence without a file:line: %+v", w.ID, ev)
					}
				}
			}
		})
	}
}

func TestEvidencePointsAtScriptLine(t *testing.T) {
	t.Parallel()
	_, out := runOn(t, map[string]string{
		"Dockerfile":   "FROM node:22\nWORKDIR /app\nCMD [\"npm\", \"start\"]\n",
		"package.json": "{\n  \"name\": \"x\",\n  \"scripts\": {\n    \"start\": \"node a.js | tee log\"\n  }\n}\n",
	})
	got := map[string]probe.Evidence{}
	for _, w := range out.Warnings {
		got[w.ID] = w.Evidence[0]
	}
	want := map[string]probe.Evidence{
		WarnPackageManagerStart: {File: "Dockerfile", Line: 3},
		WarnScriptNeedsShell:    {File: "package.json", Line: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
}

func TestUnknownBaseLowersConfidence(t *testing.T) {
	t.Parallel()
	_, out := runOn(t, map[string]string{"Dockerfile": "FROM mycorp/base:1\nRUN true\n"})
	if out.Confidence != probe.Medium || out.Reason != ReasonUnknownBase {
		t.Errorf("confidence %s/%s, want medium/%s", out.Confidence, out.Reason, ReasonUnknownBase)
	}
}
