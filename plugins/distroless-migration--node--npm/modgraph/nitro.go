package modgraph

import (
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
)

// A Nuxt or Nitro app ships the .output folder its build writes, and
// starts it with node .output/server/index.mjs (or server/index.mjs once
// .output is copied to the working directory). That file and the chunks
// beside it bundle nitro's server runtime, the app's server routes,
// middleware, plugins and utilities, Nuxt's renderer with the app's pages
// and components (rendered on the server), and the dependencies they
// import; none of it is in the repository. So the graph starts where the
// same code comes from: nitro's node-server runtime, Nuxt's server-side
// runtime folders, and the app's sources of its server and its app
// (server/, app/, pages/, components/, layouts/, composables/, plugins/,
// middleware/, utils/, shared/, app.vue, error.vue), with nuxt.config
// and nitro.config, whose modules' runtime code the build bundles. More
// reachable code, never less: client-only code in those folders counts
// too. A limit: .vue files are not read, so what only a component's
// <script> imports is not reached from it (the traced boot records what
// runs).

// nitroAppDirs are the folders of a Nuxt or Nitro project whose files
// the server bundle holds (Nuxt 3's root layout, Nuxt 4's app/ and
// shared/, Nitro's server/ and its own routes/ and api/).
var nitroAppDirs = []string{"server", "app", "shared", "pages", "components", "layouts", "composables", "plugins",
	"middleware", "utils", "routes", "api", "modules"}

// nitroRootFiles are the project's own files at its root that the build
// reads or bundles, by base name without extension.
var nitroRootFiles = []string{"app", "error", "app.config", "nuxt.config", "nitro.config"}

// nitroRuntime are the folders of the installed nitropack and nuxt
// packages whose code the server bundle holds (read in nitropack 2.13.4
// and nuxt 4.5.2): the node-server preset's runtime and nitro's runtime,
// and Nuxt's server renderer and app runtime.
var nitroRuntime = map[string][]string{
	"nitropack": {"dist/presets/node/runtime/node-server.mjs", "dist/runtime/"},
	"nuxt":      {"dist/runtime/", "dist/app/", "dist/pages/runtime/", "dist/head/runtime/", "dist/components/runtime/"},
}

// nitroOutput returns the entries of a Nitro server's index.mjs at image
// path ip, when a stage's .output folder was copied so that its
// server/index.mjs is ip; ok is false otherwise.
func nitroOutput(j *images.Judged, set *images.FileSet, w *walker, ip string) (entries []string, why string, ok bool) {
	if set == nil || path.Base(ip) != "index.mjs" {
		return nil, "", false
	}
	var from *images.Generated
	for i, g := range set.Generated {
		sp := strings.TrimSuffix(g.StagePath, "/")
		if path.Base(sp) == ".output" && path.Join(g.ImagePath, "server/index.mjs") == ip ||
			path.Base(sp) == "server" && path.Base(path.Dir(sp)) == ".output" && path.Join(g.ImagePath, "index.mjs") == ip {
			from = &set.Generated[i]
			break
		}
	}
	if from == nil {
		return nil, "", false
	}
	proj, found := w.nitroProject(j.Context)
	if !found {
		return nil, "server/index.mjs is the Nitro server that " + from.StagePath + " holds, but no Nuxt or Nitro project (a package.json that depends on nuxt or nitropack, with a nuxt.config or nitro.config) was found in the build context", false
	}
	for pkg, parts := range nitroRuntime {
		manifest, found := w.resolve(path.Join(proj, "index.js"), pkg+"/package.json")
		if !found {
			continue
		}
		dir := path.Dir(manifest)
		for _, part := range parts {
			for _, f := range w.files {
				if rest, in := strings.CutPrefix(f, dir+"/"); in && loadable(f) && path.Ext(f) != "" &&
					(rest == part || strings.HasSuffix(part, "/") && strings.HasPrefix(rest, part)) && !strings.HasSuffix(f, ".d.ts") && !strings.HasSuffix(f, ".d.mts") {
					entries = append(entries, f)
				}
			}
		}
	}
	if !slices.ContainsFunc(entries, func(f string) bool { return strings.HasSuffix(f, "/node-server.mjs") }) {
		return nil, "server/index.mjs is the Nitro server of " + proj + ", but nitropack's node-server runtime is not installed", false
	}
	entries = append(entries, w.projectSources(proj, nitroRootFiles, nitroAppDirs)...)
	slices.Sort(entries)
	return entries, "server/index.mjs is the Nitro server (" + from.Stage + ":" + from.StagePath + "): nitro's and Nuxt's server runtime and the sources of " + proj, true
}

// nitroProject finds the Nuxt or Nitro project of the build context ctx:
// ctx itself when its package.json depends on nuxt or nitropack, else the
// one folder under it with a nuxt.config or nitro.config and such a
// package.json.
func (w *walker) nitroProject(ctx string) (string, bool) {
	return w.frameworkProject(ctx, []string{"nuxt.config.", "nitro.config."}, "nuxt", "nitropack", "nitro")
}
