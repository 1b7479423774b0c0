package modgraph

import (
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
)

// A Next.js app built with output: 'standalone' ships .next/standalone,
// whose server.js `next build` writes: it requires next and calls
// next/dist/server/lib/start-server, which serves the app's compiled
// pages, route handlers, middleware and instrumentation. None of that is
// in the repository, so the graph starts where the same code comes from:
// next's start-server module and the sources of its server-side code
// (pages/, app/, src/pages/, src/app/, middleware and instrumentation
// files). Client components are in those folders too and are counted with
// them: more reachable code, never less.
//
// next.config is not an entry: `next build` writes the resolved config
// into server.js (const nextConfig = {...}) and hands it to the server in
// __NEXT_PRIVATE_STANDALONE_CONFIG, and next's loadConfig returns that
// without loading next.config (next/dist/build/utils.js and
// next/dist/server/config.js, read in next 16.3.1). What next.config
// requires (dotenv-expand, say) runs at build time, in the builder.

// nextServerDirs are the folders of a Next app whose files the server runs
// compiled.
var nextServerDirs = []string{"pages", "app", "src/pages", "src/app"}

// nextRootFiles are the project's own files next's server loads, by base
// name without extension.
var nextRootFiles = []string{"middleware", "instrumentation", "src/middleware", "src/instrumentation"}

// nextStandalone returns the entries of a Next.js standalone server.js at
// image path ip, when a stage's .next/standalone output was copied so
// that its server.js is ip; ok is false otherwise.
func nextStandalone(j *images.Judged, set *images.FileSet, w *walker, ip string) (entries []string, why string, ok bool) {
	if set == nil || path.Base(ip) != "server.js" {
		return nil, "", false
	}
	var from *images.Generated
	sub := "" // the app's folder inside the standalone output, in a monorepo
	for i, g := range set.Generated {
		if path.Base(g.StagePath) != "standalone" || path.Base(path.Dir(g.StagePath)) != ".next" {
			continue
		}
		if rel, in := strings.CutPrefix(ip, strings.TrimSuffix(g.ImagePath, "/")+"/"); in {
			// A monorepo's standalone output mirrors the workspace:
			// rallly's server.js is apps/web/server.js in it.
			from, sub = &set.Generated[i], path.Dir(rel)
			break
		}
	}
	if from == nil {
		return nil, "", false
	}
	proj, found := "", false
	if sub != "." {
		d := path.Join(j.Context, sub)
		if w.manifestAt(d) == nil || !w.declared(path.Join(d, "package.json"), "next") {
			return nil, "", false // another server.js beside the standalone output
		}
		proj, found = d, true
	} else {
		proj, found = w.nextProject(j.Context)
	}
	if !found {
		return nil, "server.js is the Next.js standalone server that " + from.StagePath + " holds, but no Next.js project (a package.json that depends on next, with a next.config) was found in the build context", false
	}
	start, found := w.resolve(path.Join(proj, "index.js"), "next/dist/server/lib/start-server")
	if !found {
		return nil, "server.js is the Next.js standalone server of " + proj + ", but next/dist/server/lib/start-server is not installed", false
	}
	entries = []string{start}
	if !slices.ContainsFunc(w.modes, func(m serverMode) bool { return m.Package == nextProduction.Package }) {
		w.modes = append(w.modes, nextProductionFor(j))
	}
	entries = append(entries, w.projectSources(proj, nextRootFiles, nextServerDirs)...)
	return entries, "server.js is the Next.js standalone server (" + from.Stage + ":" + from.StagePath + "): next's " + start + " and the server-side sources of " + proj, true
}

// nextProject finds the Next.js project of the build context ctx: ctx
// itself when its package.json depends on next, else the one folder under
// it with a next.config and such a package.json.
func (w *walker) nextProject(ctx string) (string, bool) {
	return w.frameworkProject(ctx, []string{"next.config."}, "next")
}

// frameworkProject finds the project of the build context ctx that uses
// one of pkgs: ctx itself when its package.json depends on one, else the
// one folder under it with a configuration file whose name starts with
// one of configs and such a package.json.
func (w *walker) frameworkProject(ctx string, configs []string, pkgs ...string) (string, bool) {
	uses := func(dir string) bool {
		pj := path.Join(dir, "package.json")
		return w.manifestAt(dir) != nil && slices.ContainsFunc(pkgs, func(p string) bool { return w.declared(pj, p) })
	}
	if uses(ctx) {
		return ctx, true
	}
	var found []string
	for _, f := range w.files {
		b := path.Base(f)
		if !slices.ContainsFunc(configs, func(c string) bool { return strings.HasPrefix(b, c) }) || strings.Contains(f, "node_modules/") ||
			ctx != "." && !strings.HasPrefix(f, ctx+"/") {
			continue
		}
		if d := path.Dir(f); uses(d) && !slices.Contains(found, d) {
			found = append(found, d)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return "", false
}

// projectSources returns the project proj's own loadable files that are
// one of rootFiles (by path without extension) or under one of dirs.
func (w *walker) projectSources(proj string, rootFiles, dirs []string) []string {
	var out []string
	for _, f := range w.files {
		rel, in := strings.CutPrefix(f, strings.TrimSuffix(proj, ".")+"/")
		if proj == "." {
			rel, in = f, true
		}
		if !in || !loadable(f) || path.Ext(f) == "" || strings.Contains(rel, "node_modules/") {
			continue
		}
		if testSource(rel) {
			continue
		}
		base := strings.TrimSuffix(rel, path.Ext(rel))
		if slices.Contains(rootFiles, base) || slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(rel, d+"/") }) {
			out = append(out, f)
		}
	}
	return out
}

// testSource reports a project file that only its tests load: *.test.*
// and *.spec.* files, and those under __tests__ or __mocks__ (a test or
// tests folder under app/ may be a route, and stays). A framework's build
// starts at none of them; a server file that imports one still reaches
// it through the graph.
func testSource(rel string) bool {
	segs := strings.Split(rel, "/")
	base := segs[len(segs)-1]
	if strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") {
		return true
	}
	return slices.ContainsFunc(segs[:len(segs)-1], func(d string) bool { return d == "__tests__" || d == "__mocks__" })
}
