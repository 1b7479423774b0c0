package nodenpm_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

// TestFIFOInTheRepository: a FIFO where a repository file should be never
// blocks gather, with the cache (which hashes declared inputs) or
// without. It is not read: each probe that meets it answers low with
// not_a_regular_file and names the file, and the verdict cannot be ready.
func TestFIFOInTheRepository(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"Dockerfile":           "FROM node:22\nWORKDIR /app\nCOPY . .\nENTRYPOINT [\"./docker-entrypoint.sh\"]\nCMD [\"node\", \"server.js\"]\n",
		"compose.yml":          "services:\n  api:\n    build: .\n",
		"package.json":         `{"name": "svc", "main": "server.js", "dependencies": {}}`,
		"server.js":            "require('node:http').createServer().listen(8080);\n",
		"docker-entrypoint.sh": "#!/bin/sh\nexec \"$@\"\n",
		".dockerignore":        "node_modules\n",
		"package-lock.json":    `{"lockfileVersion": 3}`,
	}
	tests := []struct {
		fifo string
		// probes that meet the FIFO and must say so
		want []string
	}{
		{"Dockerfile", []string{"dockerfile", "npm_scripts", "node_runtime", "entrypoint_scripts"}},
		{"compose.yml", []string{"dockerfile"}},
		{"package.json", []string{"node_project", "child_process", "npm_scripts", "entrypoint_scripts"}},
		{"server.js", []string{"entrypoint_scripts", "child_process"}},
		{".dockerignore", []string{"child_process"}},
		{"docker-entrypoint.sh", []string{"entrypoint_scripts"}},
	}
	reg := staticRegistry()
	for _, tt := range tests {
		for _, cached := range []bool{false, true} {
			name := tt.fifo + "/uncached"
			if cached {
				name = tt.fifo + "/cached"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				for name, body := range good {
					if name == tt.fifo {
						if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
							t.Fatal(err)
						}
						continue
					}
					if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				o := gather.Options{Registry: reg, Version: "test", Task: nodenpm.Task}
				if cached {
					c, err := cache.Open(t.TempDir())
					if err != nil {
						t.Fatal(err)
					}
					o.Cache = c
				}
				type ran struct {
					out *gather.Outcome
					err error
				}
				done := make(chan ran, 1)
				go func() {
					out, err := gather.Run(t.Context(), dir, o)
					done <- ran{out, err}
				}()
				var r ran
				select {
				case r = <-done:
				case <-time.After(3 * time.Minute):
					// Release the reader blocked opening the FIFO, so the
					// run ends and the test reports it.
					for range 100 {
						if w, err := os.OpenFile(filepath.Join(dir, tt.fifo), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
							w.Close()
						}
						select {
						case r = <-done:
							t.Fatalf("gather blocked on the FIFO %s", tt.fifo)
						case <-time.After(100 * time.Millisecond):
						}
					}
					t.Fatalf("gather blocked on the FIFO %s, and stays blocked", tt.fifo)
				}
				if r.err != nil {
					t.Fatalf("gather: %v", r.err)
				}
				got := map[string]probe.Result{}
				for _, p := range r.out.Context.Probes {
					got[p.Probe] = p
				}
				for _, p := range tt.want {
					if res := got[p]; res.Confidence != probe.Low || res.Reason != probe.ReasonNotRegular || !strings.Contains(res.Detail, tt.fifo) {
						t.Errorf("%s: %s/%s (%s), want low/%s naming %s", p, res.Confidence, res.Reason, res.Detail, probe.ReasonNotRegular, tt.fifo)
					}
				}
				if v := r.out.Context.Assessments["distroless_readiness"].Verdict; len(tt.want) > 0 && (v == probe.Ready || v == probe.ReadyAfterRewrite) {
					t.Errorf("verdict %s: the evidence in the FIFO is missing, so it cannot be ready", v)
				}
			})
		}
	}
}
