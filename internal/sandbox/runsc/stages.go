package runsc

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// The backend reads the Dockerfile itself, with the same parser family that
// buildah uses, for one purpose: to check the step headers in buildah's
// output against the instructions they claim to announce. Build steps write
// to the same stream as those headers, so a header that does not match the
// Dockerfile is not a header (see buildLog).

// maxDockerfile bounds the Dockerfile the backend reads and copies.
const maxDockerfile = 1 << 20

// stage is one FROM section of a Dockerfile.
type stage struct {
	// name is the stage's AS name, or "" when it has none.
	name string
	// base is the FROM value, with the global ARGs' defaults expanded
	// as the builder expands them (as written when one it names has
	// none, which buildah would expand to nothing); fromLine and fromEnd the lines
	// of the FROM instruction, fromFlags its flags (--platform=...).
	base              string
	fromLine, fromEnd int
	fromFlags         []string
	// instrs are its instructions, FROM first: buildah's "STEP k/m"
	// announces instrs[k-1], and m is len(instrs).
	instrs []instr
}

// label is the stage's name in phase names: its AS name, or its 0-based
// index when it has none (the index COPY --from takes).
func (s stage) label(index int) string {
	if s.name != "" {
		return s.name
	}
	return strconv.Itoa(index)
}

// instr is one instruction of a stage.
type instr struct {
	keyword string // upper case: FROM, RUN, COPY...
	line    int
	// For RUN: shell is the command of the shell form (the last argument
	// the container gets), argv the arguments of the exec form. Both are
	// empty for a heredoc RUN, whose command the backend does not check.
	shell string
	argv  []string
}

// parseStages splits a Dockerfile into its stages. Instructions before the
// first FROM (global ARGs) belong to no stage.
func parseStages(dockerfile []byte) ([]stage, error) {
	res, err := parser.Parse(bytes.NewReader(dockerfile))
	if err != nil {
		return nil, fmt.Errorf("parsing Dockerfile: %w", err)
	}
	var stages []stage
	lex := shell.NewLex(res.EscapeToken)
	var globals []string // NAME=value of the ARGs before the first FROM
	for _, n := range res.AST.Children {
		kw := strings.ToUpper(n.Value)
		if kw == "ARG" && len(stages) == 0 {
			globals = globalArgs(lex, n, globals)
			continue
		}
		if kw == "FROM" {
			s := stage{fromLine: n.StartLine, fromEnd: n.EndLine, fromFlags: n.Flags}
			if n.Next != nil {
				s.base = fromBase(lex, n.Next.Value, globals)
			}
			// FROM [--platform=...] image [AS name]
			if a := n.Next; a != nil && a.Next != nil && strings.EqualFold(a.Next.Value, "as") && a.Next.Next != nil {
				s.name = a.Next.Next.Value
			}
			stages = append(stages, s)
		}
		if len(stages) == 0 {
			continue
		}
		in := instr{keyword: kw, line: n.StartLine}
		if kw == "RUN" && len(n.Heredocs) == 0 {
			if n.Attributes["json"] {
				for a := n.Next; a != nil; a = a.Next {
					in.argv = append(in.argv, a.Value)
				}
			} else if n.Next != nil {
				in.shell = n.Next.Value
			}
		}
		last := &stages[len(stages)-1]
		last.instrs = append(last.instrs, in)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("parsing Dockerfile: no FROM instruction")
	}
	return stages, nil
}

// globalArgs adds the defaults of an ARG instruction before the first FROM
// to globals, each expanded with those before it; an ARG with no default
// is left unset.
func globalArgs(lex *shell.Lex, n *parser.Node, globals []string) []string {
	for a := n.Next; a != nil; a = a.Next {
		name, val, ok := strings.Cut(a.Value, "=")
		if !ok {
			continue
		}
		if v, err := lex.ProcessWordWithMatches(val, shell.EnvsFromSlice(globals)); err == nil {
			globals = append(globals, name+"="+v.Result)
		}
	}
	return globals
}

// fromBase expands a FROM image reference with the global ARGs (FROM
// node:${NODE_VERSION}-slim), so that the base is pulled before the build
// and its package mirrors are known. A reference that names an ARG with no
// default stays as written.
func fromBase(lex *shell.Lex, ref string, globals []string) string {
	if !strings.Contains(ref, "$") {
		return ref
	}
	r, err := lex.ProcessWordWithMatches(ref, shell.EnvsFromSlice(globals))
	if err != nil || len(r.Unmatched) > 0 {
		return ref
	}
	return r.Result
}

// checkArgv reports whether a container's start args fit the RUN
// instruction in: the exec form's arguments, or the shell form's command as
// the last argument (after the SHELL in force, /bin/sh -c by default). A
// heredoc RUN is not checked.
func (in instr) checkArgv(argv []string) bool {
	switch {
	case in.argv != nil:
		return slices.Equal(in.argv, argv)
	case in.shell != "":
		return len(argv) >= 2 && argv[len(argv)-1] == in.shell
	}
	return true
}
