package devimages

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The root filesystems scripts/setup.sh builds from Debian's archive
// (scripts/rootfs.sh), by the name of their record.
const (
	RootfsFull       = "bookworm-full"     // node:22, node:22-bookworm, node:lts
	RootfsSlim       = "bookworm-slim"     // node:22-slim, node:22-bookworm-slim
	RootfsDistroless = "trixie-distroless" // gcr.io/distroless/nodejs22-debian13
)

// Rootfs is the record scripts/rootfs.sh writes beside a root filesystem
// tarball: what it was built from, and the digest of what it built.
type Rootfs struct {
	Name            string   `json:"name"`
	Recipe          string   `json:"recipe"`
	Suite           string   `json:"suite"`
	Arch            string   `json:"arch"`
	Variant         string   `json:"variant"`
	Packages        []string `json:"packages"`
	SourceDateEpoch int64    `json:"source_date_epoch"`
	Key             string   `json:"key"`
	File            string   `json:"file"`
	SHA256          string   `json:"sha256"`
	Size            int64    `json:"size"`

	path string // the tarball, File in the record's directory
}

// readRootfs reads the record of the root filesystem name in dir and
// checks that its tarball is there with the recorded size.
func readRootfs(dir, name string) (Rootfs, error) {
	rec := filepath.Join(dir, name+".json")
	b, err := os.ReadFile(rec)
	if err != nil {
		return Rootfs{}, fmt.Errorf("%w: the %s root filesystem's record %s: %w", ErrMissingInput, name, rec, err)
	}
	var r Rootfs
	if err := json.Unmarshal(b, &r); err != nil {
		return Rootfs{}, fmt.Errorf("%w: reading %s: %w", ErrMissingInput, rec, err)
	}
	if r.Name != name || r.File == "" || filepath.Base(r.File) != r.File || len(r.SHA256) != 64 {
		return Rootfs{}, fmt.Errorf("%w: %s is not a record of the %s root filesystem", ErrMissingInput, rec, name)
	}
	r.path = filepath.Join(dir, r.File)
	st, err := os.Stat(r.path)
	if err != nil {
		return Rootfs{}, fmt.Errorf("%w: the %s root filesystem: %w", ErrMissingInput, name, err)
	}
	if st.Size() != r.Size {
		return Rootfs{}, fmt.Errorf("%w: %s has %d bytes, its record says %d", ErrMissingInput, r.path, st.Size(), r.Size)
	}
	return r, nil
}

// baseLayerVersion changes whenever baseLayer makes a different layer from
// the same tarball.
const baseLayerVersion = "base-v2"

// baseLayer is the root filesystem as an image layer, written once into
// dir (keyed by the tarball's digest) and read from there afterwards. The
// layer holds the tarball's entries in its order, with names made
// relative, device nodes and FIFOs left out (a runtime makes /dev), owner
// names, access and change times dropped, and only extended attributes
// kept of the PAX records; so the same tarball gives the same layer. The
// tarball is checked against its recorded digest as it is read.
func baseLayer(r Rootfs, dir string) (v1.Layer, error) {
	return cachedLayer(dir, r.Name+"-"+r.SHA256[:32]+"-"+baseLayerVersion, func(w io.Writer) error { return normalize(r, w) })
}

func normalize(r Rootfs, w io.Writer) error {
	f, err := os.Open(r.path)
	if err != nil {
		return err
	}
	defer f.Close()
	sum := sha256.New()
	tr := tar.NewReader(io.TeeReader(f, sum))
	tw := tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", r.path, err)
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if name == "" {
			continue
		}
		switch h.Typeflag {
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			continue
		case tar.TypeDir:
			name += "/"
		}
		out := &tar.Header{
			Typeflag: h.Typeflag, Name: name, Mode: h.Mode, Uid: h.Uid, Gid: h.Gid, Size: h.Size,
			ModTime: h.ModTime.Truncate(time.Second), Format: tar.FormatPAX,
		}
		switch h.Typeflag {
		case tar.TypeSymlink:
			out.Linkname, out.Size = h.Linkname, 0
		case tar.TypeLink:
			out.Linkname, out.Size = strings.TrimPrefix(path.Clean("/"+h.Linkname), "/"), 0
		case tar.TypeReg, tar.TypeDir:
		default:
			return fmt.Errorf("%s: %s has tar type %q, which a root filesystem should not hold", r.path, h.Name, h.Typeflag)
		}
		for k, v := range h.PAXRecords {
			if strings.HasPrefix(k, "SCHILY.xattr.") {
				if out.PAXRecords == nil {
					out.PAXRecords = map[string]string{}
				}
				out.PAXRecords[k] = v
			}
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if out.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, tr); err != nil {
				return err
			}
		}
	}
	if _, err := io.Copy(io.Discard, io.TeeReader(f, sum)); err != nil {
		return err
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != r.SHA256 {
		return fmt.Errorf("%w: %s has digest sha256:%s, its record says sha256:%s", ErrMissingInput, r.path, got, r.SHA256)
	}
	return tw.Close()
}

// rootfsFiles returns the regular files of the tarball whose names (made
// relative) pass want, with their headers.
func rootfsFiles(r Rootfs, want func(name string) bool) (map[string]entry, error) {
	f, err := os.Open(r.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]entry{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", r.path, err)
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if h.Typeflag != tar.TypeReg || !want(name) {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[name] = entry{path: name, mode: h.Mode & 0o7777, data: b, uid: h.Uid, gid: h.Gid}
	}
}
