package readiness

// The runtime: binaries and OS packages the final stage needs, Node
// versions, and native addons' ABI.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
)

// runtime: OS packages, binaries, Node versions and native ABI.
func (b *builder) runtime(f *noderuntime.Facts) {
	runtimeBins, initBins := map[string]bool{}, map[string]string{}
	for _, u := range f.Binaries {
		if u.Origin == "healthcheck" && (u.Binary == "curl" || u.Binary == "wget") {
			continue // the health check's own blocker says what becomes of it
		}
		if b.scriptShells[u.Origin+" "+u.Binary] {
			continue // the shell runs a script that was read: the script's blocker says what needs it
		}
		if dockerfile.IsInit(u.Binary) && u.Origin != "healthcheck" {
			initBins[u.Binary] = strings.ToUpper(u.Origin)
			b.Add(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary, Rule: RuleInitWrapper,
				Title: fmt.Sprintf("the %s runs the init %s, which distroless lacks; it forwards signals to the command it wraps", u.Origin, u.Binary),
				Fix:   "drop " + u.Binary + ": the generated launcher runs the wrapped command as its child and forwards SIGTERM, SIGINT and SIGHUP to it", Evidence: ev(u.Dockerfile, u.Line)})
			continue
		}
		runtimeBins[u.Binary] = true
		b.Add(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime,
			Title: fmt.Sprintf("the %s runs %s, which distroless lacks", u.Origin, u.Binary), Fix: u.Fix, Evidence: ev(u.Dockerfile, u.Line)})
	}
	b.osPackages(f.OSPackages, runtimeBins, initBins)
	native := f.AppNative()
	// The stages whose own node_modules hold an addon that is not the
	// app's (a build project elsewhere, a package a RUN installs by name).
	stageNative := map[int]bool{}
	if b.judged != nil {
		for _, n := range f.Native {
			for _, name := range n.Stages {
				if i, ok := b.judged.StageRef(name); ok {
					stageNative[i] = true
				}
			}
		}
	}
	for _, img := range f.Images {
		rt := img.Runtime
		if rt.EndOfLife != "" {
			b.Add(probe.Blocker{ID: noderuntime.WarnEndOfLife, Kind: probe.RuntimeVersion, Rule: RuleDistrolessBase,
				Title: fmt.Sprintf("the runtime image %s is end of life: %s", rt.Ref, rt.EndOfLife),
				Fix:   fmt.Sprintf("FROM gcr.io/distroless/nodejs%d-debian13", noderuntime.NextSupported(majorOf(img))), Evidence: ev(img.Dockerfile, rt.Line)})
		}
		if m := majorOf(img); m != 0 && !noderuntime.Supported(m) && rt.EndOfLife == "" {
			line := rt.Line
			if rt.NodeMajor == 0 && img.Builder != nil {
				line = img.Builder.Line
			}
			b.Add(probe.Blocker{ID: noderuntime.WarnUnsupportedMajor, Kind: probe.RuntimeVersion, Rule: RuleBumpNode,
				Title: fmt.Sprintf("Node %d has no distroless image (only %s are published)", m, majorsList()),
				Fix:   fmt.Sprintf("bump to Node %d, the nearest supported LTS, and test the service on it", noderuntime.NextSupported(m)), Evidence: ev(img.Dockerfile, line)})
		}
		target := targetMajor(img)
		if b.judged != nil && img.Dockerfile == b.judged.Path {
			for _, ns := range NativeStages(b.judged, native, stageNative) {
				st := b.judged.Stages[ns.Root]
				if !isMusl(st.ResolvedBase) {
					continue
				}
				bl := probe.Blocker{ID: noderuntime.WarnMuslGlibc, Kind: probe.NativeABI, Rule: RuleGlibcBuilder,
					Title: fmt.Sprintf("native code built on musl (%s, stage %s) ships in the image (%s), but distroless is glibc", st.ResolvedBase, b.judged.StageName(ns.Root), ns.Why),
					Fix:   fmt.Sprintf("build on node:%d-bookworm-slim (glibc), the Node major the runtime runs", target), Evidence: ev(img.Dockerfile, st.Line)}
				if line, unknown := unknownApk(b.judged, ns.Root); len(unknown) > 0 {
					// The builder's apk steps move with it, by their
					// Debian names; one codegenie cannot name stops it.
					bl.Rule, bl.Fix = RuleRunSideEffects, ""
					bl.WhyNot = fmt.Sprintf("the builder moves to a Debian (glibc) image, and its step at line %d adds %s with apk, which has no Debian package codegenie knows; write its apt-get install by hand", line, strings.Join(unknown, ", "))
					b.Add(bl)
					continue
				}
				b.addEdit(bl, Edit{Stages: []int{ns.Root}})
			}
		}
		if img.Builder == nil {
			continue
		}
		bl := img.Builder
		if native && bl.NodeMajor != 0 && rt.NodeMajor != 0 && bl.NodeMajor != rt.NodeMajor {
			b.Add(probe.Blocker{ID: noderuntime.WarnMajorMismatch, Kind: probe.NativeABI, Rule: RuleSameMajor,
				Title: fmt.Sprintf("native addons are built for Node %d but run on Node %d", bl.NodeMajor, rt.NodeMajor),
				Fix:   fmt.Sprintf("use Node %d, the major the runtime runs, in the builder and the runtime", target), Evidence: ev(img.Dockerfile, bl.Line)})
		}
	}
}

