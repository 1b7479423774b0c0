// Package dockerfile turns a Dockerfile into the facts the distroless
// probes reason about: stages, their bases with ARGs substituted, which
// stage is final and which is the builder, and each instruction with its
// form (shell or exec). It parses with buildkit's own parser and
// instruction decoder, so it reads Dockerfiles exactly as builds do.
//
// It reads text only; it never builds or runs anything.
package dockerfile

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// Form is how an instruction's command is given.
type Form string

// The forms. Shell form runs through the image's shell (/bin/sh -c).
const (
	FormShell Form = "shell"
	FormExec  Form = "exec"
)

// File is one parsed Dockerfile.
type File struct {
	Path string `json:"path"`
	// Args are the ARGs declared before the first FROM, with defaults.
	Args   []Arg   `json:"args,omitempty"`
	Stages []Stage `json:"stages"`
	// Final is the index of the last stage, the one a plain build outputs.
	Final int `json:"final"`
	// Builder is the index of the stage named "builder", else of the stage
	// the final stage copies from; -1 when there is none.
	Builder int `json:"builder"`
}

// Arg is a build argument.
type Arg struct {
	Name    string `json:"name"`
	Default string `json:"default,omitempty"`
	HasDflt bool   `json:"has_default,omitempty"`
}

// Stage is one FROM and its instructions.
type Stage struct {
	Index int    `json:"index"`
	Name  string `json:"name,omitempty"`
	// Base is the FROM reference as written; ResolvedBase has the ARGs
	// substituted with their defaults.
	Base         string `json:"base"`
	ResolvedBase string `json:"resolved_base"`
	// BaseStage is the index of an earlier stage this one is built FROM,
	// or -1 when the base is an image.
	BaseStage int    `json:"base_stage"`
	Platform  string `json:"platform,omitempty"`
	Line      int    `json:"line"`
	// EndLine is the FROM instruction's last line, when it is continued
	// over several.
	EndLine      int           `json:"end_line,omitempty"`
	Instructions []Instruction `json:"instructions,omitempty"`
	// CopiesFrom are the --from values of this stage's COPY instructions.
	CopiesFrom []string `json:"copies_from,omitempty"`
}

// Instruction is one instruction of a stage.
type Instruction struct {
	// Command is the lower-case instruction: run, cmd, entrypoint,
	// healthcheck, shell, user, expose, workdir, env, copy, add, arg, ...
	Command string `json:"command"`
	Line    int    `json:"line"`
	EndLine int    `json:"end_line,omitempty"`
	// Form is set for run, cmd, entrypoint and healthcheck.
	Form Form `json:"form,omitempty"`
	// Args are the instruction's arguments: the argv of an exec form, the
	// one command string of a shell form, KEY=VALUE pairs for env, the
	// sources and destination of copy, the ports of expose, the paths of
	// volume.
	Args []string `json:"args,omitempty"`
	// From is COPY --from.
	From string `json:"from,omitempty"`
	// HealthcheckNone is set for HEALTHCHECK NONE.
	HealthcheckNone bool   `json:"healthcheck_none,omitempty"`
	Source          string `json:"source"`
	// Unknown are the variables of COPY, ADD, WORKDIR and ENV words whose
	// values the Dockerfile does not give; those words stay as written in
	// Args, and every other word is expanded as buildkit expands it.
	Unknown []UnknownVar `json:"unknown_vars,omitempty"`
}

