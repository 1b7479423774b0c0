// Package noderuntime is the node_runtime probe. It reports the blockers of
// a distroless move that are not about a shell: the Node major the builder
// stage uses against the one the runtime would use (native modules are built
// for one ABI), a musl (alpine) builder against a glibc runtime, native
// addons (binding.gyp, prebuilds/, node-gyp, known native packages), OS
// packages installed in the final stage (tini, curl, git, ffmpeg...), and
// binaries the final stage's ENTRYPOINT or HEALTHCHECK runs, which a
// distroless image does not have. It reads files only.
package noderuntime

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// Name is the probe's name.
const Name = "node_runtime"

// Warning IDs.
const (
	WarnMajorMismatch     = "node_runtime.node_major_mismatch"
	WarnMuslGlibc         = "node_runtime.musl_builder_glibc_runtime"
	WarnNativeAddon       = "node_runtime.native_addon"
	WarnOSPackage         = "node_runtime.os_package_in_final_stage"
	WarnMissingBinary     = "node_runtime.missing_binary"
	WarnUnsupportedMajor  = "node_runtime.no_distroless_for_major"
	WarnUnknownNodeMajor  = "node_runtime.unknown_node_major"
	WarnEndOfLife         = "node_runtime.end_of_life_runtime"
	WarnGlobalPackage     = "node_runtime.global_package"
	ReasonDockerfileError = probe.Reason("dockerfile_parse_error")
)

// Warnings are the warnings this probe raises.
var Warnings = []probe.WarningDesc{
	{ID: WarnMajorMismatch, Summary: "the builder's Node major differs from the runtime's; native modules are built for the builder's ABI"},
	{ID: WarnMuslGlibc, Summary: "the builder is musl (alpine) and the runtime glibc; native addons built there will not load"},
	{ID: WarnNativeAddon, Summary: "a native addon is present; it must be built for the runtime's Node ABI and libc"},
	{ID: WarnOSPackage, Summary: "the final stage installs OS packages, which a distroless image cannot hold"},
	{ID: WarnMissingBinary, Summary: "the final stage runs a binary (curl, tini, git...) that a distroless node image does not have"},
	{ID: WarnUnsupportedMajor, Summary: "no distroless node image is published for this Node major (only the current even LTS majors)"},
	{ID: WarnUnknownNodeMajor, Summary: "the Node major of a stage could not be read from its base image tag"},
	{ID: WarnGlobalPackage, Summary: "the final stage installs an npm package globally (npm install -g, yarn global add): its code is in no folder of the app, and codegenie does not read it"},
	{ID: WarnEndOfLife, Summary: "the runtime image is end of life (such as the removed nodejs*-debian12 distroless builds); it gets no fixes"},
}

// DistrolessMajors are the Node majors with a published distroless image
// (DOMAIN.md row 14).
var DistrolessMajors = []int{22, 24, 26}

// knownNative are packages that ship native addons.
var knownNative = map[string]bool{
	"bcrypt": true, "sharp": true, "better-sqlite3": true, "sqlite3": true, "canvas": true, "node-sass": true,
	"argon2": true, "re2": true, "grpc": true, "bufferutil": true, "utf-8-validate": true, "cpu-features": true,
	"kerberos": true, "libxmljs": true, "libxmljs2": true, "leveldown": true, "usb": true, "serialport": true,
	"@serialport/bindings": true, "@serialport/bindings-cpp": true, "node-pty": true, "deasync": true,
	"zeromq": true, "microtime": true, "farmhash": true, "isolated-vm": true, "@tensorflow/tfjs-node": true,
	"oracledb": true, "ibm_db": true, "odbc": true, "lz4": true, "snappy": true, "hiredis": true,
	// Prebuilt per platform and libc (optional dependencies such as
	// @libsql/linux-x64-musl, or prebuilds/ folders): the install picks the
	// builder's libc.
	"libsql": true, "@libsql/client": true, "@node-rs/argon2": true, "@node-rs/bcrypt": true, "sodium-native": true,
	"classic-level": true, "msgpackr-extract": true, "duckdb": true,
}