// targetMajor is the Node major the rewritten service runs: its own when
// distroless publishes it, else the one bump_node moves it to, so that a
// builder move and a runtime bump name the same major.
func targetMajor(img noderuntime.Image) int {
	m := majorOf(img)
	switch {
	case m == 0:
		return 22
	case !noderuntime.Supported(m):
		return noderuntime.NextSupported(m)
	}
	return m
}

// majorOf is the Node major the service runs: the runtime's when its base
// tells (a builder may use another major only to build), else the
// builder's (a runtime such as alpine with apk's nodejs follows it in the
// rewrite).
func majorOf(img noderuntime.Image) int {
	if img.Runtime.NodeMajor != 0 {
		return img.Runtime.NodeMajor
	}
	if img.Builder != nil {
		return img.Builder.NodeMajor
	}
	return 0
}

func majorsList() string {
	var s []string
	for _, m := range noderuntime.DistrolessMajors {
		s = append(s, fmt.Sprint(m))
	}
	return strings.Join(s, ", ")
}

// osPackages: an OS package the final stage installs blocks when anything
// at run time uses what it installs: the start command, the HEALTHCHECK,
// an entrypoint script, a RUN step that stays, ENV, a known dependency
// wrapper (wrappers.json) or code the entrypoint reaches. One whose only
// use the rewrite removes (an init, a curl check that becomes a Node
// check), or that a dependency ships itself, is said to be so, not
// unused: a note never contradicts a blocker.
func (b *builder) osPackages(pkgs []noderuntime.OSPackage, runtimeBins map[string]bool, initBins map[string]string) {
	var unused, replaced []string
	var unusedEv, replacedEv []probe.Evidence
	// One blocker per install step, naming each package it needs and why.
	type step struct {
		file, manager string
		line          int
		names, needs  []string
	}
	var steps []*step
	for _, p := range pkgs {
		need, gone := b.packageUse(p.Name, runtimeBins, initBins)
		e := probe.Evidence{File: p.Dockerfile, Line: p.Line, Note: p.Manager + " " + p.Name}
		switch {
		case need != "":
			i := slices.IndexFunc(steps, func(s *step) bool { return s.file == p.Dockerfile && s.line == p.Line })
			if i < 0 {
				steps = append(steps, &step{file: p.Dockerfile, line: p.Line, manager: p.Manager})
				i = len(steps) - 1
			}
			steps[i].names = append(steps[i].names, p.Name)
			steps[i].needs = append(steps[i].needs, p.Name+": "+need)
		case gone != "":
			replaced = append(replaced, p.Name+" ("+gone+")")
			replacedEv = append(replacedEv, e)
		default:
			unused = append(unused, p.Name)
			unusedEv = append(unusedEv, e)
		}
	}
	for _, st := range steps {
		b.Add(probe.Blocker{ID: noderuntime.WarnOSPackage, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime,
			Title:    fmt.Sprintf("the final stage installs %s (%s), which run time uses", strings.Join(st.names, ", "), st.manager),
			WhyNot:   strings.Join(st.needs, "; ") + "; a distroless image has none of them: keep a non-distroless image, copy a static build in, or do the work in Node",
			Evidence: ev(st.file, st.line)})
	}
	switch {
	case len(unused) > 0 && b.hasUnread:
		// Code that runs has a command codegenie cannot read: it may be
		// one of these, so none is said to be unused.
		b.Note(probe.Note{ID: noderuntime.WarnOSPackage, Message: fmt.Sprintf(
			"the final stage installs %s, which no CMD, ENTRYPOINT, HEALTHCHECK, entrypoint script, known dependency wrapper or reachable code runs by name; but %s:%d runs a command codegenie cannot read, which may be one of them", strings.Join(dedupe(unused), ", "), b.unread.File, b.unread.Line),
			Evidence: append(unusedEv, b.unread)})
	case len(unused) > 0 && b.depsUnscanned:
		b.Note(probe.Note{ID: noderuntime.WarnOSPackage, Message: fmt.Sprintf(
			"the final stage installs %s, which no CMD, ENTRYPOINT, HEALTHCHECK, entrypoint script, known dependency wrapper or reachable app code runs by name; but the dependencies were not installed, so their code was not read, and one may run them (--deps lockfile, or the traced build, reads them)", strings.Join(dedupe(unused), ", ")),
			Evidence: unusedEv})
	case len(unused) > 0:
		b.Note(probe.Note{ID: noderuntime.WarnOSPackage, Message: fmt.Sprintf(
			"the final stage installs %s, which nothing at run time uses (no CMD, ENTRYPOINT, HEALTHCHECK, entrypoint script, known dependency wrapper or reachable code runs them); they stay in the builder", strings.Join(dedupe(unused), ", ")),
			Evidence: unusedEv})
	}
	if len(replaced) > 0 {
		b.Note(probe.Note{ID: noderuntime.WarnOSPackage, Message: fmt.Sprintf(
			"the final stage installs %s, whose only use the rewrite removes or a dependency ships itself; they stay in the builder", strings.Join(dedupe(replaced), ", ")),
			Evidence: replacedEv})
	}
}

