package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/codegenie/codegenie/internal/regfile"
)

// MaxFileBytes bounds a single file read through a Repo. Larger files are
// an error rather than a silent truncation.
const MaxFileBytes = 64 << 20

// ErrNotDirectory reports a repository path that is not a directory.
var ErrNotDirectory = errors.New("not a directory")

// ErrPathEscapes reports a repository path that resolves, through a
// symlink, to a file outside the repository. Such a file is never read.
var ErrPathEscapes = errors.New("path escapes the repository")

// ReasonPathEscapes is the reason of a probe result that met a path
// escaping the repository.
const ReasonPathEscapes Reason = "path_escapes_repository"

// ErrNotRegular reports a repository path that is not a regular file: a
// FIFO, a socket, a device or a directory where a file was expected. Such a
// path is never read (reading a FIFO would wait for a writer for ever). The
// error is an *fs.PathError that names the file, wrapping a
// *regfile.NotRegularError that says what it is.
var ErrNotRegular = regfile.ErrNotRegular

// ReasonNotRegular is the reason of a probe result that met a repository
// file that is not a regular file.
const ReasonNotRegular Reason = "not_a_regular_file"

// Repo is a read-only view of a repository on the host. It lists files
// lazily, once, and is safe for concurrent use. Paths it returns are
// slash-separated and relative to Root.
type Repo struct {
	// Root is the absolute, cleaned repository path.
	Root string

	once  sync.Once
	files []string   // sorted; regular files and symlinks
	segs  [][]string // files[i] split at "/"
	err   error
	globs sync.Map // pattern → []string, for probes sharing patterns
	// derived holds Analyzer results (derivedKey → *derivedEntry).
	derived sync.Map
	// mounts are sorted by Path; byPath indexes them. See Mount.
	mounts []Mount
	byPath map[string]Mount
}

// Mount is a host folder shown inside a repository view at Path, as if it
// were there: a dependency unpacked elsewhere, seen at its node_modules
// path. Files under Path come from Dir only; a deeper mount wins over a
// shallower one, and any mount over the repository's own files.
type Mount struct {
	// Path is repository-relative and slash-separated (node_modules/a).
	Path string
	// Dir is the host folder.
	Dir string
	// Key names Dir's content (a package's integrity), so that results
	// derived from it alone can be reused wherever it is mounted, and its
	// files are keyed by it rather than read; "" for none. A keyed Dir
	// must not change.
	Key string
	// Files, when set, lists Dir's regular files (slash-separated,
	// relative to Dir), so that the view need not walk Dir: a keyed folder
	// is listed once per process, not once per repository.
	Files []string
}

// AddMounts adds mounts to the view. It must be called before anything
// lists or reads the repository, and is not safe for concurrent use.
func (r *Repo) AddMounts(ms ...Mount) error {
	for _, m := range ms {
		if m.Path == "" || path.Clean(m.Path) != m.Path || path.IsAbs(m.Path) || m.Path == ".." || strings.HasPrefix(m.Path, "../") {
			return fmt.Errorf("mount path %q is not a clean repository-relative path", m.Path)
		}
		if !filepath.IsAbs(m.Dir) {
			return fmt.Errorf("mount %s: folder %q is not absolute", m.Path, m.Dir)
		}
		if r.byPath == nil {
			r.byPath = make(map[string]Mount)
		}
		if _, dup := r.byPath[m.Path]; dup {
			return fmt.Errorf("two mounts at %s", m.Path)
		}
		r.mounts = append(r.mounts, m)
		r.byPath[m.Path] = m
	}
	sort.SliceStable(r.mounts, func(i, j int) bool { return r.mounts[i].Path < r.mounts[j].Path })
	return nil
}

// MountOf returns the deepest mount that holds rel, and rel's path inside
// its folder.
func (r *Repo) MountOf(rel string) (Mount, string, bool) {
	if len(r.byPath) == 0 {
		return Mount{}, "", false
	}
	// A path that climbs (node_modules/a/../../x) names what it cleans to.
	rel = path.Clean(rel)
	for i := len(rel) - 1; i > 0; i-- {
		if rel[i] != '/' {
			continue
		}
		if m, ok := r.byPath[rel[:i]]; ok {
			return m, rel[i+1:], true
		}
	}
	return Mount{}, "", false
}

// Mounts returns the view's mounts, sorted by Path.
func (r *Repo) Mounts() []Mount { return r.mounts }

