// Package recipe rewrites a Node service's Dockerfile to a distroless
// runtime. It is a pure function: the probes' facts and the readiness plan
// (every blocker with the data of its rule's rewrite) plus the Dockerfile's
// bytes go in; the new bytes, the generated files, each change with its
// reason, and each refusal with its reason come out. It carries out exactly
// the removable rules of the readiness rule table, so that a verdict of
// ready_after_rewrite means "the recipe removes every blocker", and it
// refuses, naming the blocker and its evidence, when a blocker has no
// rewrite.
//
// Edits are line-range edits on the original bytes: comments, ordering
// and untouched lines stay as they were, and the recipe run on its own
// output changes nothing.
package recipe

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/httpcheck"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// Input is what the recipe works from.
type Input struct {
	// Dockerfile is the judged Dockerfile's repository path; Source is its
	// bytes.
	Dockerfile string
	Source     []byte
	// File is Source parsed (the dockerfile probe's facts) and Stage the
	// judged target's stage index.
	File  *dockerfile.File
	Stage int
	// Context is the build context, repository-relative ("." is the root).
	Context string
	Plan    *readiness.Plan
	Runtime noderuntime.Facts
	// Target is the runtime image; nil picks DefaultTarget for the
	// service's Node major.
	Target *Target
	// Read reads another repository file the rewrite edits (a compose
	// file's healthcheck).
	Read func(path string) ([]byte, error)
}

