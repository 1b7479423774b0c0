// Package dockerfileprobe is the dockerfile probe: it parses every
// Dockerfile in the repository with buildkit's parser (through package
// dockerfile) and reports the stages, the final and builder stages, and each
// instruction's form. It raises a warning, with file and line, for each
// instruction that needs a shell in the image that runs it: shell-form CMD,
// ENTRYPOINT and HEALTHCHECK, a SHELL instruction, and shell-form RUN in the
// final stage (which builds on the runtime base, where distroless has no
// shell). RUN in builder stages is fine and is not flagged.
package dockerfileprobe

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
)

// Name is the probe's name.
const Name = "dockerfile"

// ReasonParseError: at least one Dockerfile could not be parsed.
const ReasonParseError probe.Reason = "dockerfile_parse_error"

// Warning IDs.
const (
	WarnParseError        = "dockerfile.parse_error"
	WarnNoneFound         = "dockerfile.none_found"
	WarnShellFormCmd      = "dockerfile.shell_form_cmd"
	WarnShellFormEntry    = "dockerfile.shell_form_entrypoint"
	WarnShellFormHealth   = "dockerfile.shell_form_healthcheck"
	WarnShellFormRunFinal = "dockerfile.shell_form_run_in_final_stage"
	WarnShellInstruction  = "dockerfile.shell_instruction"
)

// Warnings are the warnings this probe raises.
var Warnings = []probe.WarningDesc{
	{ID: WarnParseError, Summary: "a Dockerfile could not be parsed"},
	{ID: WarnNoneFound, Summary: "the repository has no Dockerfile"},
	{ID: WarnShellFormCmd, Summary: "the final stage's CMD is in shell form and runs through /bin/sh -c"},
	{ID: WarnShellFormEntry, Summary: "the final stage's ENTRYPOINT is in shell form and runs through /bin/sh -c"},
	{ID: WarnShellFormHealth, Summary: "the final stage's HEALTHCHECK is in shell form (CMD-SHELL) and runs through /bin/sh -c"},
	{ID: WarnShellFormRunFinal, Summary: "a shell-form RUN in the final stage needs /bin/sh while building on the runtime base"},
	{ID: WarnShellInstruction, Summary: "a SHELL instruction in the final stage names a shell the runtime image must have"},
}

// Facts are the dockerfile facts: one entry per Dockerfile, sorted by path,
// and the image the run judges.
type Facts struct {
	Files []File `json:"files"`
	// Image is the judged image; nil when the repository has no Dockerfile.
	Image *Image `json:"image,omitempty"`
	// Compose are the compose files' build sections.
	Compose []images.ComposeBuild `json:"compose,omitempty"`
}

// Image is the judged image: which Dockerfile and stage, why, and the
// build context its COPY sources are read from.
type Image struct {
	Dockerfile string `json:"dockerfile"`
	Target     string `json:"target"`
	Stage      int    `json:"stage"`
	Why        string `json:"why"`
	Context    string `json:"context"`
	ContextWhy string `json:"context_why"`
}

// File is one Dockerfile: parsed, or the error that stopped the parse.
type File struct {
	Path   string           `json:"path"`
	Parsed *dockerfile.File `json:"parsed,omitempty"`
	Error  *Error           `json:"error,omitempty"`
}

