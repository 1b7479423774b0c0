package entrypoints

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
)

type file struct {
	body    string
	symlink string
	mode    os.FileMode
}

func runOn(t *testing.T, files map[string]file) (*Facts, probe.Output) {
	t.Helper()
	dir := t.TempDir()
	for name, f := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if f.symlink != "" {
			if err := os.Symlink(f.symlink, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(f.body), mode); err != nil {
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
		t.Fatal(err)
	}
	return out.Facts.(*Facts), out
}

type brief struct {
	Command, Origin, RepoPath string
	Kind                      Kind
	InterpreterKind           string
	NodeArgv                  []string
	Line                      int
}

func briefs(f *Facts) []brief {
	var bs []brief
	for _, e := range f.Executables {
		bs = append(bs, brief{e.Command, e.Origin, e.RepoPath, e.Kind, e.InterpreterKind, e.NodeArgv, e.Line})
	}
	return bs
}

func TestExecutables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]file
		want  []brief
		warns []string
	}{
		{
			name: "bash docker-entrypoint.sh copied into the image",
			files: map[string]file{
				"Dockerfile":           {body: "FROM node:22-slim\nWORKDIR /app\nCOPY docker-entrypoint.sh /usr/local/bin/\nCOPY . .\nENTRYPOINT [\"docker-entrypoint.sh\"]\nCMD [\"node\", \"server.js\"]\n"},
				"docker-entrypoint.sh": {body: "#!/bin/bash\nset -e\nexec \"$@\"\n", mode: 0o755},
			},
			want:  []brief{{"docker-entrypoint.sh", "entrypoint", "docker-entrypoint.sh", KindScript, "shell", nil, 5}},
			warns: []string{WarnShellShebang},
		},
		{
			name: "base image entrypoint",
			files: map[string]file{
				"Dockerfile": {body: "FROM node:22\nCMD [\"node\", \"server.js\"]\n"},
			},
			want:  []brief{{"docker-entrypoint.sh", "entrypoint", "", KindBaseImage, "shell", nil, 1}},
			warns: []string{WarnBaseEntry},
		},
		{
			name: "pnpm .bin shim with #!/bin/sh",
			files: map[string]file{
				"Dockerfile":                      {body: "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"node_modules/.bin/serve\"]\n"},
				"node_modules/.bin/serve":         {body: "#!/bin/sh\nbasedir=$(dirname \"$0\")\nexec node \"$basedir/../serve/bin/serve.js\" \"$@\"\n", mode: 0o755},
				"node_modules/serve/package.json": {body: `{"name":"serve","bin":{"serve":"bin/serve.js"}}`},
				"node_modules/serve/bin/serve.js": {body: "#!/usr/bin/env node\n"},
			},
			// On distroless, CMD's argv[0] is an argument of node: node is
			// asked to run a shell script.
			want: []brief{{"node_modules/.bin/serve", "node_script", "node_modules/.bin/serve", KindScript, "shell",
				[]string{"node", "node_modules/serve/bin/serve.js"}, 4}},
			warns: []string{WarnShellShebang},
		},
		{
			name: "npm script runs a pnpm shim",
			files: map[string]file{
				"Dockerfile":                      {body: "FROM node:22\nENTRYPOINT []\nCMD [\"npm\", \"start\"]\n"},
				"package.json":                    {body: "{\n\"scripts\": {\n\"start\": \"serve -l 8080\"}}"},
				"node_modules/.bin/serve":         {body: "#!/bin/sh\nexec node \"$basedir/../serve/bin/serve.js\" \"$@\"\n", mode: 0o755},
				"node_modules/serve/package.json": {body: `{"name":"serve","bin":{"serve":"bin/serve.js"}}`},
			},
			want:  []brief{{"serve", "bin_shim", "node_modules/.bin/serve", KindScript, "shell", []string{"node", "node_modules/serve/bin/serve.js"}, 3}},
			warns: []string{WarnShellShim},
		},
		{
			name: "npm .bin symlink to a JS file with env shebang",
			files: map[string]file{
				"Dockerfile":                         {body: "FROM node:22\nENTRYPOINT []\nCMD [\"npm\", \"start\"]\n"},
				"package.json":                       {body: `{"scripts": {"start": "next start"}}`},
				"node_modules/.bin/next":             {symlink: "../next/dist/bin/next.js"},
				"node_modules/next/dist/bin/next.js": {body: "#!/usr/bin/env node\nrequire('x')\n"},
			},
			want:  []brief{{"next", "bin_shim", "node_modules/.bin/next", KindSymlinkToJS, "env", []string{"node", "node_modules/next/dist/bin/next.js"}, 1}},
			warns: []string{WarnEnvShebang},
		},
		{
			name: "shell-form healthcheck script",
			files: map[string]file{
				"Dockerfile":     {body: "FROM node:22\nENTRYPOINT [\"node\"]\nCOPY healthcheck.sh /hc.sh\nHEALTHCHECK CMD /hc.sh || exit 1\n"},
				"healthcheck.sh": {body: "#!/bin/sh\nwget -q localhost\n"},
			},
			want:  []brief{{"/hc.sh", "healthcheck", "healthcheck.sh", KindScript, "shell", nil, 4}},
			warns: []string{WarnShellShebang},
		},
		{
			// A script the start command runs through a shell is that
			// shell's script, with or without a shebang.
			name: "ENTRYPOINT runs a script through bash",
			files: map[string]file{
				"Dockerfile":   {body: "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nENTRYPOINT [\"/bin/bash\", \"/app/entry.sh\"]\nCMD [\"node\", \"server.js\"]\n"},
				"entry.sh":     {body: "git pull\nexec \"$@\"\n"},
				"package.json": {body: `{"name":"x"}`},
			},
			want:  []brief{{"/app/entry.sh", "entrypoint", "entry.sh", KindScript, "shell", nil, 4}},
			warns: []string{WarnShellShebang},
		},
		{
			name: "CMD runs a script through sh with options",
			files: map[string]file{
				"Dockerfile": {body: "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD [\"sh\", \"-e\", \"start.sh\", \"--port\", \"80\"]\n"},
				"start.sh":   {body: "#!/bin/sh\nexec node server.js \"$@\"\n"},
			},
			want: []brief{{"docker-entrypoint.sh", "entrypoint", "", KindBaseImage, "shell", nil, 1},
				{"start.sh", "cmd", "start.sh", KindScript, "shell", nil, 4}},
			warns: []string{WarnBaseEntry, WarnShellShebang},
		},
		{
			name: "an npm script runs a script through sh",
			files: map[string]file{
				"Dockerfile":       {body: "FROM node:22\nENTRYPOINT []\nCMD [\"npm\", \"start\"]\n"},
				"package.json":     {body: "{\n\"scripts\": {\n\"start\": \"sh ./scripts/start.sh\"}}"},
				"scripts/start.sh": {body: "node server.js\n"},
			},
			want:  []brief{{"./scripts/start.sh", "script:start", "scripts/start.sh", KindScript, "shell", nil, 3}},
			warns: []string{WarnShellShebang},
		},
		{
			name: "ENTRYPOINT sh -c runs a setup script, then the CMD",
			files: map[string]file{
				"Dockerfile":   {body: "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nENTRYPOINT [\"/bin/sh\", \"-c\", \"./setup.sh && exec \\\"$0\\\" \\\"$@\\\"\"]\nCMD [\"node\", \"server.js\"]\n"},
				"setup.sh":     {body: "#!/bin/sh\nmkdir -p /app/data\n"},
				"package.json": {body: `{"name":"x"}`},
			},
			want:  []brief{{"./setup.sh", "entrypoint", "setup.sh", KindScript, "shell", nil, 4}},
			warns: []string{WarnShellShebang},
		},
		{
			name: "entrypoint not in the repo",
			files: map[string]file{
				"Dockerfile": {body: "FROM node:22\nENTRYPOINT [\"/opt/start\"]\n"},
			},
			want:  []brief{{"/opt/start", "entrypoint", "", KindNotFound, "", nil, 2}},
			warns: []string{WarnNotFound},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			facts, out := runOn(t, tt.files)
			if diff := cmp.Diff(tt.want, briefs(facts)); diff != "" {
				t.Errorf("executables (-want +got):\n%s", diff)
			}
			var ids []string
			for _, w := range out.Warnings {
				ids = append(ids, w.ID)
			}
			if diff := cmp.Diff(tt.warns, ids); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNestedScripts: the programs of the shell scripts an entrypoint
// script runs by a path count as the entrypoint's, through COPY and a
// few levels deep, once each; a node script it runs is not read as shell.
func TestNestedScripts(t *testing.T) {
	t.Parallel()
	facts, _ := runOn(t, map[string]file{
		"Dockerfile":        {body: "FROM node:22-slim\nWORKDIR /srv\nCOPY . .\nCOPY tools/ /opt/tools/\nENTRYPOINT [\"/bin/bash\", \"/srv/entry.sh\"]\nCMD [\"node\", \"server.js\"]\n"},
		"entry.sh":          {body: "if [ \"$X\" = yes ]; then ./install-extras.sh; fi\n/opt/tools/fetch.sh\n./gen.js\nexec \"$@\"\n"},
		"install-extras.sh": {body: "#!/usr/bin/env bash\ncommand -v rdfind && rdfind -makehardlinks true /srv\nunzip -q x.zip\n./entry.sh\n"},
		"tools/fetch.sh":    {body: "#!/bin/sh\ngit clone \"$R\" /srv/data\n"},
		"gen.js":            {body: "#!/usr/bin/env node\nrequire('child_process')\n"},
		"package.json":      {body: `{"name":"x"}`},
	})
	if len(facts.Executables) != 1 || facts.Executables[0].Script == nil {
		t.Fatalf("executables: %+v, want the entrypoint script read", facts.Executables)
	}
	want := []string{"./install-extras.sh", "/opt/tools/fetch.sh", "./gen.js", "rdfind", "unzip", "./entry.sh", "git"}
	if diff := cmp.Diff(want, facts.Executables[0].Script.Programs); diff != "" {
		t.Errorf("programs (-want +got):\n%s", diff)
	}
}

// TestBuildContextFolder: a Dockerfile in a folder of its own, built with
// that folder as its context (node-red-docker's docker-custom), COPYs its
// entrypoint from there; the script is found under the context, not at
// the same path from the repository root.
func TestBuildContextFolder(t *testing.T) {
	t.Parallel()
	facts, _ := runOn(t, map[string]file{
		"docker-custom/Dockerfile":            {body: "FROM node:22-slim AS base\nWORKDIR /usr/src/node-red\nCOPY package.json .\nCOPY scripts/entrypoint.sh .\nFROM base AS release\nENTRYPOINT [\"./entrypoint.sh\"]\n"},
		"docker-custom/package.json":          {body: `{"name":"x"}`},
		"docker-custom/scripts/entrypoint.sh": {body: "#!/bin/bash\ntrap stop SIGTERM\nnode red.js \"$@\" &\nwait $!\n", mode: 0o755},
		"package.json":                        {body: `{"name":"root"}`},
	})
	want := []brief{{Command: "./entrypoint.sh", Origin: "entrypoint", RepoPath: "docker-custom/scripts/entrypoint.sh", Kind: KindScript, InterpreterKind: "shell", Line: 6}}
	if diff := cmp.Diff(want, briefs(facts)); diff != "" {
		t.Errorf("executables (-want +got):\n%s", diff)
	}
}

// TestScriptFromAnotherStage: a script the runtime stage copies from a
// builder stage that copied the whole context (rallly's COPY
// --from=builder /app/scripts/docker-start.sh ./) is read.
func TestScriptFromAnotherStage(t *testing.T) {
	t.Parallel()
	facts, _ := runOn(t, map[string]file{
		"Dockerfile":              {body: "FROM node:22 AS builder\nWORKDIR /app\nCOPY . .\nFROM node:22-slim\nWORKDIR /app\nCOPY --from=builder /app/scripts/docker-start.sh ./\nCMD [\"./docker-start.sh\"]\n"},
		"package.json":            {body: `{"name":"x"}`},
		"scripts/docker-start.sh": {body: "#!/bin/sh\nset -e\nnpx prisma migrate deploy\nnode apps/web/server.js\n", mode: 0o755},
	})
	want := []brief{{Command: "docker-entrypoint.sh", Origin: "entrypoint", Kind: KindBaseImage, InterpreterKind: "shell", Line: 4},
		{Command: "./docker-start.sh", Origin: "cmd", RepoPath: "scripts/docker-start.sh", Kind: KindScript, InterpreterKind: "shell", Line: 7}}
	if diff := cmp.Diff(want, briefs(facts)); diff != "" {
		t.Errorf("executables (-want +got):\n%s", diff)
	}
}
