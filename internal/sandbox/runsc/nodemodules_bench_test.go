package runsc

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// benchTree is a real node_modules: npm's own, as the Node packages
// install it (about 2,000 files, 1,400 of them JavaScript or JSON).
const benchTree = "/usr/lib/node_modules"

// BenchmarkReadNodeModules reads benchTree as an image's node_modules
// (rootfs /usr, WORKDIR /lib). Compare with BenchmarkReadNodeModulesBaseline,
// a plain walk that reads every file whole, run side by side:
//
//	go test -run '^$' -bench 'ReadNodeModules' -count 6 ./internal/sandbox/runsc/
func BenchmarkReadNodeModules(b *testing.B) {
	if _, err := os.Stat(benchTree); err != nil {
		b.Skipf("no node_modules to read at %s: %v", benchTree, err)
	}
	var set int64
	var files int
	for b.Loop() {
		s, err := readNodeModules(b.Context(), "/usr", "/lib", nil)
		if err != nil {
			b.Fatal(err)
		}
		set, files = s.Bytes(), len(s.Files)
	}
	b.ReportMetric(float64(set), "bytes/set")
	b.ReportMetric(float64(files), "files/set")
}

// BenchmarkReadNodeModulesBaseline walks benchTree and reads every regular
// file whole, following nothing: what copying the folder costs.
func BenchmarkReadNodeModulesBaseline(b *testing.B) {
	if _, err := os.Stat(benchTree); err != nil {
		b.Skipf("no node_modules to read at %s: %v", benchTree, err)
	}
	var total int64
	for b.Loop() {
		total = 0
		err := filepath.WalkDir(benchTree, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			total += int64(len(data))
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total), "bytes/set")
}
