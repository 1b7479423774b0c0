package devimages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The images' layers are uncompressed tars (OCI's
// application/vnd.oci.image.layer.v1.tar): gzip in Go takes minutes for a
// 600 MB root filesystem under the race detector, and the registry is on
// loopback. A layer's digest is its tar's sha256, computed once as the tar
// is written.

// rawLayer is an uncompressed layer read from a file or from memory.
type rawLayer struct {
	digest v1.Hash
	size   int64
	path   string // the tar, or
	data   []byte // the tar, when path is empty
}

func (l *rawLayer) Digest() (v1.Hash, error) { return l.digest, nil }
func (l *rawLayer) DiffID() (v1.Hash, error) { return l.digest, nil }
func (l *rawLayer) Size() (int64, error)     { return l.size, nil }
func (l *rawLayer) MediaType() (types.MediaType, error) {
	return types.OCIUncompressedLayer, nil
}
func (l *rawLayer) Compressed() (io.ReadCloser, error) { return l.Uncompressed() }
func (l *rawLayer) Uncompressed() (io.ReadCloser, error) {
	if l.path == "" {
		return io.NopCloser(bytes.NewReader(l.data)), nil
	}
	return os.Open(l.path)
}

// memLayer is the layer of a tar held in memory.
func memLayer(b []byte) v1.Layer {
	sum := sha256.Sum256(b)
	return &rawLayer{digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}, size: int64(len(b)), data: b}
}

// cachedLayer is the layer whose tar write makes, stored in dir as
// KEY.tar with its digest in KEY.tar.sha256 (written last, so a crash
// leaves no entry that looks whole), and read from there once it is.
// key must name everything that decides the tar's bytes.
func cachedLayer(dir, key string, write func(io.Writer) error) (v1.Layer, error) {
	p := filepath.Join(dir, key+".tar")
	if l, err := readCachedLayer(p); err == nil {
		return l, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".layer-*")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(tmp, h)}
	if err := write(cw); err != nil {
		_ = tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := writeAtomic(p+".sha256", []byte(fmt.Sprintf("%s %d\n", sum, cw.n))); err != nil {
		return nil, err
	}
	return &rawLayer{digest: v1.Hash{Algorithm: "sha256", Hex: sum}, size: cw.n, path: p}, nil
}

func readCachedLayer(p string) (v1.Layer, error) {
	b, err := os.ReadFile(p + ".sha256")
	if err != nil {
		return nil, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || len(f[0]) != 64 {
		return nil, fmt.Errorf("%s.sha256: not a digest and a size", p)
	}
	size, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.Size() != size {
		return nil, fmt.Errorf("%s: %d bytes, recorded %d", p, st.Size(), size)
	}
	return &rawLayer{digest: v1.Hash{Algorithm: "sha256", Hex: f[0]}, size: size, path: p}, nil
}

func writeAtomic(p string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// fileDigest is the sha256 of a file, for cache keys.
func fileDigest(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
