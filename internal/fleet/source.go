package fleet

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrDirty matches a checkout that workers cannot fetch as it is: changes
// nobody committed, or a HEAD on no remote branch.
var ErrDirty = errors.New("the checkout differs from what its remote holds")

// Resolve names the checkout at dir (the client's) as workers fetch it:
// its remote's URL (origin, or the only remote) and its HEAD commit. A
// checkout with uncommitted changes, untracked files or a HEAD that no
// remote-tracking branch contains is refused with ErrDirty unless
// allowDirty; then its tree (tracked and untracked files, not ignored
// ones) is stored in st as a content-addressed snapshot and named instead.
func Resolve(ctx context.Context, dir string, allowDirty bool, st ResultStore) (Source, error) {
	g := &Checkouts{AllowLocal: true}
	top, err := g.git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return Source{}, fmt.Errorf("%s is not a git checkout, so workers cannot fetch it (run without --workers-fetch to read it at this path): %w", dir, err)
	}
	rel, err := subdir(strings.TrimSpace(top), dir)
	if err != nil {
		return Source{}, err
	}
	status, err := g.git(ctx, dir, "status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none", "--", ".")
	if err != nil {
		return Source{}, err
	}
	why := ""
	if status != "" {
		why = "it has changes nobody committed:\n" + firstLines(status, 5)
	}
	var src Source
	if why == "" {
		if src.URL, err = remoteURL(ctx, g, dir); err != nil {
			return Source{}, err
		}
		head, err := g.git(ctx, dir, "rev-parse", "--verify", "HEAD^{commit}")
		if err != nil {
			return Source{}, fmt.Errorf("%s has no commit: %w", dir, err)
		}
		src.Commit, src.Subdir = strings.TrimSpace(head), rel
		on, err := g.git(ctx, dir, "for-each-ref", "--count=1", "--contains", src.Commit, "refs/remotes")
		if err != nil {
			return Source{}, err
		}
		if strings.TrimSpace(on) == "" {
			why = fmt.Sprintf("its HEAD %s is on no remote-tracking branch (push it first)", src.Commit[:12])
		}
	}
	if why == "" {
		return src, nil
	}
	if !allowDirty {
		return Source{}, fmt.Errorf("%w: %s: %s; commit and push, or pass --allow-dirty to send workers a snapshot of its files", ErrDirty, dir, why)
	}
	return snapshot(ctx, g, dir, st)
}

func subdir(top, dir string) (string, error) {
	t, err1 := filepath.EvalSymlinks(top)
	d, err2 := filepath.EvalSymlinks(dir)
	if err := errors.Join(err1, err2); err != nil {
		return "", err
	}
	rel, err := filepath.Rel(t, d)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("%s is not inside its repository %s", dir, top)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

func remoteURL(ctx context.Context, g *Checkouts, dir string) (string, error) {
	u, err := g.git(ctx, dir, "remote", "get-url", "origin")
	if err == nil {
		return strings.TrimSpace(u), nil
	}
	out, err2 := g.git(ctx, dir, "remote")
	names := strings.Fields(out)
	if err2 != nil || len(names) != 1 {
		return "", fmt.Errorf("%s has no remote named origin (remotes: %v): workers need a URL to fetch it from; add one with git remote add origin URL", dir, names)
	}
	u, err = g.git(ctx, dir, "remote", "get-url", names[0])
	return strings.TrimSpace(u), err
}

func firstLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = append(ls[:n], fmt.Sprintf("… and %d more", len(ls)-n))
	}
	return strings.Join(ls, "\n")
}

// snapshot stores the files of dir that git does not ignore as a tar
// written the same way every time (sorted, no times or owners), and names
// its digest.
func snapshot(ctx context.Context, g *Checkouts, dir string, st ResultStore) (Source, error) {
	if st == nil {
		return Source{}, errors.New("a snapshot needs the result store")
	}
	out, err := g.git(ctx, dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return Source{}, err
	}
	names := slices.Compact(slices.Sorted(slices.Values(strings.Split(strings.TrimRight(out, "\x00"), "\x00"))))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if n == "" {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(n))
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted, not yet committed
		}
		if err != nil {
			return Source{}, err
		}
		h := &tar.Header{Name: n, Format: tar.FormatPAX, Mode: 0o644}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			h.Typeflag, h.Mode = tar.TypeSymlink, 0o777
			if h.Linkname, err = os.Readlink(p); err != nil {
				return Source{}, err
			}
		case fi.Mode().IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
			if fi.Mode()&0o111 != 0 {
				h.Mode = 0o755
			}
		default:
			continue // a submodule's folder, a socket
		}
		if err := tw.WriteHeader(h); err != nil {
			return Source{}, err
		}
		if h.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return Source{}, err
			}
			_, err = io.CopyN(tw, f, h.Size)
			f.Close()
			if err != nil {
				return Source{}, fmt.Errorf("%s changed while it was read: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return Source{}, err
	}
	d, err := st.Put(ctx, buf.Bytes())
	if err != nil {
		return Source{}, fmt.Errorf("storing the snapshot of %s: %w", dir, err)
	}
	return Source{Snapshot: d}, nil
}

// unpackSnapshot writes a snapshot's files under dir, which it creates.
// An entry that would land outside dir, through a path or a symbolic
// link, is refused (os.Root enforces it).
func unpackSnapshot(data []byte, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("the entry %q leaves the tree", h.Name)
		}
		if d := filepath.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
		}
		switch h.Typeflag {
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		case tar.TypeReg:
			f, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fs.FileMode(h.Mode)&0o755)
			if err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("the entry %q is of a type a snapshot does not hold", h.Name)
		}
	}
}
