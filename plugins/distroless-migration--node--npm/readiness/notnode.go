package readiness

import (
	"fmt"
	"path"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/entrypoints"
)

// ReasonNotNode begins the reason of an unknown verdict on an image whose
// final stage runs no Node: there is no Node service to migrate.
const ReasonNotNode = "not_node"

// nodeCommands are programs whose running means Node runs.
var nodeCommands = map[string]bool{
	"node": true, "nodejs": true, "npm": true, "npx": true, "yarn": true, "yarnpkg": true,
	"pnpm": true, "pnpx": true, "corepack": true, "nodemon": true, "pm2": true, "pm2-runtime": true,
	"ts-node": true, "tsx": true, "forever": true,
}

// notNode says why the judged image runs no Node ("" when it may): its
// final stage is built on a well-known image that ships no Node, and its
// start command names no Node program, no JS file and no script that
// could start one. An image on a base codegenie does not know is never
// called not Node.
func notNode(df *dockerfileprobe.Facts, ep *entrypoints.Facts) string {
	d := judgedFile(df)
	if d == nil {
		return ""
	}
	base := d.RootBase(d.Final)
	osBase, ok := dockerfile.NonNodeBase(base)
	if !ok {
		return ""
	}
	var argv []string
	for _, c := range []string{"entrypoint", "cmd"} {
		in, set := d.Effective(d.Final, c)
		if !set {
			continue
		}
		if in.Form == dockerfile.FormShell {
			argv = append(argv, strings.FieldsFunc(strings.Join(in.Args, " "), shellBreak)...)
			continue
		}
		argv = append(argv, in.Args...)
	}
	for _, w := range argv {
		if runsNode(w) {
			return ""
		}
	}
	// A script or a link the start command runs may start node itself.
	for _, e := range ep.Executables {
		if e.Dockerfile != df.Image.Dockerfile || (e.Origin != "entrypoint" && e.Origin != "cmd") {
			continue
		}
		if k := e.Kind; k != entrypoints.KindELF && k != entrypoints.KindNotFound && k != entrypoints.KindBaseImage {
			return ""
		}
		if e.NodeArgv != nil || e.InterpreterKind == "node" {
			return ""
		}
	}
	if osBase && len(argv) == 0 {
		// A distribution's own start command is a shell, not a service.
		return fmt.Sprintf("%s: %s: the final stage is built on %s and sets no start command; it runs no Node service", ReasonNotNode, df.Image.Dockerfile, base)
	}
	ships := "which ships no Node, and starts its own program"
	if len(argv) > 0 {
		ships = "which ships no Node, and starts " + quoteArgv(argv)
		if osBase {
			ships = "a distribution, and starts " + quoteArgv(argv) + ", which is no Node program or JS file"
		}
	}
	return fmt.Sprintf("%s: %s: the final stage is built on %s, %s; this is not a Node service, so there is nothing to migrate to a distroless Node image",
		ReasonNotNode, df.Image.Dockerfile, base, ships)
}

// runsNode reports whether a start command word runs Node: a Node
// program or a JS file.
func runsNode(w string) bool {
	base := path.Base(w)
	if nodeCommands[base] {
		return true
	}
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"} {
		if strings.HasSuffix(base, ext) {
			return true
		}
	}
	return false
}

func shellBreak(r rune) bool {
	return strings.ContainsRune(" \t\n;&|()<>'\"`=$", r)
}
