package runsc

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
)

// The backend resolves the command's executable on the host, in the same
// filesystem view the sandbox will have, before it starts runsc. That serves
// two ends: a missing executable is reported as exit 127 (as a shell does)
// rather than as a runsc failure, and the trace can name the binary that the
// container's first process runs, which gVisor's container/start point does
// not resolve (ENVIRONMENT.md, blind spot 2).

// lookupState is the outcome of a host-side lookup.
type lookupState uint8

const (
	lookupInvalid lookupState = iota
	// lookupFound: a regular file with an execute bit.
	lookupFound
	// lookupMissing: no such file (exit 127).
	lookupMissing
	// lookupNotExecutable: it exists but cannot be executed (exit 126).
	lookupNotExecutable
	// lookupUnknown: the path crosses a filesystem that only exists inside
	// the sandbox (/proc, /tmp, ...), or the host could not tell; runsc
	// decides.
	lookupUnknown
)

// maxSymlinks bounds symlink expansion, as Linux's MAXSYMLINKS does.
const maxSymlinks = 40

// fsView maps sandbox paths to host paths: the rootfs, with the workspace
// bind-mounted at mount (none when mount is ""). Paths under virtual are
// sandbox-only filesystems.
type fsView struct {
	rootfs    string
	mount     string
	workspace string
	virtual   []string
}

// lookup is the result of resolving one command.
type lookup struct {
	state lookupState
	// execfn is the path as runsc will exec it: argv[0] joined with the PATH
	// entry or cwd, before symlinks.
	execfn string
	// binary is execfn with every symlink resolved, inside the sandbox.
	binary string
}

// lookPath resolves argv0 as runsc does: a name without a slash is searched
// in the PATH of env, a relative path is taken from cwd.
func (v fsView) lookPath(argv0 string, env []string, cwd string) lookup {
	if strings.Contains(argv0, "/") {
		p := argv0
		if !path.IsAbs(p) {
			p = path.Join(cwd, p)
		}
		return v.check(path.Clean(p))
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	missing := lookup{state: lookupMissing, execfn: argv0}
	var notExec *lookup
	for _, dir := range strings.Split(pathVar, ":") {
		if !path.IsAbs(dir) {
			continue // runsc ignores relative PATH entries as well
		}
		l := v.check(path.Join(dir, argv0))
		switch l.state {
		case lookupFound, lookupUnknown:
			return l
		case lookupNotExecutable:
			if notExec == nil {
				notExec = &l
			}
		case lookupMissing:
		case lookupInvalid:
			return lookup{state: lookupUnknown, execfn: argv0}
		}
	}
	if notExec != nil {
		return *notExec
	}
	return missing
}

// check resolves one absolute sandbox path.
func (v fsView) check(p string) lookup {
	resolved, host, state := v.resolve(p)
	l := lookup{state: state, execfn: p, binary: resolved}
	if state != lookupFound {
		l.binary = ""
		return l
	}
	fi, err := os.Stat(host)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.state, l.binary = lookupMissing, ""
	case err != nil:
		l.state, l.binary = lookupUnknown, ""
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		l.state, l.binary = lookupNotExecutable, ""
	}
	return l
}

// resolve follows the symlinks of the absolute sandbox path p, confined to
// the sandbox's view: an absolute link target starts again at the sandbox
// root, and ".." never climbs above it. It returns the resolved sandbox path
// and its host path, with lookupFound when every component exists.
func (v fsView) resolve(p string) (resolved, host string, state lookupState) {
	links := 0
	done := "/"
	rest := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			done = path.Dir(done)
			continue
		}
		next := path.Join(done, name)
		h, ok := v.hostPath(next)
		if !ok {
			return "", "", lookupUnknown
		}
		fi, err := os.Lstat(h)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", "", lookupMissing
		case err != nil:
			return "", "", lookupUnknown
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		links++
		if links > maxSymlinks {
			return "", "", lookupUnknown
		}
		target, err := os.Readlink(h)
		if err != nil {
			return "", "", lookupUnknown
		}
		if path.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	h, ok := v.hostPath(done)
	if !ok {
		return "", "", lookupUnknown
	}
	return done, h, lookupFound
}

// hostPath maps an absolute, clean sandbox path to the host.
func (v fsView) hostPath(p string) (string, bool) {
	for _, vp := range v.virtual {
		if within(p, vp) {
			return "", false
		}
	}
	if v.mount != "" && within(p, v.mount) {
		return v.workspace + strings.TrimPrefix(p, v.mount), true
	}
	return v.rootfs + p, true
}

// within reports whether p is dir or below it. Both are clean and absolute.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/") || dir == "/"
}
