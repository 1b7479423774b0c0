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
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
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

// Facts are the dockerfile facts: one entry per Dockerfile, sorted by path.
type Facts struct {
	Files []File `json:"files"`
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
		Version:        "1",
		Heaviness:      probe.Light,
		CacheStrategy:  probe.CacheContent,
		DeclaredInputs: dockerfile.Patterns,
		NewFacts:       func() any { return new(Facts) },
	}
}

// Run parses every Dockerfile.
func (*Probe) Run(ctx context.Context, repo *probe.Repo, _ *probe.Context) (probe.Output, error) {
	files, err := ParseAll(ctx, repo)
	if err != nil {
		return probe.Output{}, err
	}
	facts := &Facts{Files: []File{}}
	out := probe.Output{Confidence: probe.High, Facts: facts}
	if len(files) == 0 {
		out.Warnings = append(out.Warnings, probe.Warning{ID: WarnNoneFound, Message: "no Dockerfile found; there is no image to migrate"})
		return out, nil
	}
	var failed []string
	for _, pf := range files {
		if pe := pf.Err; pe != nil {
			facts.Files = append(facts.Files, File{Path: pf.Path, Error: &Error{Line: pe.Line, Message: pe.Msg}})
			ev := probe.Evidence{File: pf.Path, Line: pe.Line}
			out.Warnings = append(out.Warnings, probe.Warning{ID: WarnParseError, Message: pe.Error(), Evidence: []probe.Evidence{ev}})
			out.Evidence = append(out.Evidence, ev)
			failed = append(failed, pe.Error())
			continue
		}
		facts.Files = append(facts.Files, File{Path: pf.Path, Parsed: pf.File})
		out.Warnings = append(out.Warnings, findings(pf.File)...)
	}
	if len(failed) > 0 {
		out.Confidence = probe.Low
		out.Reason = ReasonParseError
		out.Detail = strings.Join(failed, "; ")
	}
	return out, nil
}

// Parsed is one of the repository's Dockerfiles: parsed, or the error
// that stopped its parse.
type Parsed struct {
	Path string
	File *dockerfile.File
	Err  *dockerfile.ParseError
}

// ParseAll finds, reads and parses every Dockerfile, sorted by path. A
// parse error is the file's own; a read error or cancellation stops it.
func ParseAll(ctx context.Context, repo *probe.Repo) ([]Parsed, error) {
	files, err := Find(repo)
	if err != nil {
		return nil, err
	}
	out := make([]Parsed, 0, len(files))
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := repo.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		f, err := dockerfile.Parse(p, data)
		var pe *dockerfile.ParseError
		switch {
		case err == nil:
			out = append(out, Parsed{Path: p, File: f})
		case errors.As(err, &pe):
			out = append(out, Parsed{Path: p, Err: pe})
		default:
			return nil, err
		}
	}
	return out, nil
}

// Find lists the repository's Dockerfiles, sorted.
func Find(repo *probe.Repo) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	for _, pat := range dockerfile.Patterns {
		ms, err := repo.Glob(pat)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if dockerfile.IsDockerfile(m) && !seen[m] {
				seen[m] = true
				files = append(files, m)
			}
		}
	}
	sort.Strings(files)
	return files, nil
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
