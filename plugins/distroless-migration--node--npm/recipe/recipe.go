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
//
// The files: recipe.go is the entry (Prepare, Rewrite) and the rewriter's
// state; layout.go picks how the runtime stage becomes a stage on the
// target, one file per layout (swap.go, inline.go, split.go). Each group
// of rules of the table (readiness/rules.go, the one contract between the
// verdict and the recipe) has its file: start.go (the start command),
// health.go (health checks), builders.go and apk.go (builder stages),
// files.go (what a files stage hands on, move_to_builder) and users.go.
// text.go and edit.go read and write Dockerfile lines, generated.go writes
// the generated JS files, and selfcheck.go refuses an output that keeps a
// shell-form instruction on a shell-less image. rules.go names, for each
// removable rule, the file that carries it out: adding a blocker kind is a
// row in readiness/rules.go, its rewrite in that file, and a line there.
package recipe

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
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
	// Pins are the digests of the images other than the target that the
	// rewrite may name (BuilderRef, the target's RootVariant), by
	// reference, as the caller resolved them: a FROM pinned by digest that
	// moves to one stays pinned.
	Pins map[string]string
	// TargetChosen is set when the user named Target (--target-image):
	// the rewrite keeps it even where its user cannot do what root did
	// (DecideUser), and warns.
	TargetChosen bool
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
	in  Input
	res *Result
	d   *dockerfile.File
	t   int
	// gone holds the lines of instructions the rewrite removes whose
	// files no stage copies any more (an init wrapper's ADD).
	gone   map[int]bool
	wd     string
	target Target
	edits  []edit
	src    [][]byte
	gen    []File
	// genRules are the rules whose changes COPY each of gen.
	genRules []string
	byRule   map[string][]readiness.Action
	newBase  bool // the runtime stage's FROM changes
	// added counts the stages the rewrite puts before the new runtime
	// stage (a files stage's runtime stage, a users stage).
	added int
	// preStart are instructions that go before the start command (the
	// COPY of a generated health check a compose file runs).
	preStart []string
	// others are the other files the rewrite edits (compose files).
	others []File
	// chown are the directories the service writes that the files stage
	// chowns to the target's user (DecideUser).
	chown []readiness.Write
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
	res.Stage += r.added
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
	if err := r.unignoreGenerated(); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, r.others...)
	res.Files = append(res.Files, r.gen...)
	if len(res.Files) > 0 && len(res.Changes) == 0 {
		// Every edit is recorded as a change; a rewrite without any would
		// print a patch that nothing explains.
		return nil, fmt.Errorf("recipe: the rewrite of %s changes %d file(s) but records no change; this is a defect of the recipe, please report it", in.Dockerfile, len(res.Files))
	}
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

// changeIfBlocked records rule's changes only when the plan has blockers of it.
func (r *rewriter) changeIfBlocked(rule, what string) {
	if r.has(rule) && !slices.ContainsFunc(r.res.Changes, func(c Change) bool { return c.Rule == rule }) {
		r.change(rule, what)
	}
}
