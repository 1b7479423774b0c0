package modgraph

import (
	"bytes"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/jsplatform"
)

// A framework's production server runs with its development flags off,
// so the loads those flags guard (Next.js's dev server, hot reloaders,
// TypeScript and Partytown set-up, telemetry, its own test harness) are
// never made, and what those modules run (webpack, git, npm, yarn) does
// not ship as reachable code. A mode applies only when the graph knows the
// start is that production server, and only to the framework's own files.

// serverMode is a production start's flags.
type serverMode struct {
	// Package is the framework's package; Skip are folders of it that
	// hold bundled third-party code, whose development flags are not the
	// framework's.
	Package string
	Skip    []string
	// Off are the conditions that are false in this mode, as written
	// (after parentheses): a load in the branch they take is not made.
	// On are those that are true: a load in their else, or after an
	// early exit on one, is not made.
	Off []string
	On  []string
	// Words are the cheap test for a file that may hold such a guard.
	Words [][]byte
	Why   string
	// AppLoads are folders of the package whose computed loads read the
	// app's build output and configuration, or other packages, never the
	// package's own files: they leave the rest of it unreached.
	AppLoads []string
}

// nextProduction is the Next.js standalone server: next build writes
// server.js to call startServer({ dir, isDev: false, ... }) (next 13.4 on;
// 12.2 to 13.3 made new NextServer({ ..., dev: false })), and next's server
// passes that on as opts.dev, options.dev and this.options.dev, the
// flags its dev-only requires test (next/dist/build/utils.js,
// server/lib/start-server.js, router-server.js and next.js, read in next
// 16.3.1). __NEXT_TEST_MODE is set only by Next's own test suites. The
// server.js that next build writes sets __NEXT_PRIVATE_STANDALONE_CONFIG
// to the configuration it resolved (build/utils.js, in every release
// from 12.2), and loadConfig returns that at once when it is set, before
// it reads, transpiles or validates a next.config (server/config.js, read
// in 15.5.0, 15.5.4 and 16.5.0).
var nextProduction = serverMode{
	Package: "next",
	Skip:    []string{"dist/compiled/"},
	Off: []string{"dev", "isDev", "opts.dev", "options.dev", "this.options.dev", "this.renderOpts.dev", "renderOpts.dev", "this.dev",
		"serverOptions.dev", "process.env.__NEXT_TEST_MODE", "process.env.__NEXT_TEST_MODE === 'jest'"},
	On:    []string{"process.env.__NEXT_PRIVATE_STANDALONE_CONFIG"},
	Words: [][]byte{[]byte("dev"), []byte("__NEXT_TEST_MODE"), []byte("__NEXT_PRIVATE_STANDALONE_CONFIG")},
	Why:   "Next.js's standalone server, whose development mode is off and whose configuration next build wrote",
	// next loads by a computed name only what is not next: the app's
	// build output in .next (manifests, pages, middleware,
	// instrumentation: require(join(this.distDir, 'server', ...))), its
	// configuration and what that names (next.config and its TypeScript,
	// adapterPath, cache handlers, PostCSS and Babel plugins, loaders, a
	// browserslist config), package.json files, TypeScript, and the
	// native @next/swc bindings; its own modules it requires by literal
	// names, and the third-party code it bundles in dist/compiled was
	// resolved when it was bundled. Read in next 16.2.6 and 16.3.1: about
	// 45 files of its own, most of them build and dev tooling, and the
	// compiled server runtimes (dist/compiled/next-server), whose computed
	// load is route-module's import(id) of a compiled page.
	AppLoads: []string{"dist/"},
}

// nextProductionFor is nextProduction for the image j: TURBOPACK is off
// too unless the image's ENV sets it. next's CLI sets it for next dev
// --turbopack and next build --turbopack, and the server.js that next
// build writes does not; next 15.5's startServer checks the app's
// config for Turbopack under it (validateTurboNextConfig, which runs
// the package manager to name it in a warning).
func nextProductionFor(j *images.Judged) serverMode {
	m := nextProduction
	if _, set := envValue(j, "TURBOPACK"); !set {
		m.Off = append(slices.Clip(m.Off), "process.env.TURBOPACK")
		m.Words = append(slices.Clip(m.Words), []byte("TURBOPACK"))
	}
	return m
}

// appLoads reports whether f's computed loads read the app's build output
// and configuration, not its package's own files, in the start's server
// mode.
func (w *walker) appLoads(f string) bool {
	for _, m := range w.modes {
		rel, ok := m.rel(f)
		if !ok {
			continue
		}
		if slices.ContainsFunc(m.AppLoads, func(d string) bool { return strings.HasPrefix(rel, d) }) {
			return true
		}
	}
	return false
}

// rel returns f's path inside the mode's package, when f is in it.
func (m serverMode) rel(f string) (string, bool) {
	pkg := PackageOf(f)
	if !strings.HasSuffix(pkg, "node_modules/"+m.Package) {
		return "", false
	}
	return strings.TrimPrefix(f, pkg+"/"), true
}

// modeFor returns the server mode that applies to file f, if one does.
func (w *walker) modeFor(f string, data []byte) (serverMode, bool) {
	return modeOf(w.modes, f, data)
}

// modeOf returns the one of modes that applies to file f, if one does.
func modeOf(modes []serverMode, f string, data []byte) (serverMode, bool) {
	for _, m := range modes {
		rel, ok := m.rel(f)
		if !ok {
			continue
		}
		if slices.ContainsFunc(m.Skip, func(d string) bool { return strings.HasPrefix(rel, d) }) {
			continue
		}
		if slices.ContainsFunc(m.Words, func(word []byte) bool { return bytes.Contains(data, word) }) {
			return m, true
		}
	}
	return serverMode{}, false
}

// condition reads a guard's condition for mode m: a branch taken when an
// Off condition holds (alone, or as a conjunct of &&), or the else of its
// negation (and what follows if (!dev) return), is not taken.
func (m serverMode) condition(cond string, holds bool) string {
	cond = jsplatform.Unparen(cond)
	if strings.Contains(cond, "||") || strings.Contains(cond, "?") {
		return ""
	}
	if !holds {
		if neg, ok := strings.CutPrefix(cond, "!"); ok && !strings.HasPrefix(neg, "=") && slices.Contains(m.Off, jsplatform.Unparen(neg)) {
			return m.Why
		}
		if slices.Contains(m.On, cond) {
			return m.Why // the else of if (on), what follows if (on) return
		}
		return ""
	}
	for _, part := range strings.Split(cond, "&&") {
		part = jsplatform.Unparen(part)
		if slices.Contains(m.Off, part) {
			return m.Why
		}
		if neg, ok := strings.CutPrefix(part, "!"); ok && !strings.HasPrefix(neg, "=") && slices.Contains(m.On, jsplatform.Unparen(neg)) {
			return m.Why
		}
	}
	return ""
}
