package deps

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits cap what one package may hold. The zero value means the
// defaults.
type Limits struct {
	// Compressed caps the tarball's size (default 256 MiB: a package
	// that bundles a compressed browser, @sparticuz/chromium 148, is 67
	// MiB; the unpacked cap is what stops a decompression bomb).
	Compressed int64
	// Unpacked caps the bytes of the unpacked archive stream, headers
	// included (default 512 MiB).
	Unpacked int64
	// Files caps the number of entries (default 50,000).
	Files int
}

func (l Limits) withDefaults() Limits {
	if l.Compressed <= 0 {
		l.Compressed = 256 << 20
	}
	if l.Unpacked <= 0 {
		l.Unpacked = 512 << 20
	}
	if l.Files <= 0 {
		l.Files = 50000
	}
	return l
}

// ErrUnsafeArchive matches every *UnsafeArchiveError.
var ErrUnsafeArchive = errors.New("unsafe archive")

// UnsafeArchiveError is a tarball with an entry that would land outside its
// package, link out of it, or is a device or FIFO. Nothing of it is kept.
type UnsafeArchiveError struct {
	Entry  string
	Reason string
}

func (e *UnsafeArchiveError) Error() string {
	return fmt.Sprintf("archive entry %q %s; the package was refused", e.Entry, e.Reason)
}

// Is matches ErrUnsafeArchive.
func (e *UnsafeArchiveError) Is(target error) bool { return target == ErrUnsafeArchive }

// ErrTooLarge matches every *TooLargeError.
var ErrTooLarge = errors.New("package too large")

// TooLargeError is a tarball over one of the Limits.
type TooLargeError struct {
	What  string // "compressed size", "unpacked size", "file count"
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s exceeds the cap of %d; the package was refused (a decompression bomb, or a package too large to scan)", e.What, e.Limit)
}

// Is matches ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// countingReader fails once more than limit bytes were read.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
	what  string
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		return n, &TooLargeError{What: c.what, Limit: c.limit}
	}
	return n, err
}

// entryName strips the archive's first path element (npm tarballs put the
// package under package/, some under another name) and checks the rest. It
// returns "" for the top folder itself.
func entryName(name string) (string, error) {
	if strings.ContainsRune(name, 0) || strings.Contains(name, `\`) {
		return "", &UnsafeArchiveError{Entry: name, Reason: "has a NUL or backslash in its name"}
	}
	if path.IsAbs(name) {
		return "", &UnsafeArchiveError{Entry: name, Reason: "is an absolute path"}
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return "", &UnsafeArchiveError{Entry: name, Reason: "climbs out with .."}
		}
	}
	_, rest, _ := strings.Cut(strings.TrimPrefix(name, "./"), "/")
	rest = path.Clean("/" + rest)[1:]
	return rest, nil
}

// inside resolves a link target written in entry from and reports whether
// it stays within the package.
func inside(from, target string) (string, bool) {
	if path.IsAbs(target) {
		return "", false
	}
	p := path.Join(path.Dir(from), target)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// unpack extracts the gzipped tarball r into dir, which must exist and be
// empty. Links within the package become copies of the files they name
// (Node reads them the same); links to folders are dropped. Files are
// written without execute bits and then made read-only, with the folders.
func unpack(r io.Reader, dir string, lim Limits) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("reading the tarball: %w", err)
	}
	zr.Multistream(false)
	cr := &countingReader{r: zr, limit: lim.Unpacked, what: "unpacked size"}
	tr := tar.NewReader(cr)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	links := map[string]string{} // entry → target entry
	var order []string
	files := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if tl, ok := errors.AsType[*TooLargeError](err); ok {
				return tl
			}
			return fmt.Errorf("reading the tarball: %w", err)
		}
		files++
		if files > lim.Files {
			return &TooLargeError{What: "file count", Limit: int64(lim.Files)}
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if name != "" {
				if err := root.MkdirAll(name, 0o755); err != nil {
					return fmt.Errorf("unpacking %s: %w", h.Name, err)
				}
			}
		case tar.TypeReg: // the reader reports the old TypeRegA as TypeReg
			if name == "" {
				return &UnsafeArchiveError{Entry: h.Name, Reason: "is a file outside any package folder"}
			}
			if err := writeEntry(root, name, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			t, ok := inside(name, h.Linkname)
			if !ok || name == "" {
				return &UnsafeArchiveError{Entry: h.Name, Reason: fmt.Sprintf("is a symlink to %q, outside the package", h.Linkname)}
			}
			links[name] = t
			order = append(order, name)
		case tar.TypeLink:
			t, err := entryName(h.Linkname)
			if err != nil || t == "" || name == "" {
				return &UnsafeArchiveError{Entry: h.Name, Reason: fmt.Sprintf("is a hard link to %q, outside the package", h.Linkname)}
			}
			links[name] = t
			order = append(order, name)
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			return &UnsafeArchiveError{Entry: h.Name, Reason: "is a device or FIFO"}
		case tar.TypeXGlobalHeader:
		default:
			return &UnsafeArchiveError{Entry: h.Name, Reason: fmt.Sprintf("has entry type %q, which a package does not hold", string(h.Typeflag))}
		}
	}
	// The rest of the gzip stream (trailing data) is read so that a bomb
	// after the tar's end is still counted, then ignored.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		if tl, ok := errors.AsType[*TooLargeError](err); ok {
			return tl
		}
	}
	for _, name := range order {
		t := links[name]
		for hops := 0; hops < 16; hops++ {
			next, ok := links[t]
			if !ok {
				break
			}
			t = next
		}
		fi, err := root.Lstat(t)
		if err != nil || !fi.Mode().IsRegular() {
			continue // a link to a folder or to nothing: dropped
		}
		src, err := root.Open(t)
		if err != nil {
			return err
		}
		err = writeEntry(root, name, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	return readOnly(dir)
}

// writeEntry writes one file, replacing an earlier entry of the same name.
func writeEntry(root *os.Root, name string, r io.Reader) error {
	if d := path.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("unpacking %s: %w", name, err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("unpacking %s: %w", name, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		if tl, ok := errors.AsType[*TooLargeError](err); ok {
			return tl
		}
		return fmt.Errorf("unpacking %s: %w", name, err)
	}
	return f.Close()
}

// readOnly makes every file 0444 and every folder 0555 under dir.
func readOnly(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		return os.Chmod(p, 0o444)
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], 0o555); err != nil {
			return err
		}
	}
	return nil
}

// removeAll removes a tree that readOnly may have locked.
func removeAll(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
