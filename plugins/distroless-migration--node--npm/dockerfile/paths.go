package dockerfile

import (
	"path"
	"slices"
	"strings"
)

// Workdir returns the working directory in effect at the end of stage i,
// following its FROM chain; "/" when none is set (the base image's may
// differ). It reads each instruction of the chain once.
func (f *File) Workdir(i int) string {
	wd := "/"
	for _, s := range f.Chain(i) {
		wd = f.stageWorkdir(s, wd)
	}
	return wd
}

// Workdirs returns the working directory in effect at the end of each
// stage of stage i's FROM chain, by stage index: Workdir of each, in one
// pass over the chain's instructions.
func (f *File) Workdirs(i int) map[int]string {
	out := map[int]string{}
	wd := "/"
	for _, s := range f.Chain(i) {
		wd = f.stageWorkdir(s, wd)
		out[s] = wd
	}
	return out
}

// stageWorkdir returns the working directory at the end of stage s, which
// starts in wd. Paths are lexical, so the relative WORKDIRs after the last
// absolute one join once: a stage of many relative WORKDIRs does not build
// each longer path in turn.
func (f *File) stageWorkdir(s int, wd string) string {
	parts := []string{wd}
	changed := false
	for _, in := range f.Stages[s].Instructions {
		if in.Command != "workdir" || len(in.Args) != 1 {
			continue
		}
		changed = true
		if path.IsAbs(in.Args[0]) {
			parts = append(parts[:0], in.Args[0])
		} else {
			parts = append(parts, in.Args[0])
		}
	}
	if !changed {
		return wd
	}
	return path.Join(parts...)
}

// CopiedTo returns the line of the last COPY or ADD of stage i's FROM
// chain that puts a file at the absolute path p: a single source copied
// to p, or a source of p's base name copied into p's folder
// (COPY --from=build /out/monolith /usr/local/bin/). A folder copied whole
// does not count: what it holds is not known here.
func (f *File) CopiedTo(i int, p string) (int, bool) {
	p = path.Clean(p)
	line, found := 0, false
	for _, op := range f.copyOps(i) {
		for _, src := range op.srcs {
			if strings.ContainsAny(src, "*?[$") || strings.HasSuffix(src, "/") || src == "." {
				continue
			}
			if !op.dir && op.dest == p || path.Join(op.dest, path.Base(src)) == p {
				line, found = op.line, true
			}
		}
	}
	return line, found
}

// Chain returns stage i's FROM chain, root first.
func (f *File) Chain(i int) []int {
	var c []int
	for i >= 0 && i < len(f.Stages) && len(c) <= len(f.Stages) {
		c = append(c, i)
		i = f.Stages[i].BaseStage
	}
	slices.Reverse(c)
	return c
}

func resolve(wd, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(wd, p)
}

// SourceOf maps a path in stage i's filesystem back to the build-context
// (repository) path that a COPY or ADD put there, following COPY --from
// into earlier stages. isDir tells whether a context path is a directory.
// ok is false when no COPY in the chain provides the path.
func (f *File) SourceOf(i int, containerPath string, isDir func(string) bool) (string, bool) {
	return f.sourceOf(i, path.Clean(containerPath), isDir, 0)
}

type copyOp struct {
	from string
	srcs []string
	dest string // absolute
	dir  bool   // dest is a directory
	line int
}

// copyOps lists the COPY and ADD instructions of stage i's FROM chain, in
// order, with their destinations resolved against the WORKDIR in effect.
func (f *File) copyOps(i int) []copyOp {
	var ops []copyOp
	for _, s := range f.Chain(i) {
		wd := "/"
		for _, in := range f.Stages[s].Instructions {
			switch in.Command {
			case "workdir":
				if len(in.Args) == 1 {
					wd = resolve(wd, in.Args[0])
				}
			case "copy", "add":
				if len(in.Args) < 2 {
					continue
				}
				dest := in.Args[len(in.Args)-1]
				srcs := in.Args[:len(in.Args)-1]
				ops = append(ops, copyOp{from: in.From, srcs: srcs, dest: resolve(wd, dest), dir: strings.HasSuffix(dest, "/") || len(srcs) > 1, line: in.Line})
			}
		}
	}
	return ops
}

func (f *File) sourceOf(i int, p string, isDir func(string) bool, depth int) (string, bool) {
	if depth > len(f.Stages) {
		return "", false
	}
	ops := f.copyOps(i)
	for j := len(ops) - 1; j >= 0; j-- {
		op := ops[j]
		for _, src := range op.srcs {
			if strings.ContainsAny(src, "*?[") || strings.Contains(src, "://") {
				continue
			}
			var cand string
			if op.from != "" {
				cand = path.Clean("/" + src) // a path in the other stage
			} else {
				cand = path.Clean(src)
			}
			// A source from another stage may be a file or a directory:
			// try both. A context source is whichever it is in the repo.
			srcIsDir := src == "." || src == "./" || strings.HasSuffix(src, "/")
			maybeDir := srcIsDir || op.from != "" || (isDir != nil && isDir(cand))
			maybeFile := !srcIsDir && (op.from != "" || isDir == nil || !isDir(cand))
			var mapped string
			if rem, ok := strings.CutPrefix(p, strings.TrimSuffix(op.dest, "/")+"/"); ok && maybeDir {
				mapped = path.Join(cand, rem)
			}
			if mapped == "" && maybeFile {
				if (!op.dir && p == op.dest) || p == path.Join(op.dest, path.Base(cand)) {
					mapped = cand
				}
			}
			if mapped == "" {
				continue
			}
			if op.from == "" {
				return strings.TrimPrefix(mapped, "./"), true
			}
			if st, ok := f.StageRef(op.from); ok {
				if r, ok := f.sourceOf(st, mapped, isDir, depth+1); ok {
					return r, true
				}
			}
		}
	}
	return "", false
}

// AppDir returns the directory that holds stage i's app: its working
// directory when its FROM chain sets one, else the deepest directory that
// holds every COPY and ADD destination of the chain (a Dockerfile with no
// WORKDIR that copies the app to /app and starts node /app/server.js).
// ok is false when the chain sets no WORKDIR and copies nothing, or
// copies into / itself, where the app's files cannot be told from the
// base image's.
func (f *File) AppDir(i int) (dir string, ok bool) {
	if wd := f.Workdir(i); wd != "/" {
		return wd, true
	}
	wd := "/"
	for _, s := range f.Chain(i) {
		for _, in := range f.Stages[s].Instructions {
			switch in.Command {
			case "workdir":
				if len(in.Args) == 1 {
					wd = resolve(wd, in.Args[0])
				}
			case "copy", "add":
				if len(in.Args) < 2 {
					continue
				}
				raw := in.Args[len(in.Args)-1]
				srcs := in.Args[:len(in.Args)-1]
				d := resolve(wd, raw)
				if !strings.HasSuffix(raw, "/") && len(srcs) == 1 && srcs[0] != "." && !strings.HasSuffix(srcs[0], "/") {
					d = path.Dir(d) // one source may be a file: its directory
				}
				if dir == "" {
					dir = d
				}
				for dir != "/" && d != dir && !strings.HasPrefix(d, dir+"/") {
					dir = path.Dir(dir)
				}
			}
		}
	}
	if dir == "" || dir == "/" {
		return "", false
	}
	return dir, true
}
