package npmscripts

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// packages finds the package.json that a script invocation runs: in the
// container's working directory, in another directory (npm --prefix,
// pnpm -C, yarn --cwd, cd DIR &&), or in one workspace package (npm -w,
// pnpm --filter, yarn workspace). Directories are relative to the
// container's working directory, which is root in the repository and wd
// in the image.
type packages struct {
	repo *probe.Repo
	root string
	wd   string
	// set is the judged image's file set; nil when it is unknown.
	set *images.FileSet
}

// nodeRuns reports whether docker-entrypoint.sh runs node on word, the
// first word of the command: a path (absolute, or below the working
// directory) that is no file of the image but that node resolves to one.
func (ps packages) nodeRuns(word string) bool {
	if !strings.Contains(word, "/") || ps.set == nil {
		return false
	}
	_, ok := ps.set.NodeScript(ps.inImage(word))
	return ok
}

// inImage is word as a path in the image: relative ones are from the
// working directory.
func (ps packages) inImage(word string) string {
	if path.IsAbs(word) {
		return word
	}
	return path.Join(ps.wd, word)
}

// dir returns the folder of d, relative to the working directory, from
// cur; why says why it cannot be followed.
func (ps packages) dir(cur, d string) (string, string) {
	if path.IsAbs(d) {
		rel, ok := strings.CutPrefix(path.Clean(d), strings.TrimSuffix(ps.wd, "/")+"/")
		if path.Clean(d) == path.Clean(ps.wd) {
			return ".", ""
		}
		if !ok || ps.wd == "" {
			return "", "the directory " + d + " is outside the WORKDIR (" + ps.wd + "), whose files codegenie reads from the repository"
		}
		return rel, ""
	}
	out := path.Join(cur, d)
	if out == ".." || strings.HasPrefix(out, "../") {
		return "", "the directory " + d + " is outside the WORKDIR"
	}
	return out, ""
}

// locate returns the folder whose package.json inv runs, from cur.
func (ps packages) locate(cur string, inv shellcmd.ScriptInvocation) (string, string) {
	dir := cur
	if inv.Dir != "" {
		d, why := ps.dir(cur, inv.Dir)
		if why != "" {
			return "", why
		}
		dir = d
	}
	if inv.Workspace == "" {
		return dir, ""
	}
	members, why := ps.members(dir)
	if why != "" {
		return "", why
	}
	var byName, byPath []string
	for _, m := range members {
		sel := inv.Workspace
		if !shellcmd.IsPathSelector(sel) {
			if ok, _ := path.Match(sel, m.name); ok && (inv.Runner == shellcmd.PNPM || sel == m.name) {
				byName = append(byName, m.dir)
			}
		}
		if shellcmd.IsPathSelector(sel) || inv.Runner == shellcmd.NPM {
			want, why := ps.dir(dir, sel)
			if why != "" {
				return "", why
			}
			// npm -w DIR selects every workspace under DIR; pnpm ./glob
			// every one the pattern matches.
			ok, _ := path.Match(want, m.dir)
			if ok || inv.Runner == shellcmd.NPM && (want == "." || strings.HasPrefix(m.dir, want+"/")) {
				byPath = append(byPath, m.dir)
			}
		}
	}
	found := byName
	if len(found) == 0 {
		found = byPath
	}
	switch len(found) {
	case 0:
		return "", "no workspace package is " + inv.Workspace
	case 1:
		return found[0], ""
	}
	return "", inv.Workspace + " selects " + strconv.Itoa(len(found)) + " workspace packages, whose scripts would all run"
}

type member struct{ dir, name string }

// members lists the workspace packages of the workspace that dir is the
// root of or in: the nearest folder, from dir up, whose package.json has
// "workspaces" or that has a pnpm-workspace.yaml.
func (ps packages) members(dir string) ([]member, string) {
	for d := dir; ; d = path.Dir(d) {
		if pats, ok := ps.workspaceGlobs(d); ok {
			return ps.expand(d, pats), ""
		}
		if d == "." || d == "/" {
			return nil, "no workspaces are declared (package.json \"workspaces\" or pnpm-workspace.yaml)"
		}
	}
}

// workspaceGlobs reads folder d's workspace patterns.
func (ps packages) workspaceGlobs(d string) ([]string, bool) {
	return nodeproject.WorkspacePatterns(ps.repo.ReadFile, path.Join(ps.root, d))
}

// expand lists the packages that workspace root d's patterns match, less
// those a !pattern excludes.
func (ps packages) expand(d string, pats []string) []member {
	var out []member
	var excluded []string
	for _, p := range pats {
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			excluded = append(excluded, path.Join(d, strings.TrimPrefix(neg, "./")))
		}
	}
	for _, p := range pats {
		if strings.HasPrefix(p, "!") {
			continue
		}
		matches, err := ps.repo.Glob(path.Join(ps.root, d, strings.TrimPrefix(p, "./"), "package.json"))
		if err != nil {
			continue
		}
		for _, m := range matches {
			rel := path.Dir(m)
			if ps.root != "." {
				rel = strings.TrimPrefix(rel, ps.root+"/")
			}
			if slices.ContainsFunc(excluded, func(x string) bool { ok, _ := path.Match(x, rel); return ok }) ||
				slices.ContainsFunc(out, func(o member) bool { return o.dir == rel }) {
				continue
			}
			var f nodeproject.Facts
			if data, err := ps.repo.ReadFile(m); err == nil && nodeproject.Parse(data, &f) == nil {
				out = append(out, member{dir: rel, name: f.Name})
			}
		}
	}
	return out
}

// shipped reports whether the image holds a file of the repository at
// word, a path in the image (relative ones from the working directory):
// a docker-entrypoint.sh the Dockerfile copies over the node image's own.
func (ps packages) shipped(word string) bool {
	if ps.set == nil {
		return false
	}
	_, ok := ps.set.RepoPath(ps.inImage(word))
	return ok
}
