package childprocess

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/imagedeps"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/modgraph"
)

// Scope says whether a finding's code ships in the judged image and runs.
type Scope string

// The scopes. Only Reachable and Unresolved findings can block.
const (
	// ScopeReachable: the file is in the image and the entrypoint loads it.
	ScopeReachable Scope = "reachable"
	// ScopeUnresolved: the file is in the image (or may be), and whether it
	// runs is unknown; Note says why.
	ScopeUnresolved Scope = "in_image_unresolved"
	// ScopeNotReachable: in the image, but nothing the entrypoint loads
	// loads it.
	ScopeNotReachable Scope = "not_reachable"
	// ScopeNotInImage: the judged image does not hold the file.
	ScopeNotInImage Scope = "not_in_image"
)

// Graph summarises the module graph the scopes come from.
type Graph struct {
	Entries  []string `json:"entries,omitempty"`
	EntryWhy string   `json:"entry_why,omitempty"`
	Reached  int      `json:"reached"`
	Complete bool     `json:"complete"`
	// Unresolved says what the walk could not follow.
	Unresolved []string `json:"unresolved,omitempty"`
	// Escapes are loads that leave the repository through a symlink.
	Escapes         []string `json:"escapes,omitempty"`
	Dynamic         int      `json:"dynamic_loads"`
	MissingPackages []string `json:"missing_packages,omitempty"`
	// FileSet is how the image's files were found.
	ImageFiles           int      `json:"image_files"`
	InstallsDependencies bool     `json:"installs_dependencies"`
	FileSetUnresolved    []string `json:"file_set_unresolved,omitempty"`
}

// scoper classifies findings against the judged image.
type scoper struct {
	ctx context.Context
	set *images.FileSet
	g   *modgraph.Graph
	// image is the traced image's node_modules, on a traced run.
	image *imagedeps.Installed
	// lockfileWhole is set on a --deps lockfile run whose install provided
	// every pinned production package, for an image that installs only
	// those: the mounted node_modules is the image's.
	lockfileWhole bool
	// mentions, on a --deps lockfile run for an image whose every install
	// is from the lockfiles read, reports whether they may pin a package
	// (probe.Dependencies.Mentions); nil otherwise.
	mentions func(string) bool
}

