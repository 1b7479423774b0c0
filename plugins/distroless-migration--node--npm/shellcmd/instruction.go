package shellcmd

import (
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// Instruction returns the commands a Dockerfile instruction's arguments
// run: an exec-form instruction's argv as its one command, a shell-form
// one's as the shell would split and run them.
func Instruction(in dockerfile.Instruction) [][]string {
	if in.Form == dockerfile.FormShell {
		return Analyze(strings.Join(in.Args, " ")).Commands
	}
	return [][]string{in.Args}
}