// Result is the rewrite.
type Result struct {
	Dockerfile string `json:"dockerfile"`
	// Target is the runtime image the rewrite moves to.
	Target Target `json:"target"`
	// Stage is the index of the judged stage in the rewritten Dockerfile,
	// and StageTarget how a build names it ("" for the last stage).
	Stage       int    `json:"stage"`
	StageTarget string `json:"stage_target,omitempty"`
	// OriginalTarget is how a build of the original names the judged
	// stage ("" for the last).
	OriginalTarget string `json:"original_target,omitempty"`
	// Files are the changed and generated files; empty when nothing
	// changes or the recipe refuses.
	Files    []File    `json:"files"`
	Changes  []Change  `json:"changes"`
	Refusals []Refusal `json:"refusals,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
	// ProbePaths are URL paths the original image's checks request that
	// the rewritten image's no longer name (a curl check's URL moved into
	// a generated script): the gates ask both images for them.
	ProbePaths []string `json:"probe_paths,omitempty"`
}

// File is one file the rewrite writes.
type File struct {
	Path string `json:"path"`
	// Old is the file's bytes before, nil for a generated file.
	Old       []byte      `json:"-"`
	New       []byte      `json:"-"`
	Mode      fs.FileMode `json:"mode"`
	Generated bool        `json:"generated,omitempty"`
}

// Change is one rewrite and why it was made.
type Change struct {
	// Rule is the rule-table entry carried out; Blocker the ID of the
	// blocker it removes (empty for a change that serves the others).
	Rule    string `json:"rule"`
	Blocker string `json:"blocker,omitempty"`
	Line    int    `json:"line,omitempty"`
	What    string `json:"what"`
}

// Refusal is a blocker the recipe cannot remove.
type Refusal struct {
	Rule     string           `json:"rule"`
	Blocker  string           `json:"blocker,omitempty"`
	Title    string           `json:"title"`
	Why      string           `json:"why"`
	Evidence []probe.Evidence `json:"evidence,omitempty"`
}

// Refused reports whether the recipe refused.
func (r *Result) Refused() bool { return len(r.Refusals) > 0 }

// Prepare decodes the probe results of the judged image into an Input,
// with the Dockerfile's bytes read by read.
func Prepare(results []probe.Result, plan *readiness.Plan, read func(path string) ([]byte, error)) (Input, error) {
	var in Input
	var df dockerfileprobe.Facts
	for _, r := range results {
		var err error
		switch r.Probe {
		case dockerfileprobe.Name:
			err = strictjson.Unmarshal(r.Facts, &df)
		case noderuntime.Name:
			err = strictjson.Unmarshal(r.Facts, &in.Runtime)
		}
		if err != nil {
			return in, fmt.Errorf("decoding %s facts: %w", r.Probe, err)
		}
	}
	if df.Image == nil {
		return in, errors.New("the repository has no Dockerfile to migrate")
	}
	for _, f := range df.Files {
		if f.Path != df.Image.Dockerfile {
			continue
		}
		if f.Parsed == nil {
			msg := "it does not parse"
			if f.Error != nil {
				msg = f.Error.Message
			}
			return in, fmt.Errorf("%s: %s", f.Path, msg)
		}
		in.File = f.Parsed
	}
	if in.File == nil {
		return in, fmt.Errorf("%s: not among the parsed Dockerfiles", df.Image.Dockerfile)
	}
	src, err := read(df.Image.Dockerfile)
	if err != nil {
		return in, err
	}
	in.Dockerfile, in.Source, in.Stage, in.Context, in.Plan, in.Read = df.Image.Dockerfile, src, df.Image.Stage, df.Image.Context, plan, read
	return in, nil
}

// Major is the Node major the rewritten service runs: the runtime's, else
// the builder's, else 22; a major with no distroless image is bumped to
// the nearest supported one (bumped reports that).
func Major(rt noderuntime.Facts) (major int, bumped bool) {
	for _, img := range rt.Images {
		switch {
		case img.Runtime.NodeMajor != 0:
			major = img.Runtime.NodeMajor
		case img.Builder != nil && img.Builder.NodeMajor != 0:
			major = img.Builder.NodeMajor
		}
	}
	if major == 0 {
		return 22, false
	}
	if !noderuntime.Supported(major) {
		return noderuntime.NextSupported(major), true
	}
	return major, false
}

// rewriter holds one rewrite's state.
type rewriter struct {
	in       Input
	res      *Result
	d        *dockerfile.File
	t        int
	wd       string
	target   Target
	edits    []edit
	src      [][]byte
	gen      []File
	byRule   map[string][]readiness.Action
	newBase  bool // the runtime stage's FROM changes
	appended bool // a new runtime stage follows the judged one
	// preStart are instructions that go before the start command (the
	// COPY of a generated health check a compose file runs).
	preStart []string
	// others are the other files the rewrite edits (compose files).
	others []File
}

// Rewrite runs the recipe.
func Rewrite(in Input) (*Result, error) {
	res := &Result{Dockerfile: in.Dockerfile, Changes: []Change{}, Files: []File{}, Stage: in.Stage}
	if in.File != nil && in.Stage != in.File.Final {
		res.OriginalTarget = in.File.StageName(in.Stage)
	}
	if in.Plan == nil || in.File == nil {
		return nil, errors.New("recipe: no plan or no parsed Dockerfile")
	}
	major, bumped := Major(in.Runtime)
	if in.Target != nil {
		res.Target = *in.Target
	} else {
		res.Target = DefaultTarget(major)
	}
	if res.Target.Shell {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s still has a shell: the rewrite removes the service's uses of it, but only the traced boot shows that none runs", res.Target.Ref))
	}
	as := in.Plan.Assessment
	for _, a := range in.Plan.Actions {
		if a.Blocker.Removable {
			continue
		}
		why := a.Blocker.WhyNot
		if why == "" {
			why = readiness.RuleFor(a.Blocker.Rule).WhyNot
		}
		res.Refusals = append(res.Refusals, Refusal{Rule: a.Blocker.Rule, Blocker: a.Blocker.ID, Title: a.Blocker.Title, Why: why, Evidence: a.Blocker.Evidence})
	}
	if as.Verdict == probe.Unknown && len(res.Refusals) == 0 {
		res.Refusals = append(res.Refusals, Refusal{Rule: readiness.RuleUnclassified, Title: "the verdict is unknown", Why: as.Reason})
	}
	if res.Refused() || len(in.Plan.Actions) == 0 {
		res.StageTarget = res.OriginalTarget
		return res, nil
	}
	r := &rewriter{in: in, res: res, d: in.File, t: in.Stage, target: res.Target, src: lines(in.Source), byRule: map[string][]readiness.Action{}}
	if r.t < 0 || r.t >= len(r.d.Stages) {
		return nil, fmt.Errorf("recipe: stage %d is not in %s", r.t, in.Dockerfile)
	}
	for _, a := range in.Plan.Actions {
		r.byRule[a.Blocker.Rule] = append(r.byRule[a.Blocker.Rule], a)
	}
	if bumped {
		res.Warnings = append(res.Warnings, fmt.Sprintf("Node is bumped to %d, the nearest major with a distroless image: test the service on it", major))
	}
	if err := r.run(); err != nil {
		var ref refusal
		if errors.As(err, &ref) {
			res.Refusals = append(res.Refusals, Refusal(ref))
			res.Changes = []Change{}
			return res, nil
		}
		return nil, err
	}
	out, err := apply(in.Source, r.edits)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(out, in.Source) {
		res.Files = append(res.Files, File{Path: in.Dockerfile, Old: in.Source, New: out, Mode: 0o644})
	}
	nf, err := dockerfile.Parse(in.Dockerfile, out)
	if err != nil {
		return nil, fmt.Errorf("recipe: the rewritten Dockerfile does not parse: %w", err)
	}
	if r.appended {
		res.Stage++
	}
	if ref := r.selfCheck(nf, res.Stage); ref != nil {
		res.Refusals = append(res.Refusals, *ref)
		res.Changes, res.Files, res.ProbePaths = []Change{}, []File{}, nil
		res.StageTarget = res.OriginalTarget
		res.Stage = in.Stage
		return res, nil
	}
	if res.Stage != nf.Final {
		res.StageTarget = nf.StageName(res.Stage)
	}
	res.Files = append(res.Files, r.others...)
	res.Files = append(res.Files, r.gen...)
	return res, nil
}

// refusal is a Refusal as an error, for the rewrite steps.
type refusal Refusal

func (r refusal) Error() string { return r.Title + ": " + r.Why }

func (r *rewriter) refuse(rule, title, why string, line int) error {
	ref := refusal{Rule: rule, Title: title, Why: why}
	if line > 0 {
		ref.Evidence = []probe.Evidence{{File: r.in.Dockerfile, Line: line}}
	}
	return ref
}

func (r *rewriter) has(rule string) bool { return len(r.byRule[rule]) > 0 }

// change records the changes of every blocker of rule.
func (r *rewriter) change(rule, what string) {
	acts := r.byRule[rule]
	if len(acts) == 0 {
		r.res.Changes = append(r.res.Changes, Change{Rule: rule, What: what})
		return
	}
	for _, a := range acts {
		c := Change{Rule: rule, Blocker: a.Blocker.ID, What: what}
		if len(a.Blocker.Evidence) > 0 {
			c.Line = a.Blocker.Evidence[0].Line
		}
		r.res.Changes = append(r.res.Changes, c)
	}
}

// startRules are the rules whose rewrite is the start command.
var startRules = []string{readiness.RuleInitWrapper, readiness.RuleScriptArgv, readiness.RuleNodeLauncher, readiness.RuleExecForm, readiness.RuleDropNodeArgv,
	readiness.RuleJSEntry, readiness.RuleEntrypointToEnv}

func (r *rewriter) run() error {
	st := r.d.Stages[r.t]
	r.wd = r.d.Workdir(r.t)
	moves := r.byRule[readiness.RuleMoveToBuilder]
	r.newBase = dockerfile.ClassifyBase(st.ResolvedBase) != dockerfile.BaseDistroless || r.has(readiness.RuleDistrolessBase) ||
		r.has(readiness.RuleBumpNode) || r.in.Target != nil && !sameRepo(st.ResolvedBase, r.target.Ref)
	rewriteStart := r.newBase
	for _, rule := range startRules {
		rewriteStart = rewriteStart || r.has(rule)
	}
	if err := r.builders(); err != nil {
		return err
	}
	var start []string
	if rewriteStart {
		var err error
		if start, err = r.startLines(); err != nil {
			return err
		}
	}
	health, err := r.healthLines()
	if err != nil {
		return err
	}
	if start != nil {
		start = append(append([]string{}, r.preStart...), start...)
		r.preStart = nil
	}
	switch {
	case st.BaseStage >= 0 && !r.makesFiles(r.t):
		return r.inline(start, health)
	case len(moves) > 0 || st.BaseStage >= 0:
		return r.split(start, health)
	}
	return r.swap(start, health)
}

// chownNodeRE finds a --chown to the node user or group.
var chownNodeRE = regexp.MustCompile(`--chown=node(:|\s|$)`)

// needsNodeUser reports whether the runtime stage's chain runs as the
// official node image's user node or chowns files to it, by name, while
// the target image has no such user.
func (r *rewriter) needsNodeUser() bool {
	if r.target.Family != "distroless" {
		return false // DHI and Chainguard images have a node user
	}
	for _, i := range r.chain() {
		for _, in := range r.d.Stages[i].Instructions {
			switch in.Command {
			case "user":
				if len(in.Args) == 1 {
					if name, _, _ := strings.Cut(in.Args[0], ":"); name == "node" {
						return true
					}
				}
			case "copy", "add":
				if chownNodeRE.MatchString(r.verbatim(in)) {
					return true
				}
			}
		}
	}
	return false
}

// makesFiles reports whether stage i has instructions that change its
// files (RUN, COPY, ADD).
func (r *rewriter) makesFiles(i int) bool {
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command == "run" || in.Command == "copy" || in.Command == "add" {
			return true
		}
	}
	return false
}

// chain is stage t's FROM chain, root first.
func (r *rewriter) chain() []int {
	var c []int
	for i := r.t; i >= 0 && len(c) <= len(r.d.Stages); i = r.d.Stages[i].BaseStage {
		c = append([]int{i}, c...)
	}
	return c
}

// inline rewrites a runtime stage built FROM an earlier stage that makes
// no files of its own: it becomes a stage on the target that copies the
// app from the stage it was built from, with that stage's ENV and USER.
func (r *rewriter) inline(start, health []string) error {
	st := r.d.Stages[r.t]
	workdir, err := r.appDir(readiness.RuleDistrolessBase)
	if err != nil {
		return err
	}
	parent := r.d.StageName(st.BaseStage)
	c := r.collect(r.chain()[:len(r.chain())-1])
	c.users = c.users || r.needsNodeUser()
	var b strings.Builder
	b.WriteString(from(st.Platform, r.target.Pinned(), st.Name))
	b.WriteString(workdir)
	r.copies(&b, parent, c)
	r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: b.String()})
	r.change(readiness.RuleDistrolessBase, fmt.Sprintf("the runtime stage is FROM %s and copies %s from %s, with its ENV and USER", r.target.Pinned(), r.wd, parent))
	r.changeIfBlocked(readiness.RuleMoveToBuilder, "the RUN steps stay in "+parent+", which the runtime stage copies its files from")
	r.newBase = false
	return r.swap(start, health)
}

// appDir sets r.wd to the directory a new runtime stage copies the app
// from, and returns the WORKDIR line that stage needs: the chain's own
// WORKDIR, or, when the chain sets none, nothing (node keeps / as its
// working directory) while the app is copied from the directory that holds
// every COPY destination. It refuses, under rule, when the app was copied
// into / itself.
func (r *rewriter) appDir(rule string) (string, error) {
	dir, ok := r.d.AppDir(r.t)
	if !ok {
		st := r.d.Stages[r.t]
		return "", r.refuse(rule, "the stages set no WORKDIR and copy the app into /", "codegenie cannot tell the app's files from the base image's; set a WORKDIR", st.Line)
	}
	if r.wd == "/" {
		r.wd = dir
		return "", nil
	}
	return fmt.Sprintf("WORKDIR %s\n", r.wd), nil
}

// collected is what a chain of stages sets up that the runtime needs.
type collected struct {
	madeDirs []string      // directories under the WORKDIR that a RUN mkdir made
	args     []string      // ARG instructions, verbatim (ENV may use them)
	envs     []string      // ENV instructions, verbatim
	lastUser string        // the last USER, verbatim
	users    bool          // a RUN adds users or groups
	outside  []outsideCopy // what COPY and ADD put outside the WORKDIR
	prune    string        // the step that prunes dev dependencies
}

func (r *rewriter) collect(stages []int) collected {
	var c collected
	// The stages are a FROM chain, root first: WORKDIR and ENV carry on.
	wd, production := "/", false
	var pkgDirs []string // directories a COPY put a package.json in
	for _, i := range stages {
		for _, in := range r.d.Stages[i].Instructions {
			switch in.Command {
			case "workdir":
				if len(in.Args) == 1 {
					wd = resolvePath(wd, in.Args[0])
				}
			case "arg":
				c.args = append(c.args, r.verbatim(in))
			case "user":
				c.lastUser = r.verbatim(in)
			case "env":
				c.envs = append(c.envs, r.verbatim(in))
				for _, kv := range in.Args {
					if k, v, _ := strings.Cut(kv, "="); k == "NODE_ENV" {
						production = v == "production"
					}
				}
			case "copy", "add":
				if len(in.Args) > 0 {
					raw := in.Args[len(in.Args)-1]
					dest := resolvePath(wd, raw)
					srcs := in.Args[:len(in.Args)-1]
					if in.From == "" && slices.ContainsFunc(srcs, isManifest) {
						pkgDirs = append(pkgDirs, copyDir(dest, raw, srcs))
					}
					if !within(dest, r.wd) {
						c.outside = append(c.outside, outsideFor(dest, raw, srcs, r.wd)...)
					}
				}
			case "run":
				cmds := [][]string{in.Args}
				if in.Form == dockerfile.FormShell {
					cmds = shellcmd.Analyze(strings.Join(in.Args, " ")).Commands
				}
				for _, cmd := range cmds {
					if len(cmd) == 0 {
						continue
					}
					switch path.Base(cmd[0]) {
					case "adduser", "addgroup", "useradd", "groupadd", "usermod":
						c.users = true
					case "mkdir":
						for _, a := range cmd[1:] {
							if !strings.HasPrefix(a, "-") && !strings.Contains(a, "<expanded>") {
								if d := resolvePath(wd, a); within(d, r.wd) && d != path.Clean(r.wd) {
									c.madeDirs = append(c.madeDirs, d)
								}
							}
						}
					case "npm", "yarn", "pnpm":
						// With NODE_ENV=production an install leaves dev
						// dependencies out already.
						if p := pruneFor(cmd); p != "" && !production {
							c.prune = p
						} else if isInstall(cmd) {
							c.prune = ""
						}
						// An install finds its project by walking up from
						// the WORKDIR to a package.json: one that a COPY put
						// above the WORKDIR gets its node_modules there.
						if isInstall(cmd) {
							if root := projectRoot(wd, pkgDirs); root != "" && !within(root, r.wd) {
								nm := path.Join(root, "node_modules")
								c.outside = append(c.outside, outsideCopy{src: nm, dest: nm})
							}
						}
					}
				}
			}
		}
	}
	return c
}

// copies writes the COPY --from lines that hand a files stage's results to
// the runtime stage.
func (r *rewriter) copies(b *strings.Builder, files string, c collected) {
	fmt.Fprintf(b, "COPY --from=%s %s %s\n", files, r.wd, r.wd)
	if c.users {
		fmt.Fprintf(b, "COPY --from=%s /etc/passwd /etc/group /etc/\n", files)
	}
	for _, o := range dedupe(c.outside) {
		fmt.Fprintf(b, "COPY --from=%s %s %s\n", files, o.src, o.dest)
	}
	for _, a := range c.args {
		b.WriteString(a)
	}
	for _, e := range c.envs {
		b.WriteString(e)
	}
	if c.lastUser != "" {
		b.WriteString(c.lastUser)
	}
}

// outsideCopy is one COPY --from line for what a files stage put outside
// its WORKDIR.
type outsideCopy struct{ src, dest string }

// outsideFor names what COPY srcs raw put at dest, outside the WORKDIR wd.
// A destination that holds the WORKDIR ("/", or /srv above /srv/app) is
// never copied whole: that would copy the files stage's own system (its
// shell among it) over the target's. Each source is copied by name instead,
// into that directory; a source that is a directory, whose contents land
// there unnamed, keeps the whole destination.
func outsideFor(dest, raw string, srcs []string, wd string) []outsideCopy {
	intoDir := strings.HasSuffix(raw, "/") || len(srcs) > 1 || slices.ContainsFunc(srcs, isGlob)
	if !intoDir || !within(wd, dest) {
		return []outsideCopy{{src: dest, dest: dest}}
	}
	var out []outsideCopy
	for _, s := range srcs {
		base := path.Base(s)
		if strings.HasSuffix(s, "/") || base == "." || base == "/" || base == ".." {
			return []outsideCopy{{src: dest, dest: dest}}
		}
		out = append(out, outsideCopy{src: path.Join(dest, base), dest: strings.TrimSuffix(dest, "/") + "/"})
	}
	return out
}

// copyDir is the directory a COPY of srcs to raw (resolved: dest) writes
// its files into.
func copyDir(dest, raw string, srcs []string) string {
	if strings.HasSuffix(raw, "/") || len(srcs) > 1 || slices.ContainsFunc(srcs, isGlob) || slices.Contains(srcs, ".") {
		return dest
	}
	return path.Dir(dest)
}

// isManifest reports a COPY source that brings a package.json.
func isManifest(s string) bool {
	if s == "." || strings.HasSuffix(s, "/") {
		return true
	}
	ok, err := path.Match(path.Base(s), "package.json")
	return err == nil && ok
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// projectRoot is the nearest directory at or above wd that a COPY put a
// package.json in, the way npm finds its project; "" when none did.
func projectRoot(wd string, pkgDirs []string) string {
	for d := path.Clean(wd); ; d = path.Dir(d) {
		if slices.Contains(pkgDirs, d) {
			return d
		}
		if d == "/" {
			return ""
		}
	}
}

func resolvePath(wd, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(wd, p)
}

// sameRepo reports whether two references name the same repository.
func sameRepo(a, b string) bool { return repoOf(a) == repoOf(b) }

func repoOf(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// from writes a FROM line.
func from(platform, ref, name string) string {
	s := "FROM "
	if platform != "" {
		s += "--platform=" + platform + " "
	}
	s += ref
	if name != "" {
		s += " AS " + name
	}
	return s + "\n"
}

func (r *rewriter) lastLine(in dockerfile.Instruction) int {
	if in.EndLine > in.Line {
		return in.EndLine
	}
	return in.Line
}

// stageEnd is the last line of stage i's instructions (its FROM line when
// it has none).
func (r *rewriter) stageEnd(i int) int {
	st := r.d.Stages[i]
	end := max(st.Line, st.EndLine)
	for _, in := range st.Instructions {
		end = max(end, r.lastLine(in))
	}
	return end
}

// verbatim is an instruction's original lines.
func (r *rewriter) verbatim(in dockerfile.Instruction) string {
	var b strings.Builder
	for l := in.Line; l <= r.lastLine(in) && l <= len(r.src); l++ {
		b.Write(r.src[l-1])
	}
	s := b.String()
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

func (r *rewriter) replace(in dockerfile.Instruction, text string) {
	r.edits = append(r.edits, edit{from: in.Line, to: r.lastLine(in), text: text})
}

func (r *rewriter) insertAfter(line int, text string) {
	r.edits = append(r.edits, edit{from: line + 1, to: line, text: text})
}

// builderRef is the glibc builder image of the service's major.
func (r *rewriter) builderRef() string {
	return fmt.Sprintf("node:%d-bookworm-slim", r.target.Major)
}

// builders moves builder stages to glibc and the runtime's Node major, as
// the native-ABI and version rules ask.
func (r *rewriter) builders() error {
	if !r.has(readiness.RuleGlibcBuilder) && !r.has(readiness.RuleSameMajor) && !r.has(readiness.RuleBumpNode) {
		return nil
	}
	// The stages to move are the roots (built from an image) of the
	// builder's chain and, when it is built from a stage, of the runtime
	// stage's chain.
	roots := map[int]bool{}
	for _, img := range r.in.Runtime.Images {
		if img.Builder != nil && img.Dockerfile == r.in.Dockerfile && img.Builder.Stage != r.t {
			roots[r.root(img.Builder.Stage)] = true
		}
	}
	if r.d.Stages[r.t].BaseStage >= 0 {
		roots[r.root(r.t)] = true
	}
	done := map[int]bool{}
	for i := range r.d.Stages {
		if !roots[i] {
			continue
		}
		st := r.d.Stages[i]
		musl := strings.Contains(st.ResolvedBase, "alpine")
		if !musl && nodeMajorOf(st.ResolvedBase) == r.target.Major && dockerfile.ClassifyBase(st.ResolvedBase) == dockerfile.BaseOfficialNode {
			continue
		}
		if dockerfile.ClassifyBase(st.ResolvedBase) != dockerfile.BaseOfficialNode && !musl {
			continue // not a node image: its Node comes from elsewhere
		}
		done[i] = true
		r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: from(st.Platform, r.builderRef(), st.Name)})
		if musl {
			for j := range r.d.Stages {
				if r.root(j) == i && j != r.t {
					if err := r.apkToApt(j); err != nil {
						return err
					}
				}
			}
		}
	}
	if len(done) > 0 {
		what := fmt.Sprintf("the builder runs on %s (glibc, Node %d), so native addons match the runtime", r.builderRef(), r.target.Major)
		for _, rule := range []string{readiness.RuleGlibcBuilder, readiness.RuleSameMajor} {
			if r.has(rule) {
				r.change(rule, what)
			}
		}
	}
	if r.has(readiness.RuleBumpNode) {
		r.change(readiness.RuleBumpNode, fmt.Sprintf("Node moves to %d, the nearest major with a distroless image", r.target.Major))
	}
	return nil
}

// root is the first stage of stage i's FROM chain: the one built from an
// image.
func (r *rewriter) root(i int) int {
	for n := 0; r.d.Stages[i].BaseStage >= 0 && n <= len(r.d.Stages); n++ {
		i = r.d.Stages[i].BaseStage
	}
	return i
}

// startLines are the instructions that start the service on the target.
func (r *rewriter) startLines() ([]string, error) {
	s := r.in.Plan.Start
	if s == nil {
		return nil, r.refuse(readiness.RuleUnclassified, "the service's start command is not known", "codegenie cannot tell what the container runs, so it cannot write its exec-form command", 0)
	}
	if r.has(readiness.RuleInitWrapper) && s.Init == "" {
		// The init's job would go with it, unreplaced.
		return nil, r.refuse(readiness.RuleUnclassified, "the start runs through an init wrapper that the plan does not name", "codegenie cannot tell which command the init wraps, so the launcher cannot take its place", 0)
	}
	var out []string
	if len(s.Env) > 0 {
		out = append(out, "ENV "+strings.Join(quoteEnv(s.Env), " ")+"\n")
	}
	var args []string
	switch {
	case s.Program != nil:
		return nil, r.refuse(readiness.RuleBinaryAtRuntime, "the service starts "+strings.Join(s.Program, " "), "it is not node, and a distroless node image runs node", 0)
	case len(s.Steps) > 0 || s.Bin != "" || s.Init != "":
		var steps []step
		for _, st := range s.Steps {
			steps = append(steps, step{Args: readiness.DistrolessCmd(st)})
		}
		switch {
		case s.Bin != "":
			steps = append(steps, step{Bin: s.Bin, Args: append([]string{}, s.Args...)})
		case len(s.Steps) == 0:
			// An init wrapper's command: the launcher, as pid 1, runs it as
			// its child and forwards signals to it, as the init did.
			steps = append(steps, step{Args: append([]string{}, s.Args...)})
		}
		if s.AppendArgs {
			steps[len(steps)-1].PassArgs = true
		}
		for i := range steps {
			if steps[i].Args == nil {
				steps[i].Args = []string{}
			}
		}
		r.generate(LauncherName, launcher(steps, nil))
		// COPY sources are relative to the build context, where generate
		// puts the file.
		out = append(out, fmt.Sprintf("COPY %s %s\n", LauncherName, path.Join(r.wd, LauncherName)))
		args = []string{path.Join(r.wd, LauncherName)}
		if len(s.Steps) > 0 || s.Bin != "" {
			r.change(readiness.RuleNodeLauncher, fmt.Sprintf("a generated launcher (%s) runs %s without a shell", LauncherName, s.From))
		}
		if s.Bin != "" {
			r.change(readiness.RuleScriptArgv, fmt.Sprintf("%s becomes %s, which runs %s's JS file from node_modules", s.From, LauncherName, s.Bin))
		}
		if s.Init != "" {
			r.change(readiness.RuleInitWrapper, fmt.Sprintf("%s goes; %s runs %s as its child and forwards SIGTERM, SIGINT and SIGHUP to it", s.Init, LauncherName, s.From))
		}
	default:
		args = s.Args
	}
	entry := ""
	switch {
	case s.AppendArgs:
		// exec node app.js "$@": node and its fixed arguments are the
		// ENTRYPOINT, and docker run's arguments (else CMD) follow them.
		entry = execForm(append([]string{r.target.Node}, args...))
		out = append(out, "ENTRYPOINT "+entry+"\n")
		args = s.CmdArgs
	case !r.target.EntrypointNode:
		out = append(out, "ENTRYPOINT "+execForm([]string{r.target.Node})+"\n")
	}
	if s.Dir != "" {
		// The script of another package runs in that package's folder.
		out = append(out, "WORKDIR "+path.Join(r.wd, s.Dir)+"\n")
		r.change(readiness.RuleScriptArgv, fmt.Sprintf("the command runs in %s, as %s did", path.Join(r.wd, s.Dir), s.From))
	}
	if len(args) > 0 || !s.AppendArgs {
		out = append(out, "CMD "+execForm(args)+"\n")
	}
	if len(s.Steps) == 0 && s.Bin == "" {
		what := fmt.Sprintf("%s becomes CMD %s", s.From, execForm(args))
		if s.AppendArgs {
			what = fmt.Sprintf("%s becomes ENTRYPOINT %s", s.From, entry)
			if len(args) > 0 {
				what += " and CMD " + execForm(args)
			}
		}
		if len(s.Env) > 0 {
			what += " with ENV " + strings.Join(s.Env, " ")
		}
		if s.AppendArgs {
			what += `; docker run's arguments follow the command, as the script's "$@" passed them`
		}
		for _, rule := range startRules {
			if rule != readiness.RuleNodeLauncher {
				r.changeIfBlocked(rule, what)
			}
		}
	}
	r.changeIfBlocked(readiness.RuleJSEntry, "the start runs the JS file itself, not its shim or #!/usr/bin/env node wrapper")
	return out, nil
}

// changeIfBlocked records rule's changes only when the plan has blockers of it.
func (r *rewriter) changeIfBlocked(rule, what string) {
	if r.has(rule) && !slices.ContainsFunc(r.res.Changes, func(c Change) bool { return c.Rule == rule }) {
		r.change(rule, what)
	}
}

// generate adds a generated file to the build context.
func (r *rewriter) generate(name string, data []byte) {
	p := path.Join(r.in.Context, name)
	for _, g := range r.gen {
		if g.Path == p {
			return
		}
	}
	r.gen = append(r.gen, File{Path: p, New: data, Mode: 0o644, Generated: true})
}

// execForm writes an exec-form argument list.
func execForm(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = jsonString(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quoteEnv writes KEY=VALUE pairs for ENV, quoting values that need it.
func quoteEnv(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" || strings.ContainsAny(v, " \t\"'$\\") {
			v = jsonString(v)
		}
		out[i] = k + "=" + v
	}
	return out
}

// healthRE splits a HEALTHCHECK line into its options and its command.
var healthRE = regexp.MustCompile(`(?is)^\s*HEALTHCHECK\s+((?:--[a-z-]+=\S+\s+)*)CMD\b`)

// healthLines is the rewritten HEALTHCHECK (with the COPY of a generated
// check before it), nil when the check stays.
func (r *rewriter) healthLines() ([]string, error) {
	// The image's HEALTHCHECK and a compose file's healthcheck are each
	// rewritten where they are: compose's overrides the image's only when
	// the service runs through compose.
	var act *readiness.Action
	var composed []*readiness.Action
	for _, rule := range []string{readiness.RuleHealthExecForm, readiness.RuleHealthNode} {
		for i := range r.byRule[rule] {
			a := &r.byRule[rule][i]
			if a.Edit.InCompose {
				composed = append(composed, a)
			} else {
				act = a
			}
		}
	}
	for _, a := range composed {
		if err := r.composeHealth(a, act != nil && act.Blocker.Rule == readiness.RuleHealthNode); err != nil {
			return nil, err
		}
	}
	if act == nil {
		return nil, nil
	}
	hc, ok := r.d.Effective(r.t, "healthcheck")
	if !ok {
		return nil, r.refuse(act.Blocker.Rule, "the HEALTHCHECK is not in the runtime stage", "codegenie rewrites the runtime stage's own HEALTHCHECK", 0)
	}
	// The parser's one-line text of the instruction: continuation lines
	// (with either escape character) joined and the comments between them
	// dropped.
	text := hc.Source
	if text == "" {
		text = r.verbatim(hc)
	}
	m := healthRE.FindStringSubmatch(text)
	if m == nil {
		return nil, r.refuse(act.Blocker.Rule, "the HEALTHCHECK's options could not be read", "write it as HEALTHCHECK [options] CMD [...] by hand", hc.Line)
	}
	opts := strings.Join(strings.Fields(m[1]), " ")
	if opts != "" {
		opts += " "
	}
	node := r.target.Node
	var out []string
	switch act.Blocker.Rule {
	case readiness.RuleHealthExecForm:
		out = append(out, "HEALTHCHECK "+opts+"CMD "+execForm(append([]string{node}, act.Edit.Health...))+"\n")
		r.change(readiness.RuleHealthExecForm, "the HEALTHCHECK runs "+node+" in exec form, options kept")
	case readiness.RuleHealthNode:
		c, err := r.httpCheck(act, HealthName)
		if err != nil {
			return nil, err
		}
		dest := path.Join(r.wd, HealthName)
		out = append(out, fmt.Sprintf("COPY %s %s\n", HealthName, dest))
		out = append(out, "HEALTHCHECK "+opts+"CMD "+execForm([]string{node, dest})+"\n")
		r.change(readiness.RuleHealthNode, fmt.Sprintf("the %s HEALTHCHECK becomes %s, a generated Node script that requests %s as %s did and %s; interval, timeout and retries kept",
			healthTool(c.Tool), HealthName, strings.Join(c.URLs, " and "), healthTool(c.Tool), c.Rule()))
	}
	return out, nil
}

// httpCheck generates the Node check of a curl or wget health check and
// records the URL paths it requests for the gates.
func (r *rewriter) httpCheck(act *readiness.Action, name string) (*httpcheck.Check, error) {
	c := act.Edit.HealthCheck
	if c == nil || len(c.URLs) == 0 {
		return nil, r.refuse(act.Blocker.Rule, "the health check's requests are not known", "the plan names no curl or wget command to carry into a Node check; rewrite the check by hand", 0)
	}
	r.generate(name, healthScript(c))
	for _, raw := range c.URLs {
		if u, err := url.Parse(raw); err == nil && u.Path != "" && u.Path != "/" && !slices.Contains(r.res.ProbePaths, u.EscapedPath()) {
			r.res.ProbePaths = append(r.res.ProbePaths, u.EscapedPath())
		}
	}
	return c, nil
}

// composeHealth rewrites a compose file's healthcheck test to run node by
// its path in exec form: the check's own node command, or a generated Node
// script that requests the URL a curl or wget check requested (its COPY
// goes before the start command). With imageScript, the image's own
// HEALTHCHECK has a generated script too, and compose's is another file.
func (r *rewriter) composeHealth(act *readiness.Action, imageScript bool) error {
	if len(act.Blocker.Evidence) == 0 || r.in.Read == nil {
		return r.refuse(act.Blocker.Rule, "the compose healthcheck cannot be located", "rewrite it by hand", 0)
	}
	ev := act.Blocker.Evidence[0]
	argv := append([]string{"CMD", r.target.Node}, act.Edit.Health...)
	if act.Blocker.Rule == readiness.RuleHealthNode {
		name := pick(imageScript, ComposeHealthName, HealthName)
		if _, err := r.httpCheck(act, name); err != nil {
			return err
		}
		dest := path.Join(r.wd, name)
		r.preStart = append(r.preStart, fmt.Sprintf("COPY %s %s\n", name, dest))
		argv = []string{"CMD", r.target.Node, dest}
	}
	old, err := r.in.Read(ev.File)
	if err != nil {
		return err
	}
	edits, ok := composeTestEdit(old, ev.Line, argv)
	if !ok {
		return r.refuse(act.Blocker.Rule, "the compose healthcheck's test is not where its line says", "rewrite it by hand as test: "+execForm(argv), 0)
	}
	out, err := apply(old, edits)
	if err != nil {
		return err
	}
	r.others = append(r.others, File{Path: ev.File, Old: old, New: out, Mode: 0o644})
	r.change(act.Blocker.Rule, fmt.Sprintf("the compose healthcheck (%s:%d) becomes test: %s", ev.File, ev.Line, execForm(argv)))
	return nil
}

// composeTestRE is a compose healthcheck's test key and what follows it on
// its line.
var composeTestRE = regexp.MustCompile(`^(\s*)test:(.*)$`)

// composeTestEdit replaces the test at line (one line, or a block list
// below it) with a flow sequence of argv.
func composeTestEdit(data []byte, line int, argv []string) ([]edit, bool) {
	ls := lines(data)
	if line < 1 || line > len(ls) {
		return nil, false
	}
	// The line compose's parser gives may be the healthcheck key, the test
	// key or an item of its list: take the nearest test key.
	var m []string
	for d := 0; d <= 6 && m == nil; d++ {
		for _, l := range []int{line - d, line + d} {
			if l >= 1 && l <= len(ls) && m == nil {
				if m = composeTestRE.FindStringSubmatch(strings.TrimRight(string(ls[l-1]), "\r\n")); m != nil {
					line = l
				}
			}
		}
	}
	if m == nil {
		return nil, false
	}
	end := line
	if strings.TrimSpace(m[2]) == "" {
		// A block list: the items below, indented deeper.
		for end < len(ls) {
			next := string(ls[end])
			trimmed := strings.TrimLeft(next, " ")
			if !strings.HasPrefix(trimmed, "- ") || len(next)-len(trimmed) <= len(m[1]) {
				break
			}
			end++
		}
	}
	return []edit{{from: line, to: end, text: m[1] + "test: " + execForm(argv) + "\n"}}, true
}

// swap moves the runtime stage to the target in place.
func (r *rewriter) swap(start, health []string) error {
	st := r.d.Stages[r.t]
	if r.newBase {
		text := from(st.Platform, r.target.Pinned(), st.Name)
		if r.needsNodeUser() {
			text += fmt.Sprintf("COPY --from=%s /etc/passwd /etc/group /etc/\n", r.builderRef())
			r.change(readiness.RuleDistrolessBase, "the node image's users and groups are copied in, since the stage runs as or chowns to node, whom "+r.target.Ref+" does not know")
		}
		r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: text})
		r.change(readiness.RuleDistrolessBase, "the runtime stage is FROM "+r.target.Pinned())
	}
	hc, hasHC := r.d.Effective(r.t, "healthcheck")
	cmdDone := false
	cmds := r.all("cmd")
	for _, in := range st.Instructions {
		switch in.Command {
		case "entrypoint":
			if start != nil {
				r.replace(in, "")
			}
		case "cmd":
			if start != nil {
				if in.Line == cmds[len(cmds)-1].Line {
					r.replace(in, strings.Join(start, ""))
					cmdDone = true
				} else {
					r.replace(in, "")
				}
			}
		case "healthcheck":
			if health != nil && hasHC && in.Line == hc.Line {
				r.replace(in, strings.Join(health, ""))
			}
		case "shell":
			r.replace(in, "")
			r.change(readiness.RuleExecForm, "SHELL goes: every instruction of the runtime stage is in exec form")
		}
	}
	if start != nil && !cmdDone {
		r.insertAfter(r.stageEnd(r.t), strings.Join(start, ""))
	}
	if start == nil && len(r.preStart) > 0 {
		r.insertAfter(r.stageEnd(r.t), strings.Join(r.preStart, ""))
	}
	return nil
}

// all returns stage t's instructions of a command.
func (r *rewriter) all(cmd string) []dockerfile.Instruction {
	var out []dockerfile.Instruction
	for _, in := range r.d.Stages[r.t].Instructions {
		if in.Command == cmd {
			out = append(out, in)
		}
	}
	return out
}

// runtimeOnly are instructions that describe the container, not its files:
// they move to the new runtime stage.
var runtimeOnly = map[string]bool{"cmd": true, "entrypoint": true, "healthcheck": true, "expose": true, "stopsignal": true, "volume": true, "label": true, "shell": true, "onbuild": true}

// split turns the runtime stage into a files stage that keeps its RUN
// steps, and appends a runtime stage on the target that copies the files.
func (r *rewriter) split(start, health []string) error {
	st := r.d.Stages[r.t]
	workdir, err := r.appDir(readiness.RuleMoveToBuilder)
	if err != nil {
		return err
	}
	files := "app-files"
	if st.Name != "" {
		files = st.Name + "-files"
	}
	base := st.Base
	switch {
	case st.BaseStage >= 0:
		// Built from an earlier stage, which stays as it is.
	case dockerfile.ClassifyBase(st.ResolvedBase) != dockerfile.BaseOfficialNode || strings.Contains(st.ResolvedBase, "alpine") || nodeMajorOf(st.ResolvedBase) != r.target.Major:
		base = r.builderRef()
		if strings.Contains(st.ResolvedBase, "alpine") {
			if err := r.apkToApt(r.t); err != nil {
				return err
			}
		}
	}
	r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: from(st.Platform, base, files)})
	var keep []string
	hc, _ := r.d.Effective(r.t, "healthcheck")
	for _, in := range st.Instructions {
		switch {
		case in.Command == "cmd" || in.Command == "entrypoint" || in.Command == "shell" || in.Command == "onbuild":
			r.replace(in, "")
		case in.Command == "healthcheck":
			r.replace(in, "")
			if in.Line == hc.Line {
				if health != nil {
					keep = append(keep, health...)
				} else {
					keep = append(keep, r.verbatim(in))
				}
			}
		case runtimeOnly[in.Command]:
			r.replace(in, "")
			keep = append(keep, r.verbatim(in))
		}
	}
	c := r.collect(r.chain())
	c.users = c.users || r.needsNodeUser()
	// The new stage follows the files stage's last kept instruction, so
	// that what came after the runtime-only lines stays after it.
	end := max(st.Line, st.EndLine)
	for _, in := range st.Instructions {
		if !runtimeOnly[in.Command] {
			end = max(end, r.lastLine(in))
		}
	}
	if c.prune != "" {
		r.insertAfter(end, "RUN "+c.prune+"\n")
		r.change(readiness.RuleMoveToBuilder, "dev dependencies are pruned in the files stage: "+c.prune)
	}
	// The service ran as root and could write the directories its RUN
	// steps made; on a target that runs as another user they go to that
	// user, in the files stage (COPY --from keeps ownership).
	if dirs := dedupe(c.madeDirs); c.lastUser == "" && r.target.UID != "" && len(dirs) > 0 {
		r.insertAfter(end, fmt.Sprintf("RUN chown -R %s %s\n", r.target.UID, strings.Join(dirs, " ")))
		r.change(readiness.RuleMoveToBuilder, fmt.Sprintf("the directories the RUN steps made (%s) go to %s, the target's user, since the service ran as root and wrote there", strings.Join(dirs, ", "), r.target.User))
	}
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString(from(st.Platform, r.target.Pinned(), st.Name))
	b.WriteString(workdir)
	r.copies(&b, files, c)
	for _, k := range keep {
		b.WriteString(k)
	}
	for _, s := range start {
		b.WriteString(s)
	}
	r.insertAfter(end, b.String())
	r.appended = true
	r.change(readiness.RuleMoveToBuilder, fmt.Sprintf("the runtime stage's RUN steps stay in a files stage (%s, on %s); a new runtime stage on %s copies %s from it with COPY --from, ownership kept%s",
		files, base, r.target.Pinned(), r.wd, pick(c.users, ", and the users and groups they add (/etc/passwd, /etc/group)", "")))
	r.change(readiness.RuleDistrolessBase, "the runtime stage is FROM "+r.target.Pinned())
	return nil
}

func within(p, dir string) bool {
	p, dir = path.Clean(p), path.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// pruneFor is the step that drops dev dependencies after an install that
// keeps them; empty when c is not such an install.
func pruneFor(c []string) string {
	if len(c) < 2 {
		return ""
	}
	pm := path.Base(c[0])
	if !isInstall(c) {
		return ""
	}
	for _, a := range c[2:] {
		switch a {
		case "--omit=dev", "--production", "--prod", "-P", "--only=production", "--only=prod":
			return ""
		}
		if strings.HasPrefix(a, "-g") || a == "--global" {
			return ""
		}
		if !strings.HasPrefix(a, "-") {
			return "" // installs named packages, not the project's
		}
	}
	switch pm {
	case "npm":
		return "npm prune --omit=dev"
	case "pnpm":
		return "pnpm prune --prod"
	default:
		return "yarn install --production --frozen-lockfile --ignore-scripts"
	}
}

// isInstall reports a package manager's install of the project.
func isInstall(c []string) bool {
	if len(c) < 2 {
		return path.Base(c[0]) == "yarn"
	}
	return c[1] == "install" || c[1] == "i" || c[1] == "ci"
}

// nodeMajorOf reads the Node major of an official node image reference.
func nodeMajorOf(ref string) int {
	tag := ref
	if i := strings.LastIndex(tag, ":"); i >= 0 {
		tag = tag[i+1:]
	}
	var m int
	if _, err := fmt.Sscanf(tag, "%d", &m); err != nil {
		return 0
	}
	return m
}

func dedupe[T comparable](s []T) []T {
	var out []T
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}
