package childprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/imagedeps"
)

// needle is the module name every recognised use contains; compatNeedle
// is what the packages that export child_process's own functions under
// its names contain, and spawnNeedle cross-spawn's name (moduleSpecs).
var needle, compatNeedle, spawnNeedle = []byte("child_process"), []byte("child-process"), []byte("cross-spawn")

// needles are what a file that uses one of moduleSpecs holds.
var needles = [][]byte{needle, compatNeedle, spawnNeedle}

// moduleSpecs are the module specifiers whose functions are
// child_process's: the module itself, and packages that export its
// functions under the same names with the same arguments
// (promisify-child-process 4.1.2's index.cjs and child-process-promise
// 2.2.1's lib/index.js wrap exec, execFile, spawn and fork and pass their
// arguments through). An app's call of one of them with a literal command
// is judged like child_process's. cross-spawn's export is spawn itself,
// with spawn and sync as properties (crossSpawnValue).
var moduleSpecs = []string{"child_process", "node:child_process", "promisify-child-process", "child-process-promise", "cross-spawn"}

// session is one Run's state. Only scanAll runs concurrently, and its
// workers write nothing but their own result slots.
type session struct {
	repo  *probe.Repo
	files []string // sorted, from repo.Files

	rootReal    string // repo.Root with symlinks resolved
	nodeModules bool
	declared    int // production dependencies the root declares
	packages    []*pkg
	missing     []MissingDependency
	invalid     []invalidJSON
	outside     []string
	symlinks    bool // a symlink was followed: the output is uncacheable
	// image is the traced image's node_modules, on a traced run.
	image *imagedeps.Installed

	scannedPackages int

	// memo holds the scan results of files in mounted packages, by the
	// package's content key (probe.Dependencies.Memo); nil for none.
	memo *sync.Map
	// unavailable are the names of pinned packages a lockfile install
	// could not provide: they are reported as such, not as not installed.
	unavailable map[string]bool
	// dev is set on a --deps lockfile run that mounted the development
	// packages, which the judged image ships: the root's devDependencies
	// are then scanned as production code (probe.Dependencies.Dev).
	dev bool
}

func newSession(repo *probe.Repo, files []string) *session {
	root, err := filepath.EvalSymlinks(repo.Root)
	if err != nil {
		root = repo.Root // realPath then fails on its own
	}
	return &session{repo: repo, files: files, rootReal: root}
}

// task is one file to read.
type task struct {
	path   string // repository-relative path as listed
	lang   language
	origin Origin
	pkg    *pkg // the dependency, for OriginDependency
}

// result is what scanning one task found.
type result struct {
	read     bool // the file was read (it exists and is inside the repository)
	symlink  bool
	outside  bool
	tooLarge bool
	// tokenScanned: the file was too large to parse, and its calls come
	// from streamTokens.
	tokenScanned bool
	parsed       bool
	syntaxErr    *position
	calls        []call
}

// hasVendoredDir reports whether rel lies under a node_modules or .git
// directory at any depth: the files probe.Repo.Glob leaves out of patterns
// that do not start with those directories.
func hasVendoredDir(rel string) bool {
	return strings.HasPrefix(rel, "node_modules/") || strings.Contains(rel, "/node_modules/") ||
		strings.HasPrefix(rel, ".git/") || strings.Contains(rel, "/.git/")
}

// appTasks lists the application's own source files.
func (s *session) appTasks() []task {
	var tasks []task
	for _, f := range s.files {
		lang, ok := languageFor(f, appExts)
		if !ok || hasVendoredDir(f) {
			continue
		}
		tasks = append(tasks, task{path: f, lang: lang, origin: OriginApp})
	}
	return tasks
}

// dependencyTasks lists the JavaScript files of every resolved production
// package, leaving out nested node_modules (those are packages of their own).
func (s *session) dependencyTasks() []task {
	var tasks []task
	for _, p := range s.packages {
		if !p.scan {
			continue
		}
		s.scannedPackages++
		prefix := p.dir + "/"
		for i := s.search(prefix); i < len(s.files) && strings.HasPrefix(s.files[i], prefix); i++ {
			rest := s.files[i][len(prefix):]
			if strings.HasPrefix(rest, "node_modules/") || strings.Contains(rest, "/node_modules/") {
				continue
			}
			lang, ok := languageFor(rest, depExts)
			if !ok {
				continue
			}
			tasks = append(tasks, task{path: s.files[i], lang: lang, origin: OriginDependency, pkg: p})
		}
	}
	return tasks
}