// Error locates a parse error.
type Error struct {
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// Probe is the dockerfile probe.
type Probe struct{}

// New returns the probe.
func New() *Probe { return &Probe{} }

var _ probe.Probe = (*Probe)(nil)

// Desc describes the probe.
func (*Probe) Desc() probe.Desc {
	return probe.Desc{
		Name:           Name,
		Version:        "8", // 8: USER is read as buildkit reads it, one shell word (USER "node" runs as node) with ARG and ENV expanded; 7: a compose service that runs, by name, an image the repository builds from a Dockerfile (a CI workflow's build-push-action, with its metadata-action images or matrix entries; docker build -t) stands for that image's compose service, its command, entrypoint and healthcheck too (images.PublishedRuns); 6: the commands inside if, for, case and $(…) of a shell line are its commands too (shellcmd); 5: the build context guessed for a Dockerfile no compose file builds counts only COPY sources that are in one of its folder and the root (images.guessContext); 3: ARG and ENV values expanded in COPY, ADD, WORKDIR and ENV (issue 21); 4: VOLUME paths in Args
		Heaviness:      probe.Light,
		CacheStrategy:  probe.CacheContent,
		PerImage:       true,
		DeclaredInputs: images.Inputs(),
		NewFacts:       func() any { return new(Facts) },
	}
}

// Run parses every Dockerfile and flags the judged image's instructions.
// A parse error lowers confidence only when it is the judged Dockerfile's:
// the others are other images.
func (*Probe) Run(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (probe.Output, error) {
	files, err := images.ParseAll(ctx, repo)
	if err != nil {
		return probe.Output{}, err
	}
	comp, err := images.Compose.Of(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	j, err := images.Image.Of(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	built, err := images.Built.Of(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	facts := &Facts{Files: []File{}, Compose: append(slices.Clone(comp.Builds), images.PublishedRuns(comp.Runs, built)...)}
	out := probe.Output{Confidence: probe.High, Facts: facts}
	if len(files) == 0 {
		out.Warnings = append(out.Warnings, probe.Warning{ID: WarnNoneFound, Message: "no Dockerfile found; there is no image to migrate"})
		return out, nil
	}
	if len(comp.Unread) > 0 {
		// A compose file that was not read may name the judged image's
		// target or build context: which image is judged is uncertain.
		u := comp.Unread[0]
		out.Confidence, out.Reason, out.Detail = probe.Low, u.Reason, u.Path+": "+u.Detail
		out.Evidence = append(out.Evidence, probe.Evidence{File: u.Path})
	}
	if j != nil {
		facts.Image = &Image{Dockerfile: j.Ref.Dockerfile, Target: j.Ref.Target, Stage: -1, Why: j.Ref.Why, Context: j.Context, ContextWhy: j.ContextWhy}
		if j.File != nil {
			facts.Image.Stage = j.File.Final
		}
	}
	for _, pf := range files {
		judged := j != nil && pf.Path == j.Ref.Dockerfile
		if pe := pf.Err; pe != nil {
			facts.Files = append(facts.Files, File{Path: pf.Path, Error: &Error{Line: pe.Line, Message: pe.Msg}})
			ev := probe.Evidence{File: pf.Path, Line: pe.Line}
			out.Warnings = append(out.Warnings, probe.Warning{ID: WarnParseError, Message: pe.Error(), Evidence: []probe.Evidence{ev}})
			if !judged {
				continue
			}
			out.Evidence = append(out.Evidence, ev)
			out.Confidence, out.Reason, out.Detail = probe.Low, ReasonParseError, pe.Error()
			if pf.Unread != "" {
				out.Reason = pf.Unread
			}
			continue
		}
		facts.Files = append(facts.Files, File{Path: pf.Path, Parsed: pf.File})
		if judged {
			out.Warnings = append(out.Warnings, findings(j.File)...)
		}
	}
	return out, nil
}

// findings flags what needs a shell in the image that runs it.
func findings(f *dockerfile.File) []probe.Warning {
	var ws []probe.Warning
	at := func(in dockerfile.Instruction) []probe.Evidence {
		return []probe.Evidence{{File: f.Path, Line: in.Line, Note: in.Source}}
	}
	final := f.Final
	for _, cmd := range []struct{ command, id string }{
		{"entrypoint", WarnShellFormEntry},
		{"cmd", WarnShellFormCmd},
		{"healthcheck", WarnShellFormHealth},
	} {
		in, ok := f.Effective(final, cmd.command)
		if !ok || in.Form != dockerfile.FormShell {
			continue
		}
		ws = append(ws, probe.Warning{ID: cmd.id, Message: fmt.Sprintf("%s in shell form: /bin/sh -c %q", strings.ToUpper(cmd.command), strings.Join(in.Args, " ")), Evidence: at(in)})
	}
	// RUN and SHELL count in every stage of the final stage's FROM chain:
	// they all build on the runtime base.
	for i := final; i >= 0; i = f.Stages[i].BaseStage {
		for _, in := range f.Stages[i].Instructions {
			switch {
			case in.Command == "run" && in.Form == dockerfile.FormShell:
				ws = append(ws, probe.Warning{ID: WarnShellFormRunFinal, Message: fmt.Sprintf("RUN in shell form in the final stage: /bin/sh -c %q", strings.Join(in.Args, " ")), Evidence: at(in)})
			case in.Command == "shell":
				ws = append(ws, probe.Warning{ID: WarnShellInstruction, Message: fmt.Sprintf("SHELL %q in the final stage", in.Args), Evidence: at(in)})
			}
		}
	}
	return ws
}