// packageUse says what at run time needs an OS package (need), or, when
// nothing does after the rewrite, what used it and why that use goes
// (gone); both are "" for a package nothing uses.
func (b *builder) packageUse(name string, runtimeBins map[string]bool, initBins map[string]string) (need, gone string) {
	if name == "nodejs" || strings.HasPrefix(name, "nodejs-") && !strings.HasSuffix(name, "-dev") && !strings.HasSuffix(name, "-doc") {
		// apk add nodejs on alpine, apt-get install nodejs: the node the
		// start runs, which the distroless base brings itself.
		return "", "the Node runtime the container runs, which the distroless base brings"
	}
	for _, bin := range noderuntime.PackageBinaries(name) {
		switch {
		case runtimeBins[bin]:
			return "the container runs " + bin, ""
		case (b.startBinaries[bin] == "HEALTHCHECK" || b.startBinaries[bin] == composeHealth) && b.healthToNode && !b.healthKept && (bin == "curl" || bin == "wget"):
			gone = "its HEALTHCHECK runs " + bin + ", which becomes a generated Node check"
		case b.startBinaries[bin] != "":
			return "its " + b.startBinaries[bin] + " runs " + bin, ""
		case b.scriptBinaries[bin] != "":
			return "the entrypoint script " + b.scriptBinaries[bin] + " runs " + bin, ""
		case b.keptRunBinaries[bin] > 0:
			return fmt.Sprintf("a final-stage RUN configures %s for run time (line %d)", bin, b.keptRunBinaries[bin]), ""
		case b.depBinaries[bin] != "":
			return "the production dependency " + b.depBinaries[bin] + " runs " + bin, ""
		case b.envBinaries[bin] != "":
			return "ENV " + b.envBinaries[bin] + " points the service at " + bin, ""
		case b.reachableBinaries[bin]:
			return "code the entrypoint reaches runs " + bin, ""
		case initBins[bin] != "":
			gone = "its " + initBins[bin] + " runs the init " + bin + ", which the generated launcher replaces"
		case b.depBundled[bin] != "":
			gone = b.depBundled[bin] + " ships its own " + bin
		}
	}
	stem := libraryStem(name)
	if dep := b.depLibraries[stem]; dep != "" {
		return "the production dependency " + dep + " loads lib" + stem, ""
	}
	if dep := b.depBundled["lib"+stem]; dep != "" && gone == "" {
		gone = dep + " ships its own lib" + stem
	}
	return "", gone
}
