package nodenpm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

// TestSymlinkOutOfTheRepository: a repository file that is a symlink to a
// host file is never read. Every probe that meets it answers low with
// path_escapes_repository, and no output (JSON, SARIF, text) quotes the
// host file.
func TestSymlinkOutOfTheRepository(t *testing.T) {
	t.Parallel()
	const secret = "TOPSECRET-host-file-line"
	hostFile := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(hostFile, []byte(secret+"\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := map[string]string{
		"Dockerfile":           "FROM node:22\nWORKDIR /app\nCOPY . .\nENTRYPOINT [\"./docker-entrypoint.sh\"]\nCMD [\"node\", \"server.js\"]\n",
		"package.json":         `{"name": "svc", "dependencies": {}}`,
		"server.js":            "require('node:http').createServer().listen(8080);\n",
		"docker-entrypoint.sh": "#!/bin/sh\nexec \"$@\"\n",
		"package-lock.json":    `{"lockfileVersion": 3}`,
	}
	tests := []struct {
		link string
		// probes that read the link and must say so
		want []string
	}{
		{"Dockerfile", []string{"dockerfile", "npm_scripts", "node_runtime", "entrypoint_scripts"}},
		{"package.json", []string{"node_project", "child_process"}},
		{"docker-entrypoint.sh", []string{"entrypoint_scripts"}},
		// Only the lockfile's name is read (which package manager), never
		// its contents: nothing to say, nothing to leak.
		{"package-lock.json", nil},
	}
	reg := staticRegistry()
	for _, tt := range tests {
		t.Run(tt.link, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, body := range good {
				if name == tt.link {
					if err := os.Symlink(hostFile, filepath.Join(dir, name)); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			out, err := gather.Run(t.Context(), dir, gather.Options{Registry: reg, Version: "test", Task: nodenpm.Task})
			if err != nil {
				t.Fatal(err)
			}
			var all bytes.Buffer
			if err := out.Encode(&all); err != nil {
				t.Fatal(err)
			}
			if err := report.EncodeSARIF(&all, out.Context, reg); err != nil {
				t.Fatal(err)
			}
			if err := report.EncodeText(&all, out.Context, report.TextOptions{Verbose: true}); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(all.String(), secret) {
				t.Errorf("an output quotes the host file behind %s", tt.link)
			}
			got := map[string]probe.Result{}
			for _, r := range out.Context.Probes {
				got[r.Probe] = r
			}
			for _, p := range tt.want {
				if r := got[p]; r.Confidence != probe.Low || r.Reason != probe.ReasonPathEscapes {
					t.Errorf("%s: %s/%s (%s), want low/%s", p, r.Confidence, r.Reason, r.Detail, probe.ReasonPathEscapes)
				}
			}
			if v := out.Context.Assessments["distroless_readiness"].Verdict; len(tt.want) > 0 && (v == probe.Ready || v == probe.ReadyAfterRewrite) {
				t.Errorf("verdict %s: the evidence behind the link is missing, so it cannot be ready", v)
			}
		})
	}
}