// OpenRepo checks that dir is a readable directory and returns its view.
func OpenRepo(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	// The root the user names may be a link to the checkout (~/src/app
	// -> /data/app): the view is of the folder it leads to, whose walk
	// would otherwise stop at the link. Links inside it are still not
	// followed out of it.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open repository", Path: dir, Err: ErrNotDirectory}
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	f.Close()
	return &Repo{Root: abs}, nil
}

// Abs returns the host path of the repository-relative path rel.
func (r *Repo) Abs(rel string) string {
	if m, inside, ok := r.MountOf(rel); ok {
		return filepath.Join(m.Dir, filepath.FromSlash(inside))
	}
	return filepath.Join(r.Root, filepath.FromSlash(rel))
}

// Open opens rel for reading through the repository root: a symlink that
// leads outside the repository is refused with ErrPathEscapes, so no probe
// reads (or quotes) a host file. Only a regular file is opened, without
// blocking; anything else is refused with ErrNotRegular.
func (r *Repo) Open(rel string) (*os.File, error) {
	if m, inside, ok := r.MountOf(rel); ok {
		f, err := regfile.OpenInRoot(m.Dir, filepath.FromSlash(inside))
		if errors.Is(err, ErrNotRegular) {
			return nil, &fs.PathError{Op: "open", Path: rel, Err: errors.Unwrap(err)}
		}
		return f, err
	}
	f, err := regfile.OpenInRoot(r.Root, filepath.FromSlash(rel))
	if err == nil {
		return f, nil
	}
	if errors.Is(err, ErrNotRegular) {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: errors.Unwrap(err)}
	}
	if r.escapes(rel) {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: ErrPathEscapes}
	}
	// os.Root refuses absolute symlinks even when they lead back into the
	// repository: open the target by its path inside the root instead.
	if real, rerr := filepath.EvalSymlinks(r.Abs(rel)); rerr == nil {
		if root, rerr := filepath.EvalSymlinks(r.Root); rerr == nil {
			if inside, rerr := filepath.Rel(root, real); rerr == nil && inside != ".." && !strings.HasPrefix(inside, ".."+string(filepath.Separator)) {
				f, ierr := regfile.OpenInRoot(r.Root, inside)
				if ierr == nil {
					return f, nil
				}
				if errors.Is(ierr, ErrNotRegular) {
					return nil, &fs.PathError{Op: "open", Path: rel, Err: errors.Unwrap(ierr)}
				}
			}
		}
	}
	return nil, err
}

// escapes reports whether rel resolves to a path outside the root: the
// file itself, or the deepest folder above it that exists when it does
// not (lib/missing.js under a lib that links out escapes too).
func (r *Repo) escapes(rel string) bool {
	real := r.resolve(rel)
	if real == "" {
		return false
	}
	root, err := filepath.EvalSymlinks(r.Root)
	if err != nil {
		root = r.Root
	}
	return real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) &&
		real != r.Root && !strings.HasPrefix(real, r.Root+string(filepath.Separator))
}

// resolve returns the host path rel leads to, following symlinks: for a
// path that does not exist, that of its deepest existing ancestor joined
// with the rest, and a dangling link's target read one hop. It is "" when
// nothing on the path can be read.
func (r *Repo) resolve(rel string) string {
	p, rest := filepath.Clean(filepath.FromSlash(rel)), ""
	for {
		abs := r.Abs(p)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return filepath.Join(real, rest)
		}
		if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if t, err := os.Readlink(abs); err == nil {
				if !filepath.IsAbs(t) {
					t = filepath.Join(filepath.Dir(abs), t)
				}
				return filepath.Join(t, rest)
			}
		}
		if p == "." || p == string(filepath.Separator) || filepath.Dir(p) == p {
			return ""
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = filepath.Dir(p)
	}
}

// UnreadReason returns the reason for a result whose input could not be
// read through the repository's own doing: ReasonPathEscapes for a
// symlink out of it, ReasonNotRegular for a FIFO, socket or device. It is
// empty for any other error.
func UnreadReason(err error) Reason {
	switch {
	case errors.Is(err, ErrPathEscapes):
		return ReasonPathEscapes
	case errors.Is(err, ErrNotRegular):
		return ReasonNotRegular
	}
	return ""
}

