package shellcmd

import (
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// Instruction returns the commands a Dockerfile instruction's arguments
// run: an exec-form instruction's argv as its one command, a shell-form
// one's as the shell would split and run them, and an exec-form sh -c
// LINE's as that line's.
func Instruction(in dockerfile.Instruction) [][]string {
	if in.Form == dockerfile.FormShell {
		cmds := Analyze(strings.Join(in.Args, " ")).Commands
		// HEALTHCHECK CMD sh -c 'curl … || exit 1': the shell the line
		// starts runs the inner line's commands too.
		for _, c := range slices.Clone(cmds) {
			if l := ShellLineOnly(c); l != "" {
				cmds = append(cmds, Analyze(l).Commands...)
			}
		}
		return cmds
	}
	if l := ShellLineOnly(in.Args); l != "" {
		// ["bash", "-c", LINE]: the shell is judged as the start's shell
		// (shell_form_start); what it runs are the line's commands.
		return Analyze(l).Commands
	}
	return [][]string{in.Args}
}