func newScoper(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (*scoper, *Graph, error) {
	set, err := images.Files.Of(ctx, repo, pctx)
	if err != nil {
		return nil, nil, err
	}
	g, err := modgraph.Of.Of(ctx, repo, pctx)
	if err != nil {
		return nil, nil, err
	}
	sum := &Graph{}
	if g != nil {
		sum.Entries, sum.EntryWhy, sum.Reached, sum.Complete = g.Entries, g.EntryWhy, g.Size(), g.Complete()
		sum.Unresolved, sum.Dynamic, sum.MissingPackages = g.Unresolved, len(g.Dynamic), g.MissingPackages
		sum.Escapes = g.Escapes
	}
	if set != nil {
		sum.ImageFiles, sum.InstallsDependencies, sum.FileSetUnresolved = len(set.Files), set.InstallsDependencies, set.Unresolved
	}
	sc := &scoper{ctx: ctx, set: set, g: g}
	// mountedAsImage: what was mounted is what the image's install
	// places, the production packages for an image that omits the
	// development ones, or every package for one that keeps them.
	mountedAsImage := func(d *probe.Dependencies) bool {
		return set.OmitsDevDependencies || d.Dev && set.InstallsDependencies
	}
	// A package a step adds by name that no lockfile pins (npm install
	// bufferutil after npm ci) may be in the image unmounted.
	addsUnpinned := func(d *probe.Dependencies) bool {
		return set.AddsPackages && (d.Mentions == nil || !addedPinned(set.AddedPackages, d.Mentions))
	}
	if d := pctx.Dependencies; d != nil && len(d.Unavailable) == 0 && set != nil && mountedAsImage(d) && !addsUnpinned(d) {
		sc.lockfileWhole = true
	}
	if d := pctx.Dependencies; d != nil && d.Mentions != nil && set != nil && set.InstallsDependencies && (!set.AddsPackages || addedPinned(set.AddedPackages, d.Mentions)) {
		sc.mentions = d.Mentions
		if mountedAsImage(d) && !set.AddsPackages {
			// Every package the lockfiles pin for the image's install is
			// mounted but the unavailable ones, and the image adds no
			// package by name: a package the walk misses is in the image
			// only if it is one that could not be provided.
			lost := unavailableNames(d.Unavailable)
			sc.mentions = func(name string) bool { return lost[name] }
		}
	}
	return sc, sum, nil
}

// unavailableNames are the names of the pinned packages that could not be
// provided.
func unavailableNames(us []probe.UnavailableDependency) map[string]bool {
	names := make(map[string]bool, len(us))
	for _, u := range us {
		names[u.Name] = true
	}
	return names
}

// addedPinned reports that every package a step of the image adds by
// name (npm add prisma@7) is one the lockfiles pin too: what it brings is
// then what they pin for it, so a package they do not name is still not
// in the image. An adding step whose packages are unknown (added is nil)
// leaves that unknown.
func addedPinned(added []string, mentions func(string) bool) bool {
	return len(added) > 0 && !slices.ContainsFunc(added, func(p string) bool { return !mentions(p) })
}

// scope classifies one finding and, when it is reachable, gives the load
// chain, each step with the line that loads the next and the last with the
// call (server.js:1 → lib/x.js:3 → node_modules/a/index.js:12).
func (s *scoper) scope(f *Finding) {
	if s == nil || s.set == nil {
		f.Scope, f.ScopeNote = ScopeUnresolved, "no parsed Dockerfile: the image's files are unknown, so the finding counts as in the image"
		return
	}
	if f.Platform != "" {
		f.Scope, f.ScopeNote = ScopeNotReachable, "runs only on "+f.Platform+" (a process.platform test guards it); the image runs Linux"
		return
	}
	ships, known := s.set.Ships(f.File)
	if s.image != nil && s.image.Holds(f.File) {
		ships, known = true, true // read back from the built image
	}
	if !ships && known && s.set.ContextGuessed && (s.g == nil || len(s.g.Entries) == 0) {
		// The context was guessed, and the entrypoint is not in it: the
		// guess may be wrong, so "not in the image" is not known.
		known = false
	}
	if !ships && known {
		f.Scope, f.ScopeNote = ScopeNotInImage, "not in the image: no COPY or ADD of the judged target brings this file in"
		return
	}
	if s.g.Reached(f.File) && !s.g.Names(f.Within) {
		// Loaded, but the call is in the body of a function that no
		// reached file names: nothing calls it.
		f.Scope, f.ScopeNote = ScopeNotReachable, "in "+f.Within+"(), a function that no file the entrypoint reaches names, so nothing calls it"
		return
	}
	if s.g.Reached(f.File) && f.Origin == OriginDependency && f.Line > 0 {
		// Named, but only in the bodies of functions that never run
		// themselves (modgraph/live.go).
		if runs, why := s.g.Runs(s.ctx, f.File, f.Line, f.Column); !runs {
			f.Scope, f.ScopeNote = ScopeNotReachable, why+", so nothing calls it"
			return
		}
	}
	if s.g.Reached(f.File) {
		f.Scope = ScopeReachable
		// Each step names the line of its file that loads the next one;
		// the last names the call.
		chain := s.g.Chain(f.File)
		steps := make([]string, len(chain))
		for i, c := range chain {
			line := f.Line
			if i+1 < len(chain) {
				line = s.g.LoadLine(chain[i+1])
			}
			steps[i] = fmt.Sprintf("%s:%d", c, line)
		}
		f.Chain = steps
		return
	}
	if f.Origin == OriginDependency && packageTestFile(f.File) {
		// A package's tests ship with it but run only if loaded.
		f.Scope, f.ScopeNote = ScopeNotReachable, "a test or benchmark file of its package (test/, __tests__/, benchmark/, bench/, *.test.*, *.spec.*) that the module graph does not reach"
		return
	}
	if f.Origin == OriginDependency && packageToolFile(f.File) {
		// A package's own build and release tooling (knex/scripts/clean.js,
		// mongoose/scripts/create-tarball.js) ships with it too, and runs
		// from the package's npm scripts in its own repository, not from
		// an install. A computed require elsewhere in the package (knex
		// loading the app's migration files by path) does not make it
		// loaded; a require('./scripts/' + x) is a literal edge the graph
		// follows.
		f.Scope, f.ScopeNote = ScopeNotReachable, "a file of its package's scripts/ folder (the package's own build and release tooling) that the module graph does not reach"
		return
	}
	var why []string
	switch {
	case !ships && len(s.set.Unresolved) > 0:
		why = append(why, "the image's file set is incomplete ("+strings.Join(s.set.Unresolved, "; ")+")")
	case !ships:
		why = append(why, "the build context was guessed (the Dockerfile's folder; no compose file names it) and the entrypoint is not in it")
	}
	// A relative load the walk could not resolve names a file the
	// repository does not have (generated at build time), so it cannot be
	// this file: only an unknown entry, a cut-short walk or a computed load
	// leaves this file's reachability open.
	switch {
	case s.g == nil || len(s.g.Entries) == 0:
		why = append(why, "the entrypoint is unknown ("+s.g.EntryWhyOr()+")")
	case s.g.Truncated:
		why = append(why, "the module graph was cut short at its size limit")
	}
	if d, ok := s.g.DynamicIn(f.File); ok {
		what := "loads a computed module name"
		if d.Why != "" {
			what = d.Why
		}
		why = append(why, fmt.Sprintf("%s:%d %s", d.File, d.Line, what))
	}
	// On a traced run the graph walked the image's own node_modules, read
	// back whole: a package it lacks (an optional peer such as kerberos,
	// a guarded require('aws4')) has no file there, so it can load
	// nothing, and this file's reachability is known. So on a lockfile
	// run that mounted every production package, for an image that
	// installs no devDependencies: npm ci installs what the lockfile
	// pins, and nothing else.
	//
	// Otherwise a package the lockfile does not pin at all (ws's optional
	// bufferutil, a db driver knex loads only when configured) is not in
	// the image either, when every install there is from that lockfile:
	// only a missing package the lockfile may pin (one that could not be
	// fetched, or a devDependency the image keeps) leaves it open.
	if f.Origin == OriginDependency && s.g != nil && !s.wholeImage() && !s.lockfileWhole {
		if lacks := s.mayLack(); len(lacks) > 0 {
			why = append(why, "node_modules lacks "+strings.Join(first(lacks, 3), ", "))
		}
	}
	if len(why) > 0 {
		f.Scope, f.ScopeNote = ScopeUnresolved, "counted as in the image: "+strings.Join(why, "; ")
		return
	}
	f.Scope, f.ScopeNote = ScopeNotReachable, "not reachable from the entrypoint ("+strings.Join(s.g.Entries, ", ")+")"
}

// mayLack lists the packages the graph required but node_modules lacks,
// and that the image may nevertheless hold.
func (s *scoper) mayLack() []string {
	if s.mentions == nil {
		return s.g.MissingPackages
	}
	var out []string
	for _, p := range s.g.MissingPackages {
		if s.mentions(p) {
			out = append(out, p)
		}
	}
	return out
}

// wholeImage reports a traced run whose image node_modules were listed
// whole: every package folder is known, so one the graph needs and does
// not find is not in the image. A file too large to read leaves its own
// content unread (the graph says so), not the set of packages.
func (s *scoper) wholeImage() bool {
	return s.image != nil && s.image.PackagesWhole()
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(append([]string{}, s[:n]...), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// inPackage returns rel's path inside its node_modules package
// (node_modules/@s/n/lib/x.js → lib/x.js); ok is false for a file of the
// application's own, or a package's own folder.
func inPackage(rel string) (inside string, ok bool) {
	i := strings.LastIndex(rel, "node_modules/")
	if i < 0 {
		return "", false
	}
	inside = rel[i+len("node_modules/"):]
	if strings.HasPrefix(inside, "@") {
		_, inside, _ = strings.Cut(inside, "/")
	}
	_, inside, ok = strings.Cut(inside, "/")
	return inside, ok
}

// packageToolFile reports whether rel, a file under node_modules, lies in
// its package's top-level scripts/ folder.
func packageToolFile(rel string) bool {
	inside, ok := inPackage(rel)
	return ok && strings.HasPrefix(inside, "scripts/")
}

// packageTestFile reports whether rel, a file under node_modules, is a
// test or benchmark of its package: under a test/, tests/, __tests__/,
// benchmark/, benchmarks/ or bench/ folder of the package, or named
// *.test.* or *.spec.* (fast-json-stringify ships benchmark/ scripts that
// spawn git and npm).
func packageTestFile(rel string) bool {
	inside, ok := inPackage(rel)
	if !ok {
		return false
	}
	segs := strings.Split(inside, "/")
	for _, d := range segs[:len(segs)-1] {
		if d == "test" || d == "tests" || d == "__tests__" || d == "benchmark" || d == "benchmarks" || d == "bench" {
			return true
		}
	}
	base := segs[len(segs)-1]
	return strings.Contains(base, ".test.") || strings.Contains(base, ".spec.")
}