// ParseError locates a Dockerfile that cannot be parsed.
type ParseError struct {
	Path string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Bounds of a Dockerfile that Parse accepts. They are far above any real
// Dockerfile's, and bound the work (and the facts) of every analysis of
// one: a longer Dockerfile is a *ParseError that says so, and nothing of
// it is parsed. MaxBytes is also what the sandbox's builder accepts.
// MaxPathBytes bounds a stage's working directory: Linux's PATH_MAX, past
// which no build can make or enter it.
const (
	MaxBytes        = 1 << 20
	MaxInstructions = 10_000
	MaxPathBytes    = 4096
)

// Parse parses the Dockerfile data found at path (repository-relative).
// Errors are *ParseError. Its work is linear in the length of data, which
// is at most MaxBytes and MaxInstructions.
func Parse(filePath string, data []byte) (f *File, err error) {
	defer func() {
		// buildkit's decoder is hardened, but a Dockerfile is untrusted
		// input: a panic is a parse error, never a crash.
		if v := recover(); v != nil {
			f, err = nil, &ParseError{Path: filePath, Msg: fmt.Sprintf("parser panic: %v", v)}
		}
	}()
	if len(data) > MaxBytes {
		return nil, &ParseError{Path: filePath, Msg: fmt.Sprintf("larger than %d bytes (%d); it was not parsed", MaxBytes, len(data))}
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, &ParseError{Path: filePath, Line: errLine(err), Msg: errMsg(err)}
	}
	if n := len(res.AST.Children); n > MaxInstructions {
		return nil, &ParseError{Path: filePath, Msg: fmt.Sprintf("more than %d instructions (%d); it was not parsed", MaxInstructions, n)}
	}
	stages, metaArgs, err := decode(filePath, res.AST)
	if err != nil {
		return nil, err
	}
	f = &File{Path: filePath, Builder: -1}
	lex := shell.NewLex(res.EscapeToken)
	// The global scope: the ARGs before the first FROM, which FROM lines
	// expand and a stage sees only the ones it declares again.
	global := newScope()
	for _, k := range platformArgs {
		global.setUnknown(k, whyPlatform)
	}
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			arg := Arg{Name: kv.Key}
			if kv.Value != nil {
				arg.Default, arg.HasDflt = *kv.Value, true
			}
			f.Args = append(f.Args, arg)
		}
		var in Instruction
		expandInstruction(lex, res.EscapeToken, global, nil, &a, &in)
	}
	names := map[string]int{}
	// workdirs[i] is stage i's working directory at its end: each
	// WORKDIR's path is checked against MaxPathBytes as it is made.
	workdirs := make([]string, 0, len(stages))
	// scopes[i] is stage i's variables at its end, which a stage built
	// FROM it inherits.
	scopes := make([]*scope, 0, len(stages))
	for i, st := range stages {
		s := Stage{Index: i, Name: st.Name, Base: st.BaseName, BaseStage: -1, Platform: st.Platform, Line: firstLine(st.Location)}
		if end := lastLine(st.Location); end > s.Line {
			s.EndLine = end
		}
		if r, _, err := lex.ProcessWord(st.BaseName, global); err == nil {
			s.ResolvedBase = r
		} else {
			s.ResolvedBase = st.BaseName
		}
		if idx, ok := names[strings.ToLower(s.ResolvedBase)]; ok {
			s.BaseStage = idx
		}
		if st.Name != "" {
			names[strings.ToLower(st.Name)] = i
		}
		wd := "/"
		vars := newScope()
		if s.BaseStage >= 0 {
			wd = workdirs[s.BaseStage]
			vars = scopes[s.BaseStage].child()
		}
		for _, c := range st.Commands {
			in := instruction(c)
			expandInstruction(lex, res.EscapeToken, vars, global, c, &in)
			if in.Command == "copy" && in.From != "" {
				s.CopiesFrom = append(s.CopiesFrom, in.From)
			}
			if in.Command == "workdir" && len(in.Args) == 1 {
				if wd = resolve(wd, in.Args[0]); len(wd) > MaxPathBytes {
					return nil, &ParseError{Path: filePath, Line: in.Line, Msg: fmt.Sprintf("WORKDIR makes a path longer than %d bytes, which no build can use", MaxPathBytes)}
				}
			}
			s.Instructions = append(s.Instructions, in)
		}
		workdirs = append(workdirs, wd)
		scopes = append(scopes, vars)
		f.Stages = append(f.Stages, s)
	}
	f.Final = len(f.Stages) - 1
	f.Builder = f.findBuilder(names)
	return f, nil
}

