package childprocess

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/probe"
)

// Shape of the synthetic repository: 400 production packages (each tenth
// with a nested dependency of its own) and 50 dev packages under
// node_modules, plus the application's sources: 50,000 files in all.
const (
	benchProdPackages = 400
	benchDevPackages  = 50
	benchFilesPerPkg  = 108 // JavaScript files per top-level package, besides package.json
	benchNestedFiles  = 10
	benchDevFiles     = 99
	benchAppFiles     = 50000 - benchProdPackages*(benchFilesPerPkg+1) - benchProdPackages/10*(benchNestedFiles+1) -
		benchDevPackages*(benchDevFiles+1) - 1
)

// benchBody returns a small JavaScript file. One in a hundred calls
// child_process (CommonJS and ESM alternately); one in two hundred names it
// in a prose comment (not parsed) and one in two hundred quotes it in a
// comment (parsed, no finding). That is denser than real node_modules
// trees, where well under one file in a hundred names child_process.
func benchBody(r *rand.Rand, i int) string {
	var b strings.Builder
	switch i % 200 {
	case 7:
		b.WriteString("'use strict';\nconst cp = require('child_process');\n")
		fmt.Fprintf(&b, "exports.run%d = () => cp.execSync('getconf LONG_BIT', { encoding: 'utf8' });\n", i)
		fmt.Fprintf(&b, "exports.git%d = (args) => cp.spawn('git', args, { stdio: 'inherit' });\n", i)
	case 107:
		b.WriteString("import { execFile } from 'node:child_process';\nexport const v = () => execFile('ffmpeg', ['-version'], () => {});\n")
	case 42: // prose: not parsed
		b.WriteString("'use strict';\n// This module does not use child_process; it used to.\n")
	case 143: // quoted in a comment: parsed, no finding
		b.WriteString("'use strict';\n// Formerly: const cp = require('child_process');\n")
	default:
		b.WriteString("'use strict';\n")
	}
	for range 10 + r.IntN(40) {
		fmt.Fprintf(&b, "function f%d(a, b) {\n  const x = a * %d + b;\n  return x > %d ? String(x) : `v${x}`;\n}\n",
			r.IntN(1<<20), r.IntN(100), r.IntN(1000))
	}
	b.WriteString("module.exports = { f: typeof f0 === 'function' };\n")
	return b.String()
}

// writeBenchRepo generates the synthetic repository and returns its file
// count.
func writeBenchRepo(b testing.TB, dir string) int {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	n := 0
	write := func(rel, body string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
		n++
	}
	manifest := func(rel, name string, deps map[string]string, dev map[string]string) {
		m := map[string]any{"name": name, "version": "1.0.0", "dependencies": deps}
		if dev != nil {
			m["devDependencies"] = dev
		}
		data, err := json.Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		write(rel, string(data))
	}
	prod, dev := map[string]string{}, map[string]string{}
	for i := range benchProdPackages {
		prod[fmt.Sprintf("pkg%03d", i)] = "^1.0.0"
	}
	for i := range benchDevPackages {
		dev[fmt.Sprintf("dev%03d", i)] = "^1.0.0"
	}
	manifest("package.json", "svc", prod, dev)
	file := 0
	for i := range benchProdPackages {
		name := fmt.Sprintf("pkg%03d", i)
		deps := map[string]string{fmt.Sprintf("pkg%03d", (i+1)%benchProdPackages): "^1.0.0"} // one long cycle
		if i%10 == 0 {
			deps["nested"] = "^2.0.0"
			manifest("node_modules/"+name+"/node_modules/nested/package.json", "nested", nil, nil)
			for j := range benchNestedFiles {
				write(fmt.Sprintf("node_modules/%s/node_modules/nested/lib/n%d.js", name, j), benchBody(r, file))
				file++
			}
		}
		manifest("node_modules/"+name+"/package.json", name, deps, nil)
		for j := range benchFilesPerPkg {
			write(fmt.Sprintf("node_modules/%s/lib/d%d/f%d.js", name, j%8, j), benchBody(r, file))
			file++
		}
	}
	for i := range benchDevPackages {
		name := fmt.Sprintf("dev%03d", i)
		manifest("node_modules/"+name+"/package.json", name, nil, nil)
		for j := range benchDevFiles {
			write(fmt.Sprintf("node_modules/%s/f%d.js", name, j), benchBody(r, file))
			file++
		}
	}
	for i := range benchAppFiles {
		ext := ".js"
		if i%3 == 0 {
			ext = ".ts"
		}
		write(fmt.Sprintf("src/m%d/file%d%s", i%40, i, ext), benchBody(r, file))
		file++
	}
	return n
}

// BenchmarkChildProcess50k measures the probe on a synthetic repository of
// 50,000 files. cold_run is a cold Run: a new probe.Repo each iteration, so
// it includes the repository walk that light probes share (walk measures
// that alone). pipeline_warm is a warm cache hit through the pipeline: the
// cost of hashing the declared inputs.
func BenchmarkChildProcess50k(b *testing.B) {
	dir := b.TempDir()
	if n := writeBenchRepo(b, dir); n != 50000 {
		b.Fatalf("generated %d files, want 50000", n)
	}
	open := func(b *testing.B) *probe.Repo {
		repo, err := probe.OpenRepo(dir)
		if err != nil {
			b.Fatal(err)
		}
		return repo
	}
	b.Run("cold_run", func(b *testing.B) {
		var facts *Facts
		for b.Loop() {
			out, err := New().Run(b.Context(), open(b), &probe.Context{})
			if err != nil {
				b.Fatal(err)
			}
			facts = out.Facts.(*Facts)
		}
		b.ReportMetric(float64(facts.FilesScanned), "files_scanned")
		b.ReportMetric(float64(facts.FilesParsed), "files_parsed")
		b.ReportMetric(float64(len(facts.Findings)), "findings")
	})
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if _, err := open(b).Files(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pipeline_warm", func(b *testing.B) {
		c, err := cache.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		reg := probe.NewRegistry()
		reg.Warnings().MustRegister(Warnings...)
		reg.MustRegister(New())
		p := &pipeline.Pipeline{Registry: reg, Cache: c, Version: "bench"}
		if _, err := p.Run(b.Context(), open(b), nil); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			recs, err := p.Run(b.Context(), open(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			if !recs[0].CacheHit {
				b.Fatal("warm run missed the cache")
			}
		}
	})
}