// flaggedBinaries are binaries a distroless node image lacks and that
// services commonly rely on.
var flaggedBinaries = map[string]string{
	"tini": "use docker run --init or the orchestrator's init instead", "dumb-init": "use docker run --init instead",
	"tini-static": "use docker run --init instead", "docker-init": "use docker run --init instead", "catatonit": "use docker run --init instead",
	"curl": "write the health check in Node (HEALTHCHECK CMD [\"/nodejs/bin/node\", \"healthcheck.js\"])",
	"wget": "write the health check in Node", "git": "keep a non-distroless image or drop the dependency",
	"ffmpeg": "keep a non-distroless image or use a static build copied in", "bash": "remove the shell dependency",
	"imagemagick": "keep a non-distroless image", "convert": "keep a non-distroless image", "python3": "keep a non-distroless image",
	"python": "keep a non-distroless image", "gosu": "use USER instead", "su-exec": "use USER instead", "nc": "write the check in Node",
}

// Facts are the node_runtime facts.
type Facts struct {
	EnginesNode string      `json:"engines_node,omitempty"`
	Images      []Image     `json:"images"`
	Native      []Native    `json:"native_addons,omitempty"`
	OSPackages  []OSPackage `json:"os_packages,omitempty"`
	Binaries    []BinaryUse `json:"binaries,omitempty"`
	// GlobalPackages are the npm packages the final stage's chain
	// installs globally (yarn global add thelounge): their bins are on
	// the PATH, and their code is in no folder of the app.
	GlobalPackages []GlobalPackage `json:"global_packages,omitempty"`
}

// GlobalPackage is an npm package installed globally in a Dockerfile's
// final stage chain.
type GlobalPackage struct {
	Dockerfile string `json:"dockerfile"`
	shellcmd.PackageInstall
}

// Image is one Dockerfile's builder and runtime bases.
type Image struct {
	Dockerfile string `json:"dockerfile"`
	Builder    *Base  `json:"builder,omitempty"`
	Runtime    Base   `json:"runtime"`
}

// Base is a stage's base image.
type Base struct {
	Stage     int    `json:"stage"`
	Ref       string `json:"ref"`
	NodeMajor int    `json:"node_major,omitempty"`
	Libc      string `json:"libc"` // glibc, musl or unknown
	Kind      string `json:"kind"`
	Line      int    `json:"line"`
	// EndOfLife says why the image is end of life, when it is.
	EndOfLife string `json:"end_of_life,omitempty"`
}

// Native is evidence of a native addon.
type Native struct {
	Package string `json:"package"`
	How     string `json:"how"` // binding.gyp, prebuilds, compiled_addon, known_package, node_gyp_script, run_install
	File    string `json:"file"`
	// Line is the Dockerfile line of a RUN step that installs the
	// package by name (run_install).
	Line int `json:"line,omitempty"`
	// Stages name the judged Dockerfile's stages whose node_modules hold
	// the addon, when it is not the app's own: a stage whose project (the
	// package.json at its working directory) is not the app folder's,
	// such as a Nuxt build in src/ whose .output ships, or a stage whose
	// RUN installs the package by name (npm install --no-save libsql).
	// Empty for the app's own addons.
	Stages []string `json:"stages,omitempty"`
}

// AppNative reports a native addon of the app's own (not only of a
// stage's, Native.Stages).
func (f *Facts) AppNative() bool {
	return slices.ContainsFunc(f.Native, func(n Native) bool { return len(n.Stages) == 0 })
}

// KnownNative reports a package that ships a native addon.
func KnownNative(name string) bool { return knownNative[name] }

// OSPackage is a package installed in the final stage's chain.
type OSPackage struct {
	Dockerfile string `json:"dockerfile"`
	Manager    string `json:"manager"`
	Name       string `json:"name"`
	Line       int    `json:"line"`
	Flagged    bool   `json:"flagged"`
}

// BinaryUse is a binary the final stage runs at start or for health.
type BinaryUse struct {
	Dockerfile string `json:"dockerfile"`
	Binary     string `json:"binary"`
	Origin     string `json:"origin"` // entrypoint, cmd, healthcheck
	Line       int    `json:"line"`
	Fix        string `json:"fix,omitempty"`
}

// Probe is the node_runtime probe.
type Probe struct{}

// New returns the probe.
func New() *Probe { return &Probe{} }

var _ probe.Probe = (*Probe)(nil)