// decode groups the AST's instructions into stages as buildkit's
// instructions.Parse does, one instruction at a time, so that an error
// carries the line of the instruction that caused it.
func decode(filePath string, ast *parser.Node) ([]instructions.Stage, []instructions.ArgCommand, error) {
	lint := linter.New(&linter.Config{})
	var stages []instructions.Stage
	var metaArgs []instructions.ArgCommand
	for _, n := range ast.Children {
		cmd, err := instructions.ParseInstructionWithLinter(n, lint)
		if err != nil {
			line := errLine(err)
			if line == 0 {
				line = n.StartLine
			}
			return nil, nil, &ParseError{Path: filePath, Line: line, Msg: errMsg(err)}
		}
		switch c := cmd.(type) {
		case *instructions.Stage:
			stages = append(stages, *c)
		case *instructions.ArgCommand:
			if len(stages) == 0 {
				metaArgs = append(metaArgs, *c)
				continue
			}
			stages[len(stages)-1].AddCommand(c)
		case instructions.Command:
			if len(stages) == 0 {
				return nil, nil, &ParseError{Path: filePath, Line: n.StartLine, Msg: fmt.Sprintf("%s before the first FROM", strings.ToUpper(c.Name()))}
			}
			stages[len(stages)-1].AddCommand(c)
		default:
			return nil, nil, &ParseError{Path: filePath, Line: n.StartLine, Msg: fmt.Sprintf("unexpected instruction %T", cmd)}
		}
	}
	if len(stages) == 0 {
		return nil, nil, &ParseError{Path: filePath, Msg: "no FROM instruction"}
	}
	return stages, metaArgs, nil
}

// findBuilder picks the stage named "builder", else the (last) stage the
// final stage copies from.
func (f *File) findBuilder(names map[string]int) int {
	if idx, ok := names["builder"]; ok && idx != f.Final {
		return idx
	}
	from := f.Stages[f.Final].CopiesFrom
	for i := len(from) - 1; i >= 0; i-- {
		if idx, ok := names[strings.ToLower(from[i])]; ok {
			return idx
		}
		if n, err := strconv.Atoi(from[i]); err == nil && n >= 0 && n < f.Final {
			return n
		}
	}
	return -1
}

// StageRef finds the stage a --from or FROM value names: a stage name or
// index. ok is false for an image reference.
func (f *File) StageRef(ref string) (int, bool) {
	for _, s := range f.Stages {
		if s.Name != "" && strings.EqualFold(s.Name, ref) {
			return s.Index, true
		}
	}
	if n, err := strconv.Atoi(ref); err == nil && n >= 0 && n < len(f.Stages) {
		return n, true
	}
	return 0, false
}

// ImageBases returns the resolved image references the file's stages are
// built FROM, excluding stages built on earlier stages and "scratch",
// sorted and deduplicated.
func (f *File) ImageBases() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range f.Stages {
		if s.BaseStage >= 0 || s.ResolvedBase == "scratch" || seen[s.ResolvedBase] {
			continue
		}
		seen[s.ResolvedBase] = true
		out = append(out, s.ResolvedBase)
	}
	sort.Strings(out)
	return out
}

// Effective returns the last instruction of the given command in stage i,
// following FROM chains to earlier stages (CMD, ENTRYPOINT, HEALTHCHECK,
// USER and WORKDIR are inherited). ok is false when no stage in the chain
// sets it; the base image's own value then applies.
func (f *File) Effective(i int, command string) (Instruction, bool) {
	for i >= 0 && i < len(f.Stages) {
		s := f.Stages[i]
		for j := len(s.Instructions) - 1; j >= 0; j-- {
			if s.Instructions[j].Command == command {
				return s.Instructions[j], true
			}
		}
		i = s.BaseStage
	}
	return Instruction{}, false
}

// RootBase returns the image at the bottom of stage i's FROM chain.
func (f *File) RootBase(i int) string {
	for i >= 0 && i < len(f.Stages) {
		if f.Stages[i].BaseStage < 0 {
			return f.Stages[i].ResolvedBase
		}
		i = f.Stages[i].BaseStage
	}
	return ""
}