// languageFor picks the grammar for a file name with one of exts, leaving
// out TypeScript declaration files.
func languageFor(name string, exts []string) (language, bool) {
	ext := path.Ext(name)
	if !slices.Contains(exts, ext) {
		return 0, false
	}
	switch ext {
	case ".ts", ".cts", ".mts":
		if strings.HasSuffix(name, ".d"+ext) {
			return 0, false
		}
		return langTS, true
	case ".tsx":
		return langTSX, true
	}
	return langJS, true
}

// scanAll reads every task with a bounded pool of workers, each with its
// own parsers and read buffer. Results are in task order.
func (s *session) scanAll(ctx context.Context, tasks []task) ([]result, error) {
	results := make([]result, len(tasks))
	workers := min(runtime.GOMAXPROCS(0), len(tasks))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := newScanner()
			defer sc.close()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(tasks) {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				r, err := s.scanFile(ctx, sc, &tasks[i])
				if err != nil {
					errs[w] = err
					next.Store(int64(len(tasks))) // stop the others
					return
				}
				results[i] = r
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return results, nil
}

// scanFile reads one file, searches it, and parses it when it names
// child_process in a string literal.
func (s *session) scanFile(ctx context.Context, sc *scanner, t *task) (result, error) {
	if s.memo != nil && t.origin == OriginDependency {
		// A mounted package's files are content-addressed by its key: a
		// result found for them once holds wherever it is mounted.
		if m, inside, ok := s.repo.MountOf(t.path); ok && m.Key != "" {
			k := memoKey{m.Key, inside, t.lang}
			if v, ok := s.memo.Load(k); ok {
				return v.(result), nil
			}
			r, err := s.scanFileUncached(ctx, sc, t)
			if err == nil {
				s.memo.Store(k, r)
			}
			return r, err
		}
	}
	return s.scanFileUncached(ctx, sc, t)
}

// memoKey names a file of a mounted package by content.
type memoKey struct {
	pkg, file string
	lang      language
}

func (s *session) scanFileUncached(ctx context.Context, sc *scanner, t *task) (result, error) {
	var r result
	f, err := openNoFollow(s.repo.Abs(t.path))
	if isSymlinkErr(err) {
		r.symlink = true
		var inside bool
		f, inside, err = s.openSymlink(t.path)
		if err == nil && !inside {
			r.outside = true
			return r, nil
		}
	}
	if isNotExist(err) {
		return r, nil // vanished since the listing, or a dangling symlink
	}
	if errors.Is(err, probe.ErrNotRegular) {
		return r, nil // a FIFO, or a symlink to a directory, named like a source file
	}
	if err != nil {
		return r, fmt.Errorf("reading %s: %w", t.path, err)
	}
	defer func() { _ = f.Close() }()
	size, regular, err := f.stat()
	if err != nil {
		return r, fmt.Errorf("reading %s: %w", t.path, err)
	}
	if !regular {
		return r, nil // a symlink to a directory named like a source file
	}
	r.read = true
	if size > MaxParseBytes {
		ts, err := streamTokens(f, MaxTokenScanBytes)
		if err != nil {
			return r, fmt.Errorf("reading %s: %w", t.path, err)
		}
		if !ts.mentions {
			return r, nil
		}
		r.tokenScanned, r.calls = true, ts.calls
		r.tooLarge = ts.unclassified || ts.truncated
		return r, nil
	}
	src, err := sc.read(f, size)
	if err != nil {
		return r, fmt.Errorf("reading %s: %w", t.path, err)
	}
	if !mentionsModule(src) {
		return r, nil
	}
	if len(src) > MaxParseBytes { // it grew since the stat
		r.tooLarge = true
		return r, nil
	}
	fr, err := sc.scanFor(ctx, t.lang, src, t.origin == OriginApp)
	if err != nil {
		return r, fmt.Errorf("parsing %s: %w", t.path, err)
	}
	r.parsed, r.calls, r.syntaxErr = true, fr.calls, fr.syntaxErr
	return r, nil
}

// mentionsModule reports whether src holds one of moduleSpecs between
// matching quotes (single, double or backtick): the only spellings the
// analysis recognises. It is the cheap test that decides whether a file is
// parsed.
func mentionsModule(src []byte) bool {
	for _, nd := range needles {
		for off := 0; ; {
			i := bytes.Index(src[off:], nd)
			if i < 0 {
				break
			}
			start := off + i
			off = start + len(nd)
			if quotedSpec(src, start, string(nd)) {
				return true
			}
		}
	}
	return false
}

// loadsModule reports whether src loads one of moduleSpecs: the quoted
// name follows require(, import( or from. The token scan of a bundle too
// large to parse asks it, since a bundler's list of node's built-in
// modules (webpack's externals, ["buffer", "child_process", …]) names
// child_process without loading it.
func loadsModule(src []byte) bool {
	for _, spec := range moduleSpecs {
		for _, q := range []string{"'", "\"", "`"} {
			lit := []byte(q + spec + q)
			for off := 0; ; {
				i := bytes.Index(src[off:], lit)
				if i < 0 {
					break
				}
				at := off + i
				off = at + len(lit)
				before := bytes.TrimRight(src[:at], " \t\r\n")
				if bytes.HasSuffix(before, []byte("require(")) || bytes.HasSuffix(before, []byte("import(")) {
					return true
				}
				if k := len(before) - len("from"); bytes.HasSuffix(before, []byte("from")) && (k == 0 || !isIdent(before[k-1])) {
					return true
				}
			}
		}
	}
	return false
}

// quotedSpec reports whether the needle nd at src[start:] is inside a
// quoted string that is one of moduleSpecs.
func quotedSpec(src []byte, start int, nd string) bool {
	for _, spec := range moduleSpecs {
		k := strings.Index(spec, nd)
		if k < 0 {
			continue
		}
		from, to := start-k-1, start-k+len(spec)
		if from < 0 || to >= len(src) {
			continue
		}
		q := src[from]
		if (q == '\'' || q == '"' || q == '`') && src[to] == q && string(src[from+1:to]) == spec {
			return true
		}
	}
	return false
}

// openSymlink opens the target of the symlink rel if it lies inside the
// repository.
func (s *session) openSymlink(rel string) (file, bool, error) {
	real, inside, err := s.realPath(rel)
	if err != nil || !inside {
		return file{}, inside, err
	}
	f, err := openFollow(s.repo.Abs(real))
	return f, true, err
}

// realPath resolves every symlink in rel and returns the result relative to
// the repository root, and whether it lies inside the repository. It is
// safe for concurrent use.
func (s *session) realPath(rel string) (string, bool, error) {
	real, err := filepath.EvalSymlinks(s.repo.Abs(rel))
	if err != nil {
		return "", false, err
	}
	r, err := filepath.Rel(s.rootReal, real)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false, nil
	}
	return filepath.ToSlash(r), true, nil
}

