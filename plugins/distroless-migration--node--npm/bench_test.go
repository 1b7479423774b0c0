package nodenpm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/probe"
)

// TestMain removes the synthetic repository the benchmarks share.
func TestMain(m *testing.M) {
	code := m.Run()
	if synthDir != "" {
		os.RemoveAll(synthDir)
	}
	os.Exit(code)
}

var (
	synthOnce sync.Once
	synthDir  string
	synthErr  error
)

// synthRepo writes a service of 50,000 files, most of them under
// node_modules (1,000 packages of 48 files, some shelling out, some naming
// child_process only in comments), once per test binary.
func synthRepo(b *testing.B) string {
	b.Helper()
	synthOnce.Do(func() {
		synthDir, synthErr = os.MkdirTemp("", "codegenie-synth-")
		if synthErr != nil {
			return
		}
		write := func(rel, body string) {
			if synthErr != nil {
				return
			}
			p := filepath.Join(synthDir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				synthErr = err
				return
			}
			synthErr = os.WriteFile(p, []byte(body), 0o644)
		}
		deps := ""
		for i := range 1000 {
			name := fmt.Sprintf("pkg%04d", i)
			if i < 200 {
				deps += fmt.Sprintf("%q: \"1.0.0\",", name)
			}
			write("node_modules/"+name+"/package.json", fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"index.js","dependencies":{"pkg%04d":"1"}}`, name, (i+1)%1000))
			for j := range 47 {
				body := fmt.Sprintf("'use strict';\nmodule.exports = function f%d(a, b) { return a + b + %d; };\n", j, i)
				switch {
				case j == 0 && i%50 == 0:
					body += "const { execSync } = require('child_process');\nexports.arch = () => execSync('getconf LONG_BIT').toString();\n"
				case j == 1 && i%10 == 0:
					body += "// child_process is not used here; this comment must not count\n"
				}
				write(fmt.Sprintf("node_modules/%s/lib/f%02d.js", name, j), body)
			}
		}
		for i := range 1000 {
			write(fmt.Sprintf("src/module%04d.js", i), fmt.Sprintf("export const v%d = %d;\n", i, i))
		}
		write("package.json", `{"name":"synth","scripts":{"start":"node src/index.js"},"dependencies":{`+deps+`"z":"1"}}`)
		write("package-lock.json", "{}")
		write("src/index.js", "require('node:child_process').execFileSync('/bin/true');\n")
		write("Dockerfile", "FROM node:22 AS builder\nWORKDIR /app\nCOPY . .\nRUN npm ci\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=builder /app /app\nCMD [\"src/index.js\"]\n")
	})
	if synthErr != nil {
		b.Fatal(synthErr)
	}
	return synthDir
}

// BenchmarkLightProbesCold50k runs every light probe, uncached, on the
// synthetic 50,000-file repository: a new Repo each time, so the file walk
// is counted. Issue 3's target is 1 s on this 2-core machine.
//
//	go test -run '^$' -bench LightProbesCold50k -benchtime 5x ./plugins/distroless-migration--node--npm/
func BenchmarkLightProbesCold50k(b *testing.B) {
	dir := synthRepo(b)
	reg := staticRegistry()
	for _, cached := range []bool{false, true} {
		name := "uncached"
		if cached {
			name = "cold-cache" // hashing declared inputs and writing entries
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p := &pipeline.Pipeline{Registry: reg, Version: "bench"}
				if cached {
					b.StopTimer()
					c, err := cache.Open(b.TempDir())
					if err != nil {
						b.Fatal(err)
					}
					p.Cache = c
					b.StartTimer()
				}
				repo, err := probe.OpenRepo(dir)
				if err != nil {
					b.Fatal(err)
				}
				recs, err := p.Run(b.Context(), repo, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if r.Result.Confidence == probe.Low {
						b.Fatalf("%s: %s %s", r.Result.Probe, r.Result.Reason, r.Result.Detail)
					}
				}
			}
		})
	}
	// warm: every result and every input digest is cached; the run lists
	// the repository, stats each declared input and reads the entries.
	b.Run("warm", func(b *testing.B) {
		c, err := cache.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		p := &pipeline.Pipeline{Registry: reg, Version: "bench", Cache: c}
		time.Sleep(cache.RacyWindow) // let the files age out of the racy window
		for range 2 {
			repo, err := probe.OpenRepo(dir)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.Run(b.Context(), repo, nil); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			repo, err := probe.OpenRepo(dir)
			if err != nil {
				b.Fatal(err)
			}
			recs, err := p.Run(b.Context(), repo, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range recs {
				if !r.CacheHit {
					b.Fatalf("%s missed the cache", r.Result.Probe)
				}
			}
		}
	})
}