// Desc describes the probe.
func (*Probe) Desc() probe.Desc {
	return probe.Desc{
		Name:          Name,
		Version:       "12", // 12: pnpm options before its command (pnpm --allow-build=x add y) no longer hide the packages it adds; 11: a shell-form instruction's nested sh -c LINE runs LINE's commands too; 10: graphviz installs dot and its other layout programs; 9: alpine's iputils installs ping, and its sqlite sqlite3; the native code of the packages a lockfile install mounts, at any depth (a binding.gyp, or a compiled addon outside prebuilds/); 7: the commands inside if, for, case and $(…) of a shell line are its commands too (shellcmd); 6: the build context guessed for a Dockerfile no compose file builds counts only COPY sources that are in one of its folder and the root (images.guessContext); native addons of the stages whose project is not the app's, and of packages a RUN installs by name (native_addons[].stages); 5: the global installs of a base image the repository builds count; libsql, @libsql/client and other prebuilt native packages are known; the npm packages the final stage installs globally (global_packages); 3: package.json and binding.gyp read in the image's app folder (issue 21); 4: an exec-form sh -c LINE runs the line's commands, not a missing shell binary
		Heaviness:     probe.Light,
		PerImage:      true,
		CacheStrategy: probe.CacheContent,
		// The lockfiles pin what a --deps lockfile run mounts in node_modules.
		DeclaredInputs: append([]string{"**/package.json", "**/binding.gyp", "node_modules/*/package.json", "node_modules/@*/*/package.json",
			"**/package-lock.json", "**/npm-shrinkwrap.json", "**/yarn.lock", "**/pnpm-lock.yaml",
			"node_modules/*/binding.gyp", "node_modules/@*/*/binding.gyp", "node_modules/*/prebuilds/**", "node_modules/@*/*/prebuilds/**"},
			images.Inputs()...),
		NewFacts: func() any { return new(Facts) },
	}
}