func instruction(c instructions.Command) Instruction {
	in := Instruction{Command: strings.ToLower(c.Name()), Line: firstLine(c.Location()), EndLine: lastLine(c.Location())}
	if src, ok := c.(interface{ String() string }); ok {
		in.Source = src.String()
	}
	switch c := c.(type) {
	case *instructions.RunCommand:
		in.Form, in.Args = form(c.ShellDependantCmdLine)
	case *instructions.CmdCommand:
		in.Form, in.Args = form(c.ShellDependantCmdLine)
	case *instructions.EntrypointCommand:
		in.Form, in.Args = form(c.ShellDependantCmdLine)
	case *instructions.HealthCheckCommand:
		if c.Health != nil && len(c.Health.Test) > 0 {
			switch c.Health.Test[0] {
			case "NONE":
				in.HealthcheckNone = true
			case "CMD-SHELL":
				in.Form, in.Args = FormShell, c.Health.Test[1:]
			default: // "CMD"
				in.Form, in.Args = FormExec, c.Health.Test[1:]
			}
		}
	case *instructions.ShellCommand:
		in.Args = c.Shell
	case *instructions.UserCommand:
		in.Args = []string{c.User}
	case *instructions.ExposeCommand:
		in.Args = c.Ports
	case *instructions.VolumeCommand:
		in.Args = c.Volumes
	case *instructions.WorkdirCommand:
		in.Args = []string{c.Path}
	case *instructions.EnvCommand:
		for _, kv := range c.Env {
			in.Args = append(in.Args, kv.Key+"="+kv.Value)
		}
	case *instructions.CopyCommand:
		in.From = c.From
		in.Args = append(append(in.Args, c.SourcePaths...), c.DestPath)
	case *instructions.AddCommand:
		in.Args = append(append(in.Args, c.SourcePaths...), c.DestPath)
	case *instructions.ArgCommand:
		for _, kv := range c.Args {
			in.Args = append(in.Args, kv.Key)
		}
	}
	return in
}

func form(c instructions.ShellDependantCmdLine) (Form, []string) {
	if c.PrependShell {
		return FormShell, []string{strings.Join(c.CmdLine, " ")}
	}
	return FormExec, c.CmdLine
}

func firstLine(r []parser.Range) int {
	if len(r) == 0 {
		return 0
	}
	return r[0].Start.Line
}

func lastLine(r []parser.Range) int {
	if len(r) == 0 {
		return 0
	}
	return r[len(r)-1].End.Line
}

// errLine extracts a line number from buildkit's located errors.
func errLine(err error) int {
	var le *parser.LocationError
	if errors.As(err, &le) && len(le.Locations) > 0 {
		return firstLine(le.Locations[0])
	}
	return 0
}

func errMsg(err error) string {
	var le *parser.LocationError
	if errors.As(err, &le) && le.Unwrap() != nil {
		return le.Unwrap().Error()
	}
	return err.Error()
}

// IsDockerfile reports whether a repository path names a Dockerfile:
// Dockerfile, Dockerfile.<suffix>, <name>.Dockerfile or <name>.dockerfile,
// but not a .dockerignore file.
func IsDockerfile(p string) bool {
	base := strings.ToLower(path.Base(p))
	if strings.HasSuffix(base, ".dockerignore") {
		return false
	}
	return base == "dockerfile" || strings.HasPrefix(base, "dockerfile.") || strings.HasSuffix(base, ".dockerfile")
}

// Patterns are the globs that find Dockerfiles in a repository, for
// declared inputs.
var Patterns = []string{"**/Dockerfile", "**/Dockerfile.*", "**/*.Dockerfile", "**/*.dockerfile", "**/dockerfile", "**/dockerfile.*"}

// AsTarget returns a view of f as built with --target: the stages up to and
// including stage i, with i final and the builder chosen anew. Every
// question about "the final stage" then answers for that target. f is not
// changed; the view shares its stages.
func (f *File) AsTarget(i int) *File {
	if i < 0 || i >= len(f.Stages) || i == f.Final {
		return f
	}
	v := *f
	v.Stages = f.Stages[: i+1 : i+1]
	v.Final = i
	names := map[string]int{}
	for _, s := range v.Stages {
		if s.Name != "" {
			names[strings.ToLower(s.Name)] = s.Index
		}
	}
	v.Builder = v.findBuilder(names)
	return &v
}

// StageName returns how a target names stage i: its name, else its index.
func (f *File) StageName(i int) string {
	if i >= 0 && i < len(f.Stages) && f.Stages[i].Name != "" {
		return f.Stages[i].Name
	}
	return strconv.Itoa(i)
}
