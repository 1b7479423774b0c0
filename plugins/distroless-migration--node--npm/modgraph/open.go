package modgraph

import (
	"context"
	"slices"
)

// A computed load of the app that no rule resolves (require(name) of a
// name read from configuration) may load any of the app's files: the
// files the walk did not reach stay open (Graph.DynamicIn). What those
// files load is open too. A route file that only such a load reaches may
// load a package that spawns a program, and that package's code is in
// the image and may run. So the walk goes on from every app source the
// main walk left open, other than tests (testSource), and each file it
// reaches that the main walk did not is open through the computed load
// that opened the file it came from. Those files are not Reached: no
// chain of literal loads leads to them from the entrypoint.
//
// What that second walk finds missing (a devDependency a build script
// loads) is not added to Graph.MissingPackages: an open file is only
// possibly loaded, and a tool's missing package would switch off
// reachability for every package. A package's own computed load found on
// the way opens that package's files, as it would on the main walk. The
// second walk does not enter a file the main walk reached: what that file
// loads, the main walk followed (a load in one of its functions that only
// an open file names is not made).

// reachedMark stands, in the second walk, for the parent of a file the
// main walk reached: the second walk does not enter it again.
const reachedMark = "\x00reached"

// openWalk walks from the app files the main walk left open and records
// the files reached only so in g.open.
func (w *walker) openWalk(ctx context.Context) error {
	sites := map[string]Site{}
	var roots []string
	for _, f := range w.files {
		if !appSource(f) || testSource(f) {
			continue
		}
		if _, seen := w.g.parent[f]; seen {
			continue
		}
		if d, ok := w.g.DynamicIn(f); ok {
			roots = append(roots, f)
			sites[f] = d
		}
	}
	if len(roots) == 0 {
		return nil
	}
	o := &walker{repo: w.repo, files: w.files, index: w.index,
		g:    &Graph{parent: map[string]string{}, line: map[string]int{}},
		lazy: lazyIndex{words: map[string]*wordStat{}, defs: map[string]int{}, pending: map[string][]deferred{}},
		pkgs: w.pkgs, names: w.names, tscfg: w.tscfg, outDirs: w.outDirs, parsers: w.parsers,
		modes: w.modes, texts: w.texts, prismaOut: w.prismaOut}
	// What the main walk reached, it followed: the second walk stops
	// there, and covers only what the open files add.
	for f := range w.g.parent {
		o.g.parent[f] = reachedMark
	}
	for _, r := range roots {
		o.g.parent[r] = ""
		o.queue = append(o.queue, r)
	}
	if err := o.run(ctx); err != nil {
		return err
	}
	w.g.Truncated = w.g.Truncated || o.g.Truncated
	w.g.open = map[string]Site{}
	for f := range o.g.parent {
		if _, seen := w.g.parent[f]; seen || PackageOf(f) == "" {
			continue
		}
		r := f
		for i := 0; o.g.parent[r] != "" && i < MaxFiles; i++ {
			r = o.g.parent[r]
		}
		w.g.open[f] = sites[r]
	}
	for _, d := range o.g.Dynamic {
		if PackageOf(d.File) != "" && !slices.Contains(w.g.Dynamic, d) {
			w.g.Dynamic = append(w.g.Dynamic, d)
		}
	}
	return nil
}