// Run reads the Dockerfiles, package.json and node_modules metadata.
func (*Probe) Run(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (probe.Output, error) {
	facts := &Facts{Images: []Image{}}
	out := probe.Output{Confidence: probe.High, Facts: facts}
	dir, err := appDir(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	if data, err := repo.ReadFile(path.Join(dir, "package.json")); err == nil {
		var pj nodeproject.Facts
		if nodeproject.Parse(data, &pj) == nil {
			facts.EnginesNode = pj.EnginesNode
			for _, d := range pj.Dependencies {
				if knownNative[d.Name] {
					facts.Native = append(facts.Native, Native{Package: d.Name, How: "known_package", File: path.Join(dir, "package.json")})
				}
			}
			for name, s := range pj.Scripts {
				if strings.Contains(s, "node-gyp") {
					facts.Native = append(facts.Native, Native{Package: pj.Name, How: "node_gyp_script", File: path.Join(dir, "package.json") + "#scripts." + name})
				}
			}
		}
	}
	if err := nativeInModules(repo, dir, facts); err != nil {
		return probe.Output{}, err
	}
	nativeInstalled(repo, dir, facts)
	if err := nativeInStages(ctx, repo, pctx, path.Join(dir, "package.json"), facts); err != nil {
		return probe.Output{}, err
	}
	sort.Slice(facts.Native, func(i, j int) bool {
		a, b := facts.Native[i], facts.Native[j]
		if a.Package+a.How+a.File != b.Package+b.How+b.File {
			return a.Package+a.How+a.File < b.Package+b.How+b.File
		}
		return a.Line < b.Line
	})
	files, err := images.Selected(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	for _, pf := range files {
		f := pf.File
		if f == nil {
			out.Confidence, out.Reason, out.Detail = probe.Medium, ReasonDockerfileError, pf.Err.Error()
			if pf.Unread != "" {
				out.Confidence, out.Reason = probe.Low, pf.Unread
			}
			continue
		}
		img := image(f)
		facts.Images = append(facts.Images, img)
		out.Warnings = append(out.Warnings, imageWarnings(f.Path, img, facts.AppNative())...)
		pkgs := osPackages(f)
		facts.OSPackages = append(facts.OSPackages, pkgs...)
		for _, pk := range pkgs {
			ev := []probe.Evidence{{File: f.Path, Line: pk.Line}}
			out.Warnings = append(out.Warnings, probe.Warning{ID: WarnOSPackage, Message: fmt.Sprintf("the final stage installs %s with %s", pk.Name, pk.Manager), Evidence: ev})
		}
		globals := globalPackages(f)
		if base, err := builtBase(ctx, repo, f); err != nil {
			return probe.Output{}, err
		} else if base != nil {
			// FROM an image the repository builds (dockge's
			// louislam/dockge:base): its global installs are the image's.
			globals = append(globals, globalPackages(base)...)
		}
		facts.GlobalPackages = append(facts.GlobalPackages, globals...)
		for _, g := range globals {
			out.Warnings = append(out.Warnings, probe.Warning{ID: WarnGlobalPackage,
				Message: fmt.Sprintf("the final stage installs %s globally with %s", g.Package, g.Tool), Evidence: []probe.Evidence{{File: f.Path, Line: g.Line}}})
		}
		bins := binaries(f)
		facts.Binaries = append(facts.Binaries, bins...)
		for _, b := range bins {
			out.Warnings = append(out.Warnings, probe.Warning{ID: WarnMissingBinary,
				Message: fmt.Sprintf("the %s runs %s, which distroless lacks: %s", b.Origin, b.Binary, b.Fix), Evidence: []probe.Evidence{{File: f.Path, Line: b.Line}}})
		}
	}
	for _, n := range facts.Native {
		msg, line := fmt.Sprintf("native addon %s (%s)", n.Package, n.How), max(n.Line, 1)
		if len(n.Stages) > 0 {
			msg += " in stage " + strings.Join(n.Stages, ", ")
		}
		out.Warnings = append(out.Warnings, probe.Warning{ID: WarnNativeAddon, Message: msg, Evidence: []probe.Evidence{{File: strings.SplitN(n.File, "#", 2)[0], Line: line}}})
	}
	return out, nil
}

// appDir is the repository folder of the judged image's package.json: the
// one the image holds in its WORKDIR, else the build context's, else the
// repository root. With --dockerfile src/x/Dockerfile run from the
// repository's root, that is src/x, as it is when run from src/x.
func appDir(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (string, error) {
	j, err := images.Image.Of(ctx, repo, pctx)
	if err != nil || j == nil || j.File == nil {
		return ".", err
	}
	set, err := images.Files.Of(ctx, repo, pctx)
	if err != nil {
		return ".", err
	}
	if rel, ok := set.RepoPath(path.Join(j.File.Workdir(j.File.Final), "package.json")); ok && !strings.Contains(rel, "node_modules/") {
		return path.Dir(rel), nil
	}
	if repo.Exists(path.Join(j.Context, "package.json")) {
		return path.Clean(j.Context), nil
	}
	return ".", nil
}

// nativeInModules finds native addons in dir: its own binding.gyp, and
// the node_modules of the repository's root (only those are declared
// inputs: globs reach into node_modules only from the root).
func nativeInModules(repo *probe.Repo, dir string, facts *Facts) error {
	if gyp := path.Join(dir, "binding.gyp"); repo.Exists(gyp) {
		facts.Native = append(facts.Native, Native{Package: ".", How: "binding.gyp", File: gyp})
	}
	seen := map[string]bool{}
	for _, pat := range []string{"node_modules/*/binding.gyp", "node_modules/@*/*/binding.gyp", "node_modules/*/prebuilds/**", "node_modules/@*/*/prebuilds/**"} {
		ms, err := repo.Glob(pat)
		if err != nil {
			return err
		}
		for _, m := range ms {
			pkg, how := moduleOf(m)
			if pkg == "" || seen[pkg+how] {
				continue
			}
			seen[pkg+how] = true
			file := m
			if how == "prebuilds" {
				file = "node_modules/" + pkg + "/prebuilds"
			}
			facts.Native = append(facts.Native, Native{Package: pkg, How: how, File: file})
		}
	}
	return nil
}

// nativeInstalled finds the packages of dir's node_modules that a
// lockfile install mounted (gather --deps lockfile), at any depth, that
// hold native code an install builds or picks for the builder's libc: a
// binding.gyp at the package's root (compiled, or a prebuilt binary
// fetched for that libc: better-sqlite3, bcrypt), or a compiled addon
// (*.node) outside a prebuilds/ folder (a napi-rs or sharp platform
// package such as @ngrok/ngrok-linux-x64-gnu, which npm installs per
// libc). A prebuilds/ folder holds a binary per platform and libc, which
// the package chooses when it loads, so on its own it binds the image to
// no libc. The mounts are what the lockfiles pin, which are declared
// inputs. A package already found at the root is not added again.
func nativeInstalled(repo *probe.Repo, dir string, facts *Facts) {
	prefix := "node_modules/"
	if dir != "." {
		prefix = dir + "/node_modules/"
	}
	seen := map[string]bool{}
	for _, n := range facts.Native {
		seen[n.Package] = true
	}
	for _, m := range repo.Mounts() {
		if !strings.HasPrefix(m.Path, prefix) {
			continue
		}
		name := m.Path[strings.LastIndex(m.Path, "node_modules/")+len("node_modules/"):]
		if seen[name] {
			continue
		}
		how, file := "", ""
		for _, f := range m.Files {
			switch {
			case f == "binding.gyp":
				how, file = "binding.gyp", f
			case strings.HasSuffix(f, ".node") && !strings.HasPrefix(f, "prebuilds/") && how == "":
				how, file = "compiled_addon", f
			}
		}
		if how == "" || !installsOnLinuxX64(repo, m.Path) {
			continue
		}
		seen[name] = true
		facts.Native = append(facts.Native, Native{Package: name, How: how, File: m.Path + "/" + file})
	}
}

// installsOnLinuxX64 reports whether npm installs the package at pkg on
// linux x64, the only platform the images are built for: its package.json
// names no os or cpu that leaves them out (fsevents is darwin's, and a
// napi-rs package's platform packages are pinned for every platform).
// An unreadable package.json leaves it in.
func installsOnLinuxX64(repo *probe.Repo, pkg string) bool {
	data, err := repo.ReadFile(pkg + "/package.json")
	if err != nil {
		return true
	}
	var pj struct {
		OS  []string `json:"os"`
		CPU []string `json:"cpu"`
	}
	if json.Unmarshal(data, &pj) != nil {
		return true
	}
	return allows(pj.OS, "linux") && allows(pj.CPU, "x64")
}

// allows applies npm's os and cpu rule: an empty list allows all, "!x"
// refuses x, and a list of names allows only those.
func allows(list []string, v string) bool {
	named := false
	for _, e := range list {
		if e == "!"+v {
			return false
		}
		if !strings.HasPrefix(e, "!") {
			named = true
			if e == v {
				return true
			}
		}
	}
	return !named
}

// nativeInStages finds the native addons of the judged Dockerfile's stages
// that are not the app's (appManifest): the known native dependencies of
// the project each stage holds, and the known native packages a stage's
// RUN installs by name. Which of those stages ship their node_modules is
// the verdict's question (readiness.NativeStages).
func nativeInStages(ctx context.Context, repo *probe.Repo, pctx *probe.Context, appManifest string, facts *Facts) error {
	j, err := images.Image.Of(ctx, repo, pctx)
	if err != nil || j == nil || j.File == nil {
		return err
	}
	set, err := images.Files.Of(ctx, repo, pctx)
	if err != nil || set == nil {
		return err
	}
	f := j.File
	byKey := map[string]*Native{}
	var order []string
	add := func(n Native, stage int) {
		key := n.Package + "\x00" + n.How + "\x00" + n.File + "\x00" + fmt.Sprint(n.Line)
		if byKey[key] == nil {
			byKey[key], order = &n, append(order, key)
		}
		if name := f.StageName(stage); !slices.Contains(byKey[key].Stages, name) {
			byKey[key].Stages = append(byKey[key].Stages, name)
		}
	}
	for i := range f.Stages {
		if proj := set.Projects[i]; proj != "" && proj != appManifest {
			if data, err := repo.ReadFile(proj); err == nil {
				var pj nodeproject.Facts
				if nodeproject.Parse(data, &pj) == nil {
					for _, d := range pj.Dependencies {
						if knownNative[d.Name] {
							add(Native{Package: d.Name, How: "known_package", File: proj}, i)
						}
					}
				}
			}
		}
		for _, in := range f.Stages[i].Instructions {
			if in.Command != "run" || len(in.Args) == 0 {
				continue
			}
			line := in.Args[0]
			if in.Form != dockerfile.FormShell {
				line = strings.Join(in.Args, " ")
			}
			for _, p := range shellcmd.Installs(line) {
				if !p.Global && knownNative[p.Package] {
					add(Native{Package: p.Package, How: "run_install", File: f.Path, Line: in.Line + p.Line - 1}, i)
				}
			}
		}
	}
	for _, k := range order {
		facts.Native = append(facts.Native, *byKey[k])
	}
	return nil
}

// moduleOf names the package a node_modules path belongs to.
func moduleOf(p string) (pkg, how string) {
	rest := strings.TrimPrefix(p, "node_modules/")
	parts := strings.Split(rest, "/")
	n := 1
	if strings.HasPrefix(parts[0], "@") {
		n = 2
	}
	if len(parts) <= n {
		return "", ""
	}
	how = "binding.gyp"
	if parts[n] == "prebuilds" {
		how = "prebuilds"
	}
	return strings.Join(parts[:n], "/"), how
}

var (
	majorRE      = regexp.MustCompile(`(?:^|[^0-9])(\d{1,2})(?:[.\-]|$)`)
	distrolessRE = regexp.MustCompile(`nodejs(\d+)`)
)

// base describes a stage's root base image.
func base(f *dockerfile.File, stage int) Base {
	ref := f.RootBase(stage)
	b := Base{Stage: stage, Ref: ref, Kind: string(dockerfile.ClassifyBase(ref)), Libc: "unknown", Line: f.Stages[stage].Line}
	name, tag := splitRef(ref)
	switch dockerfile.ClassifyBase(ref) {
	case dockerfile.BaseOfficialNode:
		b.NodeMajor = tagMajor(tag)
		b.Libc = "glibc"
		if strings.Contains(tag, "alpine") {
			b.Libc = "musl"
		}
	case dockerfile.BaseDistroless:
		if m := distrolessRE.FindStringSubmatch(name); m != nil {
			b.NodeMajor, _ = strconv.Atoi(m[1])
		}
		b.Libc = "glibc"
		b.EndOfLife = endOfLife(name, tag, b.NodeMajor)
	case dockerfile.BaseOther:
		if strings.Contains(ref, "alpine") {
			b.Libc = "musl"
		}
	}
	return b
}

func image(f *dockerfile.File) Image {
	img := Image{Dockerfile: f.Path, Runtime: base(f, f.Final)}
	if f.Builder >= 0 {
		b := base(f, f.Builder)
		img.Builder = &b
	}
	return img
}

func imageWarnings(file string, img Image, native bool) []probe.Warning {
	var ws []probe.Warning
	ev := func(line int) []probe.Evidence { return []probe.Evidence{{File: file, Line: line}} }
	rt := img.Runtime
	if img.Builder != nil {
		b := img.Builder
		if b.NodeMajor != 0 && rt.NodeMajor != 0 && b.NodeMajor != rt.NodeMajor {
			ws = append(ws, probe.Warning{ID: WarnMajorMismatch, Message: fmt.Sprintf("builder uses Node %d (%s), runtime Node %d (%s)", b.NodeMajor, b.Ref, rt.NodeMajor, rt.Ref), Evidence: ev(b.Line)})
		}
		if b.Libc == "musl" && native {
			ws = append(ws, probe.Warning{ID: WarnMuslGlibc, Message: fmt.Sprintf("builder %s is musl; a distroless runtime is glibc, so the native addons built there will not load", b.Ref), Evidence: ev(b.Line)})
		}
	}
	major := rt.NodeMajor
	line := rt.Line
	if img.Builder != nil && img.Builder.NodeMajor != 0 {
		major, line = img.Builder.NodeMajor, img.Builder.Line
	}
	switch {
	case major == 0 && (rt.Kind != string(dockerfile.BaseOther) || img.Builder != nil):
		ws = append(ws, probe.Warning{ID: WarnUnknownNodeMajor, Message: "the Node major could not be read from the base tags; pin a major (node:22)", Evidence: ev(line)})
	case major != 0 && !supported(major):
		ws = append(ws, probe.Warning{ID: WarnUnsupportedMajor, Message: fmt.Sprintf("Node %d has no distroless image; bump to %d", major, nextSupported(major)), Evidence: ev(line)})
	}
	return ws
}

// splitRef splits an image reference into its name and tag, ignoring a
// digest: node:26.4.0-slim@sha256:… has name node and tag 26.4.0-slim.
// ltsCodenames are the codenames of Node's LTS lines, which the official
// node image also uses as tags (node:krypton-alpine is Node 24), from
// nodejs.org's release schedule.
var ltsCodenames = map[string]int{
	"argon": 4, "boron": 6, "carbon": 8, "dubnium": 10, "erbium": 12, "fermium": 14,
	"gallium": 16, "hydrogen": 18, "iron": 20, "jod": 22, "krypton": 24,
}

// NodeMajor is the Node major an official node image reference names by
// its tag (node:22-alpine, node:22.11@sha256:…, node:jod-slim); 0 when
// the tag names none (node:lts, node:latest, no tag).
func NodeMajor(ref string) int {
	_, tag := splitRef(ref)
	return tagMajor(tag)
}

func tagMajor(tag string) int {
	if m := majorRE.FindStringSubmatch(tag); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	codename, _, _ := strings.Cut(tag, "-")
	return ltsCodenames[codename]
}

func splitRef(ref string) (name, tag string) {
	name = ref
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag
}

// endOfLife says why a distroless node image is no longer built: the
// debian11 and debian12 node lines were removed, an unversioned
// gcr.io/distroless/nodejs only ever had old majors, and an unsupported
// major gets no image.
func endOfLife(name, tag string, major int) string {
	switch {
	case strings.HasSuffix(name, "-debian12") || strings.HasSuffix(name, "-debian11") || strings.HasSuffix(name, "-debian10"):
		return "the " + name[strings.LastIndex(name, "-")+1:] + " distroless node builds were removed; only -debian13 images are published"
	case major == 0 && strings.HasSuffix(name, "/nodejs"):
		return "the unversioned gcr.io/distroless/nodejs image is no longer built"
	case major != 0 && !Supported(major):
		return fmt.Sprintf("no distroless image is published for Node %d", major)
	}
	return ""
}

// Supported reports whether a Node major has a published distroless image.
func Supported(m int) bool { return supported(m) }

// NextSupported is the nearest supported major at or above m (the newest
// one past them all).
func NextSupported(m int) int { return nextSupported(m) }

// packageBinaries maps OS packages to the programs they install, where the
// names differ; any other package installs a program of its own name.
var packageBinaries = map[string][]string{
	"imagemagick": {"convert", "magick", "identify", "mogrify"}, "graphicsmagick": {"gm"},
	"graphviz":    {"dot", "neato", "twopi", "circo", "fdp", "sfdp", "osage", "patchwork"},
	"ghostscript": {"gs"}, "poppler-utils": {"pdftotext", "pdftoppm", "pdfinfo"}, "openssh-client": {"ssh", "scp"},
	"netcat": {"nc"}, "netcat-openbsd": {"nc"}, "netcat-traditional": {"nc"}, "procps": {"ps", "top", "pgrep"},
	"iputils-ping": {"ping"}, "iputils": {"ping", "ping6", "arping", "tracepath"}, "sqlite": {"sqlite3"}, "dnsutils": {"dig", "nslookup"}, "bind-tools": {"dig", "nslookup"},
	"chromium": {"chromium", "chromium-browser"}, "python3": {"python3", "python"}, "python": {"python"},
	"libreoffice": {"soffice", "libreoffice"}, "yt-dlp": {"yt-dlp"}, "ffmpeg": {"ffmpeg", "ffprobe"},
	"mariadb-client": {"mysql", "mysqldump"}, "postgresql-client": {"psql", "pg_dump"}, "sqlite3": {"sqlite3"},
	"udev": {"udevadm"}, "eudev": {"udevadm"}, "procps-ng": {"ps", "top", "pgrep"},
}

// PackageBinaries lists the programs an OS package installs.
func PackageBinaries(pkg string) []string {
	if b, ok := packageBinaries[pkg]; ok {
		return b
	}
	return []string{pkg}
}

func supported(m int) bool {
	for _, s := range DistrolessMajors {
		if s == m {
			return true
		}
	}
	return false
}

func nextSupported(m int) int {
	for _, s := range DistrolessMajors {
		if s >= m {
			return s
		}
	}
	return DistrolessMajors[len(DistrolessMajors)-1]
}

// finalRuns calls visit with each RUN of the final stage's chain.
func finalRuns(f *dockerfile.File, visit func(in dockerfile.Instruction)) {
	for i := f.Final; i >= 0; i = f.Stages[i].BaseStage {
		for _, in := range f.Stages[i].Instructions {
			if in.Command == "run" && len(in.Args) > 0 {
				visit(in)
			}
		}
	}
}

// osPackages finds packages installed by RUN in the final stage's chain.
func osPackages(f *dockerfile.File) []OSPackage {
	var pkgs []OSPackage
	finalRuns(f, func(in dockerfile.Instruction) {
		cmds := [][]string{in.Args}
		if in.Form == dockerfile.FormShell {
			cmds = shellcmd.Analyze(in.Args[0]).Commands
		}
		for _, c := range cmds {
			mgr, names := installs(c)
			for _, n := range names {
				_, flagged := flaggedBinaries[n]
				pkgs = append(pkgs, OSPackage{Dockerfile: f.Path, Manager: mgr, Name: n, Line: in.Line, Flagged: flagged})
			}
		}
	})
	return pkgs
}

// builtBase returns the Dockerfile, as built for its target, of the image
// at the bottom of f's final stage chain when the repository builds that
// image itself (images.Built); nil otherwise.
func builtBase(ctx context.Context, repo *probe.Repo, f *dockerfile.File) (*dockerfile.File, error) {
	built, err := images.Built.Of(ctx, repo, nil)
	if err != nil {
		return nil, err
	}
	bi, ok := built.Lookup(f.RootBase(f.Final))
	if !ok || bi.Dockerfile == f.Path {
		return nil, nil
	}
	parsed, err := images.ParseAll(ctx, repo)
	if err != nil {
		return nil, err
	}
	return bi.Build(parsed), nil
}

// globalPackages finds the npm packages that RUN installs globally in the
// final stage's chain.
func globalPackages(f *dockerfile.File) []GlobalPackage {
	var out []GlobalPackage
	finalRuns(f, func(in dockerfile.Instruction) {
		line := in.Args[0]
		if in.Form != dockerfile.FormShell {
			line = strings.Join(in.Args, " ")
		}
		for _, g := range shellcmd.GlobalInstalls(line) {
			g.Line += in.Line - 1
			out = append(out, GlobalPackage{Dockerfile: f.Path, PackageInstall: g})
		}
	})
	return out
}

// installs recognises apt-get/apt/apk/yum/dnf/microdnf install commands.
func installs(argv []string) (string, []string) {
	if len(argv) < 2 {
		return "", nil
	}
	mgr := path.Base(argv[0])
	var verb []string
	switch mgr {
	case "apt-get", "apt", "yum", "dnf", "microdnf":
		verb = []string{"install"}
	case "apk":
		verb = []string{"add"}
	default:
		return "", nil
	}
	var names []string
	found := false
	for _, a := range argv[1:] {
		switch {
		case !found && a == verb[0]:
			found = true
		case found && !strings.HasPrefix(a, "-") && a != "<expanded>":
			n := a
			if i := strings.IndexAny(n, "=<>"); i > 0 {
				n = n[:i]
			}
			names = append(names, n)
		}
	}
	return mgr, names
}

// binaries finds flagged binaries run by the final stage's ENTRYPOINT, CMD
// or HEALTHCHECK.
func binaries(f *dockerfile.File) []BinaryUse {
	var uses []BinaryUse
	for _, c := range []string{"entrypoint", "cmd", "healthcheck"} {
		in, ok := f.Effective(f.Final, c)
		if !ok || len(in.Args) == 0 {
			continue
		}
		cmds := shellcmd.Instruction(in)
		for _, cmd := range cmds {
			if len(cmd) == 0 {
				continue
			}
			bin := path.Base(cmd[0])
			if fix, ok := flaggedBinaries[bin]; ok {
				uses = append(uses, BinaryUse{Dockerfile: f.Path, Binary: bin, Origin: c, Line: in.Line, Fix: fix})
			}
		}
	}
	return uses
}
