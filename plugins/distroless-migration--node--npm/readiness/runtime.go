package readiness

// The runtime: binaries and OS packages the final stage needs, Node
// versions, and native addons' ABI.

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
)

// runtime: OS packages, binaries, Node versions and native ABI.
func (b *builder) runtime(f *noderuntime.Facts) {
	runtimeBins := map[string]bool{}
	for _, u := range f.Binaries {
		if u.Origin == "healthcheck" && (u.Binary == "curl" || u.Binary == "wget") {
			continue // the dockerfile rules above replace the check
		}
		if dockerfile.IsInit(u.Binary) && u.Origin != "healthcheck" {
			b.Add(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary, Rule: RuleInitWrapper,
				Title: fmt.Sprintf("the %s runs the init %s, which distroless lacks; it forwards signals to the command it wraps", u.Origin, u.Binary),
				Fix:   "drop " + u.Binary + ": the generated launcher runs the wrapped command as its child and forwards SIGTERM, SIGINT and SIGHUP to it", Evidence: ev(u.Dockerfile, u.Line)})
			continue
		}
		runtimeBins[u.Binary] = true
		b.Add(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime,
			Title: fmt.Sprintf("the %s runs %s, which distroless lacks", u.Origin, u.Binary), Fix: u.Fix, Evidence: ev(u.Dockerfile, u.Line)})
	}
	var buildOnly []string
	var buildEv []probe.Evidence
	for _, p := range f.OSPackages {
		need := ""
		for _, bin := range noderuntime.PackageBinaries(p.Name) {
			switch {
			case runtimeBins[bin]:
				need = "the container runs " + bin
			case b.startBinaries[bin] != "":
				need = "its " + b.startBinaries[bin] + " runs " + bin
			case b.keptRunBinaries[bin] > 0:
				need = fmt.Sprintf("a final-stage RUN configures %s for run time (line %d)", bin, b.keptRunBinaries[bin])
			case b.depBinaries[bin] != "":
				need = "the production dependency " + b.depBinaries[bin] + " runs " + bin
			case b.envBinaries[bin] != "":
				need = "ENV " + b.envBinaries[bin] + " points the service at " + bin
			case b.reachableBinaries[bin]:
				need = "code the entrypoint reaches runs " + bin
			}
		}
		if need == "" {
			buildOnly = append(buildOnly, p.Name)
			buildEv = append(buildEv, probe.Evidence{File: p.Dockerfile, Line: p.Line, Note: p.Manager + " " + p.Name})
			continue
		}
		b.Add(probe.Blocker{ID: noderuntime.WarnOSPackage, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime,
			Title: fmt.Sprintf("the final stage installs %s (%s) and %s", p.Name, p.Manager, need), Evidence: ev(p.Dockerfile, p.Line)})
	}
	if len(buildOnly) > 0 {
		b.Note(probe.Note{ID: noderuntime.WarnOSPackage, Message: fmt.Sprintf(
			"the final stage installs %s, which nothing at run time uses (no CMD, ENTRYPOINT, HEALTHCHECK or reachable code runs them); they stay in the builder", strings.Join(dedupe(buildOnly), ", ")),
			Evidence: buildEv})
	}
	native := len(f.Native) > 0
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
		if img.Builder == nil {
			continue
		}
		bl := img.Builder
		if native && bl.Libc == "musl" {
			b.Add(probe.Blocker{ID: noderuntime.WarnMuslGlibc, Kind: probe.NativeABI, Rule: RuleGlibcBuilder,
				Title: fmt.Sprintf("native addons are built on musl (%s) but distroless is glibc", bl.Ref),
				Fix:   fmt.Sprintf("build on node:%s-bookworm-slim (glibc), the runtime's Node major", majorOr(bl.NodeMajor)), Evidence: ev(img.Dockerfile, bl.Line)})
		}
		if native && bl.NodeMajor != 0 && rt.NodeMajor != 0 && bl.NodeMajor != rt.NodeMajor {
			b.Add(probe.Blocker{ID: noderuntime.WarnMajorMismatch, Kind: probe.NativeABI, Rule: RuleSameMajor,
				Title: fmt.Sprintf("native addons are built for Node %d but run on Node %d", bl.NodeMajor, rt.NodeMajor),
				Fix:   "use the same Node major in the builder and the runtime", Evidence: ev(img.Dockerfile, bl.Line)})
		}
	}
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

func majorOr(m int) string {
	if m == 0 {
		return "22"
	}
	return fmt.Sprint(m)
}
