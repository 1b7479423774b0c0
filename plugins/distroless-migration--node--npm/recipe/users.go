package recipe

import (
	"regexp"
	"strings"
)

// Users the runtime stage names that the target image lacks.

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
