package migrate

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// EscapeError is a file migrate would write whose place, through the
// symlink Link, resolves outside the checkout. Path and Link are
// checkout-relative; Link is empty when Path itself leads out.
type EscapeError struct {
	Path   string
	Link   string
	Target string
}

func (e *EscapeError) Error() string {
	if e.Link == "" {
		return fmt.Sprintf("%s: refusing to write outside the checkout: the path leads out of it", e.Path)
	}
	return fmt.Sprintf("%s: refusing to write outside the checkout: the symlink %s leads to %s; "+
		"make %s a directory or file of the checkout (or point the build at one) and run migrate again", e.Path, e.Link, e.Target, e.Link)
}

// maxLinks bounds the symlinks one resolve follows, as the kernel's
// ELOOP does.
const maxLinks = 40

// checkout is a repository opened for migrate's writes: every one goes
// through an os.Root on it, to a place resolved first (see resolve).
type checkout struct {
	root *os.Root
	// dirs are the checkout's absolute path and, when it differs, its
	// path with the links resolved: an absolute symlink to a path under
	// either leads inside.
	dirs []string
}

func openCheckout(dir string) (*checkout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the checkout: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("opening the checkout: %w", err)
	}
	c := &checkout{root: root, dirs: []string{abs}}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		c.dirs = append(c.dirs, real)
	}
	return c, nil
}

func (c *checkout) close() { _ = c.root.Close() }

// inside returns the checkout-relative rest of the absolute path p, and
// whether p is under the checkout at all. The rest is not cleaned: its
// ".." are resolved as they come, after the links before them.
func (c *checkout) inside(p string) (string, bool) {
	for _, d := range c.dirs {
		if p == d {
			return "", true
		}
		if rest, ok := strings.CutPrefix(p, d+string(filepath.Separator)); ok {
			return rest, true
		}
	}
	return "", false
}

// resolve returns the place of the checkout path rel (slash-separated)
// with every symlink on the way followed, as the kernel would: no
// component of it is a link, so a file is written there and never over a
// link. A link that leads outside the checkout is an *EscapeError.
func (c *checkout) resolve(rel string) (string, error) {
	var done []string
	todo := strings.Split(rel, "/")
	link, target := "", ""
	for links := 0; len(todo) > 0; {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", &EscapeError{Path: rel, Link: link, Target: target}
			}
			done = done[:len(done)-1]
			continue
		}
		p := path.Join(path.Join(done...), part)
		fi, err := c.root.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxLinks {
				return "", fmt.Errorf("resolving %s: more than %d symlinks", rel, maxLinks)
			}
			if target, err = c.root.Readlink(p); err != nil {
				return "", fmt.Errorf("resolving %s: %w", rel, err)
			}
			link = p
			next := target
			if filepath.IsAbs(target) {
				rest, ok := c.inside(target)
				if !ok {
					return "", &EscapeError{Path: rel, Link: link, Target: target}
				}
				done, next = nil, rest
			}
			todo = append(strings.Split(filepath.ToSlash(next), "/"), todo...)
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("resolving %s: %w", rel, err)
		}
		done = append(done, part)
	}
	return path.Join(done...), nil
}

// places resolves every file's place; one that leads outside the checkout
// refuses them all.
func (c *checkout) places(files []recipe.File) ([]string, error) {
	out := make([]string, len(files))
	for i, f := range files {
		p, err := c.resolve(f.Path)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// stage writes data to a new temporary file beside the resolved place p
// and returns its name. The file gets p's mode and owner when p exists,
// else mode.
func (c *checkout) stage(p string, data []byte, mode fs.FileMode) (string, error) {
	uid, gid, owned := -1, -1, false
	if fi, err := c.root.Lstat(p); err == nil {
		mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		uid, gid, owned = owner(fi)
	}
	tmp := path.Join(path.Dir(p), "."+path.Base(p)+".codegenie-"+rand.Text()[:10])
	f, err := c.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && owned {
		// Before the mode: a chown clears the set-id bits.
		err = c.chown(tmp, uid, gid)
	}
	if err == nil {
		err = c.root.Chmod(tmp, mode)
	}
	if err != nil {
		_ = c.root.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// chown gives the file at p the owner uid:gid, unless it has it already
// (which needs no privilege).
func (c *checkout) chown(p string, uid, gid int) error {
	fi, err := c.root.Lstat(p)
	if err != nil {
		return err
	}
	if u, g, _ := owner(fi); u == uid && g == gid {
		return nil
	}
	if err := c.root.Chown(p, uid, gid); err != nil {
		return fmt.Errorf("keeping the owner %d:%d: %w", uid, gid, err)
	}
	return nil
}

// owner returns the file's owner, and whether the platform says.
func owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, -1, false
	}
	return int(st.Uid), int(st.Gid), true
}

// relink returns the target that the workspace's copy of the link at rel
// gets: an absolute link into the checkout becomes a relative one, so the
// workspace reads its own copy, never the checkout.
func (c *checkout) relink(rel, target string) string {
	if !filepath.IsAbs(target) {
		return target
	}
	rest, ok := c.inside(target)
	if !ok || !filepath.IsLocal(rest) && rest != "" {
		return target
	}
	r, err := filepath.Rel(filepath.Dir(rel), filepath.Join(".", rest))
	if err != nil {
		return target
	}
	return r
}
