package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/codegenie/codegenie/"

// TestDependencyDirection enforces the layering of DESIGN.md and STYLE.md:
// cli → pipeline → {probe, cache, sandbox}; backends import the sandbox
// port, never the reverse; plugins import ports, not backends or front ends.
func TestDependencyDirection(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// forbidden[pkg prefix] = import prefixes that packages there must not use.
	forbidden := map[string][]string{
		"internal/probe":    {"internal/pipeline", "internal/cache", "internal/cli", "internal/gather", "internal/gatecontrol", "internal/sandbox/", "plugins/", "internal/builtin"},
		"internal/sandbox":  {"internal/gatecontrol", "internal/cli", "internal/pipeline", "internal/probe", "plugins/"},
		"internal/trace":    {"internal/sandbox", "internal/gatecontrol", "internal/cli", "internal/pipeline", "internal/probe", "plugins/"},
		"internal/cache":    {"internal/probe", "internal/pipeline", "internal/cli", "internal/sandbox", "plugins/"},
		"internal/pipeline": {"internal/cli", "internal/gather", "internal/gatecontrol", "internal/builtin", "internal/sandbox/", "plugins/"},
		"internal/report":   {"internal/cli", "internal/pipeline", "internal/gatecontrol", "internal/sandbox/", "plugins/"},
		"plugins/":          {"internal/cli", "internal/gather", "internal/pipeline", "internal/gatecontrol", "internal/builtin", "internal/sandbox/runsc", "internal/sandbox/firecracker", "internal/sandbox/lima", "internal/cache"},
		"internal/audit":    {"internal/cli", "internal/pipeline", "plugins/"},
		// The safe reading of files someone else put in place is a leaf
		// that probes, the pipeline and backends share.
		"internal/regfile": {"internal/", "plugins/"},
		// Workers are clients of gate-control: the fleet holds no sandbox
		// backend and no part of the privileged server.
		"internal/fleet": {"internal/cli", "internal/gatecontrol", "internal/sandbox/", "plugins/"},
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	checked := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(fields[0], module)
		for prefix, bans := range forbidden {
			if pkg != prefix && !strings.HasPrefix(pkg, strings.TrimSuffix(prefix, "/")+"/") {
				continue
			}
			checked++
			for _, imp := range fields[1:] {
				rel, ok := strings.CutPrefix(imp, module)
				if !ok {
					continue
				}
				for _, ban := range bans {
					if banned(rel, ban) {
						t.Errorf("%s imports %s: the dependency points the wrong way", pkg, rel)
					}
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d packages: the package list or module path is wrong", checked)
	}
}

// banned reports whether import rel falls under ban: a ban ending in "/"
// covers the packages below it only; any other ban covers the package and
// everything below it.
func banned(rel, ban string) bool {
	if strings.HasSuffix(ban, "/") {
		return strings.HasPrefix(rel, ban)
	}
	return rel == ban || strings.HasPrefix(rel, ban+"/")
}
