package readiness

import (
	"path"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// staticGoBuild reports that the COPY at line of d (into the final stage's
// chain) copies a program a stage of d builds with the Go toolchain and
// cgo off (CGO_ENABLED=0 go build -o NAME, hoppscotch's webapp-server): a
// static executable that links no library, so it runs on distroless as
// it did before.
func staticGoBuild(d *dockerfile.File, line int) bool {
	for _, s := range d.Chain(d.Final) {
		for _, in := range d.Stages[s].Instructions {
			if in.Line != line || (in.Command != "copy" && in.Command != "add") || in.From == "" || len(in.Args) != 2 {
				continue
			}
			from, ok := d.StageRef(in.From)
			if !ok {
				return false
			}
			return buildsStaticGo(d, from, path.Base(in.Args[0]))
		}
	}
	return false
}

// buildsStaticGo reports whether stage i's chain runs go build -o with an
// output named name, with CGO_ENABLED=0 on that RUN or in an ENV before it.
func buildsStaticGo(d *dockerfile.File, i int, name string) bool {
	cgoOff := false
	for _, s := range d.Chain(i) {
		for _, in := range d.Stages[s].Instructions {
			switch in.Command {
			case "env":
				for _, a := range in.Args {
					if v, ok := strings.CutPrefix(a, "CGO_ENABLED="); ok {
						cgoOff = strings.Trim(v, `"'`) == "0"
					}
				}
			case "run":
				if in.Form != dockerfile.FormShell {
					continue
				}
				line := strings.Join(in.Args, " ")
				off := cgoOff || strings.Contains(line, "CGO_ENABLED=0")
				for _, c := range shellcmd.Analyze(line).Commands {
					if off && len(c) > 2 && path.Base(c[0]) == "go" && c[1] == "build" && goOutput(c[2:]) == name {
						return true
					}
				}
			}
		}
	}
	return false
}

// goOutput is the base name of go build's -o file, "" when it sets none.
func goOutput(args []string) string {
	for j, a := range args {
		switch {
		case a == "-o" && j+1 < len(args):
			return path.Base(args[j+1])
		case strings.HasPrefix(a, "-o="):
			return path.Base(strings.TrimPrefix(a, "-o="))
		}
	}
	return ""
}