// DescribeReadError says why a repository file could not be read, in words
// that never quote the file: for a path that escapes the repository, only
// that fact.
func DescribeReadError(err error) string {
	if errors.Is(err, ErrPathEscapes) {
		return "it is a symlink that leads outside the repository; it was not read"
	}
	if nr, ok := errors.AsType[*regfile.NotRegularError](err); ok {
		return "it is " + nr.Error() + "; it was not read"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// ReadFile reads rel through Open, up to MaxFileBytes; a larger file is a
// *regfile.TooLargeError.
func (r *Repo) ReadFile(rel string) ([]byte, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := regfile.ReadAll(f, MaxFileBytes)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "read", Path: rel, Err: err}
	}
	return b, nil
}

// Exists reports whether rel names a file (not a directory) in the repo.
func (r *Repo) Exists(rel string) bool {
	fi, err := os.Lstat(r.Abs(rel))
	return err == nil && !fi.IsDir()
}

// Files returns every regular file and symlink under Root, sorted, except
// those under .git. Directory symlinks are listed, not followed.
func (r *Repo) Files() ([]string, error) {
	r.once.Do(func() {
		r.files, r.err = r.walk()
		r.segs = make([][]string, len(r.files))
		for i, f := range r.files {
			r.segs[i] = strings.Split(f, "/")
		}
	})
	return r.files, r.err
}

func (r *Repo) walk() ([]string, error) {
	var files []string
	err := filepath.WalkDir(r.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("listing repository: %w", err)
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != r.Root {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(r.Root, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !r.mounted(rel) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, m := range r.mounts {
		if m.Files != nil {
			for _, f := range m.Files {
				rel := m.Path + "/" + f
				if owner, _, _ := r.MountOf(rel); owner.Path == m.Path {
					files = append(files, rel)
				}
			}
			continue
		}
		err := filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("listing %s (mounted at %s): %w", m.Dir, m.Path, err)
			}
			if d.IsDir() {
				return nil
			}
			inside, err := filepath.Rel(m.Dir, p)
			if err != nil {
				return err
			}
			rel := m.Path + "/" + filepath.ToSlash(inside)
			if owner, _, _ := r.MountOf(rel); owner.Path == m.Path {
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	return files, nil
}

// mounted reports whether a mount hides the repository's own rel.
func (r *Repo) mounted(rel string) bool {
	_, _, ok := r.MountOf(rel)
	return ok
}

// Glob returns the files matching pattern, sorted. Callers must not
// modify the returned slice: results are shared between callers. A pattern is a
// slash-separated path whose segments use path.Match syntax, plus "**" for
// any number of segments. Unless the pattern starts with node_modules or
// .git, matches inside those directories are left out. A pattern with no
// metacharacters is looked up directly, without listing the repository.
func (r *Repo) Glob(pattern string) ([]string, error) {
	if _, err := path.Match(strings.ReplaceAll(pattern, "**", "x"), ""); err != nil {
		return nil, fmt.Errorf("bad pattern %q: %w", pattern, err)
	}
	if !strings.ContainsAny(pattern, `*?[\`) {
		if r.Exists(pattern) {
			return []string{pattern}, nil
		}
		return nil, nil
	}
	if v, ok := r.globs.Load(pattern); ok {
		return v.([]string), nil
	}
	files, err := r.Files()
	if err != nil {
		return nil, err
	}
	pat := strings.Split(pattern, "/")
	vendored := pat[0] == "node_modules" || pat[0] == ".git"
	// A last segment "*<literal>" (such as *.js) lets most paths be
	// rejected with a suffix check before matching.
	// A literal last segment (package.json) must equal the base name.
	suffix, base := "", ""
	switch last := pat[len(pat)-1]; {
	case !strings.ContainsAny(last, `*?[\`):
		base = last
	case strings.HasPrefix(last, "*") && !strings.ContainsAny(last[1:], `*?[\`):
		suffix = last[1:]
	}
	var out []string
	for i, f := range files {
		if suffix != "" && !strings.HasSuffix(f, suffix) {
			continue
		}
		segs := r.segs[i]
		if base != "" && segs[len(segs)-1] != base {
			continue
		}
		if !vendored && hasVendoredSegment(segs[:len(segs)-1]) {
			continue
		}
		if matchSegments(pat, segs) {
			out = append(out, f)
		}
	}
	r.globs.Store(pattern, out)
	return out, nil
}

func hasVendoredSegment(dirs []string) bool {
	for _, d := range dirs {
		if d == "node_modules" || d == ".git" {
			return true
		}
	}
	return false
}

// MatchSegments matches path segments against pattern segments, each a
// path.Match pattern, where "**" matches zero or more segments.
func MatchSegments(pat, segs []string) bool { return matchSegments(pat, segs) }

// matchSegments matches path segments against pattern segments, where "**"
// matches zero or more segments.
func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