// read reads f, whose size was size at the stat, into the scanner's
// buffer. It stops at size bytes (saving the read that would see EOF), or
// once it holds more than MaxParseBytes. The bytes are valid until the
// next read.
func (sc *scanner) read(f io.Reader, size int64) ([]byte, error) {
	if int64(cap(sc.buf)) < size+1 {
		sc.buf = make([]byte, 0, max(size+1, 64<<10))
	}
	buf := sc.buf[:0]
	if size == 0 {
		return buf, nil
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) > MaxParseBytes {
				return buf, nil
			}
			buf = append(buf, 0)[:len(buf)]
			sc.buf = buf
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) || (err == nil && int64(len(buf)) >= size) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// streamMentions is mentionsModule over a reader, without holding all of it
// in memory.
func streamMentions(r io.Reader) (bool, error) {
	const overlap = len("'promisify-child-process'") - 1
	buf := make([]byte, 256<<10)
	keep := 0
	for {
		n, err := r.Read(buf[keep:])
		if n > 0 {
			window := buf[:keep+n]
			if mentionsModule(window) {
				return true, nil
			}
			keep = min(overlap, len(window))
			copy(buf, window[len(window)-keep:])
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// isSymlinkErr reports the error of opening a symlink with O_NOFOLLOW.
func isSymlinkErr(err error) bool { return errors.Is(err, syscall.ELOOP) }
