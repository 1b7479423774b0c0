package devimages

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// builderVersion changes whenever Build makes different images from the
// same inputs, so old cache entries are not reused.
const builderVersion = "devimages/v2"

// Cached returns the images for in from an OCI image layout under dir,
// building and storing them on a miss. The entry is keyed by the digests of
// the inputs, so a new tarball is a new entry; manifests are stored as
// built, so digests are the same as Build's.
func Cached(in Inputs, dir string) (node, distroless, nonroot v1.Image, err error) {
	if err := in.Check(); err != nil {
		return nil, nil, nil, err
	}
	return cachedFor(in, in.NodeTarball, dir)
}

// Sets returns the Node 22 set and, when its tarball is there, the Node 24
// set, each from the cache under dir (built on a miss).
func Sets(in Inputs, dir string) ([]Set, error) {
	node, distroless, nonroot, err := Cached(in, dir)
	if err != nil {
		return nil, err
	}
	sets := []Set{{Major: 22, Node: node, Distroless: distroless, Nonroot: nonroot}}
	if in.Node24Tarball != "" {
		if _, err := os.Stat(in.Node24Tarball); err == nil {
			n, d, nr, err := cachedFor(in, in.Node24Tarball, dir)
			if err != nil {
				return nil, err
			}
			sets = append(sets, Set{Major: 24, Node: n, Distroless: d, Nonroot: nr})
		}
	}
	return sets, nil
}

func cachedFor(in Inputs, tarball, dir string) (node, distroless, nonroot v1.Image, err error) {
	in.NodeTarball = tarball
	key, err := inputKey(in)
	if err != nil {
		return nil, nil, nil, err
	}
	p := filepath.Join(dir, key)
	if imgs, err := readLayout(p); err == nil {
		return imgs[0], imgs[1], imgs[2], nil
	}
	node, distroless, nonroot, err = buildFor(in, tarball)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := writeLayout(p, node, distroless, nonroot); err != nil {
		return nil, nil, nil, fmt.Errorf("caching images in %s: %w", dir, err)
	}
	return node, distroless, nonroot, nil
}

func inputKey(in Inputs) (string, error) {
	h := sha256.New()
	io.WriteString(h, builderVersion+"\n")
	for _, p := range []string{in.NodeTarball, in.NPMTarball, in.Busybox} {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func readLayout(p string) ([]v1.Image, error) {
	lp, err := layout.FromPath(p)
	if err != nil {
		return nil, err
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 3 {
		return nil, fmt.Errorf("layout %s has %d images, want 3", p, len(m.Manifests))
	}
	imgs := make([]v1.Image, 3)
	for i, d := range m.Manifests {
		if imgs[i], err = idx.Image(d.Digest); err != nil {
			return nil, err
		}
	}
	return imgs, nil
}

// writeLayout writes the layout to a temporary directory and renames it
// into place, so a reader never sees half an entry.
func writeLayout(p string, imgs ...v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(p), ".tmp-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	lp, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	for _, img := range imgs {
		if err := lp.AppendImage(img); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, p); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(p); serr == nil {
			return nil // another process stored the same entry first
		}
		return err
	}
	return nil
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
