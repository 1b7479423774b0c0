package nodenpm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

// TestLinkedFolderOutOfTheRepository: an entrypoint script, or a folder
// that holds one, reached through a symlink
// that leads out of the repository is never read, and the probe that
// needed it says so (low, path_escapes_repository): never a silent skip
// with high confidence, never a raw "path escapes from parent".
func TestLinkedFolderOutOfTheRepository(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// files are written into the repository; links maps a repository
		// path to a host path (under the test's host folder).
		files map[string]string
		links map[string]string
		probe string
	}{
		{
			name: "entrypoint script in a linked folder, COPY . .",
			files: map[string]string{
				"Dockerfile": "FROM node:22\nWORKDIR /app\nCOPY . .\nENTRYPOINT [\"./scripts/start.sh\"]\nCMD [\"node\", \"server.js\"]\n",
				"server.js":  "require('node:http').createServer().listen(8080);\n",
			},
			links: map[string]string{"scripts": "scripts"},
			probe: "entrypoint_scripts",
		},
		{
			name: "entrypoint script in a linked folder, COPY scripts",
			files: map[string]string{
				"Dockerfile": "FROM node:22\nWORKDIR /app\nCOPY server.js ./\nCOPY scripts /scripts\nENTRYPOINT [\"/scripts/start.sh\"]\nCMD [\"node\", \"server.js\"]\n",
				"server.js":  "require('node:http').createServer().listen(8080);\n",
			},
			links: map[string]string{"scripts": "scripts"},
			probe: "entrypoint_scripts",
		},
		{
			name: "entrypoint script linked to a missing host file",
			files: map[string]string{
				"Dockerfile": "FROM node:22\nWORKDIR /app\nCOPY . .\nENTRYPOINT [\"./start.sh\"]\nCMD [\"node\", \"server.js\"]\n",
				"server.js":  "require('node:http').createServer().listen(8080);\n",
			},
			links: map[string]string{"start.sh": "missing/start.sh"},
			probe: "entrypoint_scripts",
		},
		{
			name: "npm start script in a linked folder",
			files: map[string]string{
				"Dockerfile":   "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"npm\", \"start\"]\n",
				"package.json": `{"name": "svc", "scripts": {"start": "./scripts/start.sh node server.js"}}`,
				"server.js":    "require('node:http').createServer().listen(8080);\n",
			},
			links: map[string]string{"scripts": "scripts"},
			probe: "entrypoint_scripts",
		},
		{
			// The module the server requires is behind a folder linked
			// out of the repository, where no such file is: the code the
			// service loads cannot be read, so nothing holds of it.
			name: "required module in a linked folder",
			files: map[string]string{
				"Dockerfile": "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"server.js\"]\n",
				"server.js":  "require('./lib/helper');\nrequire('node:http').createServer().listen(8080);\n",
			},
			links: map[string]string{"lib": "lib"},
			probe: "child_process",
		},
	}
	reg := staticRegistry()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			host, dir := t.TempDir(), t.TempDir()
			if err := os.MkdirAll(filepath.Join(host, "scripts"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(host, "lib"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(host, "scripts", "start.sh"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			files := map[string]string{"package.json": `{"name": "svc", "dependencies": {}}`}
			for name, body := range tt.files {
				files[name] = body
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, target := range tt.links {
				if err := os.Symlink(filepath.Join(host, target), filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			out, err := gather.Run(t.Context(), dir, gather.Options{Registry: reg, Version: "test", Task: nodenpm.Task})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Context.Probes {
				if strings.Contains(r.Detail, "path escapes from parent") {
					t.Errorf("%s: detail %q gives the raw error, want the typed answer", r.Probe, r.Detail)
				}
				if r.Probe == tt.probe && (r.Confidence != probe.Low || r.Reason != probe.ReasonPathEscapes) {
					t.Errorf("%s: %s/%s (%s), want low/%s", r.Probe, r.Confidence, r.Reason, r.Detail, probe.ReasonPathEscapes)
				}
			}
			if v := out.Context.Assessments["distroless_readiness"].Verdict; v == probe.Ready || v == probe.ReadyAfterRewrite {
				t.Errorf("verdict %s: the evidence behind the link is missing, so it cannot be ready", v)
			}
		})
	}
}
