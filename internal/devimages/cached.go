package devimages

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Sets returns the Node 22 set and, when their tarballs are there, the
// Node 24, Node 20 and Node 18 sets. Their big layers (the root filesystems, node and npm) are kept in
// dir, keyed by the digests of what makes them, and read from there once
// made; the rest is built each time, the same bytes from the same inputs,
// so digests are Build's.
func Sets(in Inputs, dir string) ([]Set, error) {
	if err := in.Check(); err != nil {
		return nil, err
	}
	rs, err := in.rootfses()
	if err != nil {
		return nil, err
	}
	tarballs := []string{in.NodeTarball}
	for _, tb := range []string{in.Node24Tarball, in.Node20Tarball, in.Node18Tarball} {
		if tb == "" {
			continue
		}
		if _, err := os.Stat(tb); err == nil {
			tarballs = append(tarballs, tb)
		}
	}
	if _, err := os.Stat(in.Corepack18Tarball); err != nil && in.Node18Tarball != "" {
		// The Node 18 set needs its own corepack: without it, no set.
		tarballs = slices.DeleteFunc(tarballs, func(tb string) bool { return tb == in.Node18Tarball })
	}
	var sets []Set
	for _, tb := range tarballs {
		s, err := buildSet(in, rs, tb, filepath.Join(dir, "layers"))
		if err != nil {
			return nil, err
		}
		sets = append(sets, s)
	}
	return sets, nil
}

func majorOf(tarball string) (int, error) {
	v, err := tarballVersion(tarball)
	if err != nil {
		return 0, err
	}
	var m int
	if _, err := fmt.Sscanf(v, "%d.", &m); err != nil {
		return 0, fmt.Errorf("%s: version %q has no major", tarball, v)
	}
	return m, nil
}

// DefaultCacheDir is where tests and `codegenie dev images` keep built
// images: $CODEGENIE_CACHE_DIR/devimages, else the user cache directory's.
func DefaultCacheDir() string {
	if d := os.Getenv("CODEGENIE_CACHE_DIR"); d != "" {
		return filepath.Join(d, "devimages")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "codegenie", "devimages")
	}
	return filepath.Join(os.TempDir(), "codegenie-devimages")
}
