package readiness

// What moving the service to a user other than root touches (rule
// nonroot_user): the directories it writes and the ports below 1024 it
// listens on. The recipe decides, from these, whether the files stage
// chowns the directories to the target's user or the rewrite picks the
// target's root variant.

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// NonRoot is what the judged image, run as it is, asks of the user it
// runs as.
type NonRoot struct {
	// AsRoot is set when the judged stage runs as root: its FROM chain
	// sets no USER, or sets root or 0. Only then does a move to a target
	// that runs as another user change what the service may do.
	AsRoot bool `json:"as_root"`
	// User is the chain's last USER, "" when it sets none: only then does
	// the target's own user take over in the rewrite.
	User string `json:"user,omitempty"`
	// Writes are the directories the service writes into, each once, by
	// the first place that shows it.
	Writes []Write `json:"writes,omitempty"`
	// LowPorts are the ports below 1024 it listens on.
	LowPorts []Port `json:"low_ports,omitempty"`
}

// Write is a directory of the image the service writes into.
type Write struct {
	// Dir is absolute.
	Dir string `json:"dir"`
	// How says what shows it: VOLUME, RUN mkdir, RUN install -d, or the
	// call of the app's code (fs.writeFileSync('/app/config/x.json')).
	How      string         `json:"how"`
	Evidence probe.Evidence `json:"evidence"`
}

// Port is a port the service listens on.
type Port struct {
	Port     int            `json:"port"`
	How      string         `json:"how"`
	Evidence probe.Evidence `json:"evidence"`
}

// WritableDir reports whether a directory is one every user may write
// (/tmp), or a kernel file system: nothing to hand over.
func WritableDir(dir string) bool {
	for _, p := range []string{"/tmp", "/var/tmp", "/dev", "/proc", "/sys", "/run"} {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}

// SystemDir reports whether a directory belongs to the image's system
// rather than the service (/etc, /usr, root's home): a files stage cannot
// hand it over without replacing the target's own.
func SystemDir(dir string) bool {
	if dir == "/" {
		return true
	}
	for _, p := range []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/root", "/boot", "/nodejs", "/var/lib/dpkg"} {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return dir == "/var" || dir == "/opt" || dir == "/home" || dir == "/srv"
}

// planNonRoot is nonRoot of the judged Dockerfile d and the child_process
// facts among results.
func planNonRoot(results []probe.Result, d *dockerfile.File, start *Start) (*NonRoot, error) {
	byName := map[string]probe.Result{}
	for _, r := range results {
		byName[r.Probe] = r
	}
	var cp childprocess.Facts
	if err := decode(byName, childprocess.Name, &cp); err != nil {
		return nil, err
	}
	return nonRoot(d, &cp, start), nil
}

// nonRoot reads what the judged stage writes and listens on: its chain's
// USER, VOLUME, the directories its RUN steps make, EXPOSE, and the
// literal writes and listens of the reachable application code (cp);
// start is the start command on distroless, whose Dir is where the
// process runs relative to the WORKDIR.
func nonRoot(d *dockerfile.File, cp *childprocess.Facts, start *Start) *NonRoot {
	if d == nil {
		return nil
	}
	nr := &NonRoot{AsRoot: true}
	seen := map[string]bool{}
	add := func(dir, how string, e probe.Evidence) {
		dir = path.Clean(dir)
		if !path.IsAbs(dir) || WritableDir(dir) || seen[dir] {
			return
		}
		seen[dir] = true
		nr.Writes = append(nr.Writes, Write{Dir: dir, How: how, Evidence: e})
	}
	ports := map[int]bool{}
	addPort := func(p int, how string, e probe.Evidence) {
		if p > 0 && p < 1024 && !ports[p] {
			ports[p] = true
			nr.LowPorts = append(nr.LowPorts, Port{Port: p, How: how, Evidence: e})
		}
	}
	var chain []int
	for i := d.Final; i >= 0 && len(chain) <= len(d.Stages); i = d.Stages[i].BaseStage {
		chain = append([]int{i}, chain...)
	}
	appDir := d.Workdir(d.Final)
	wd := "/"
	for _, i := range chain {
		for _, in := range d.Stages[i].Instructions {
			e := probe.Evidence{File: d.Path, Line: in.Line}
			switch in.Command {
			case "workdir":
				if len(in.Args) == 1 {
					wd = joinDir(wd, in.Args[0])
				}
			case "user":
				u := ""
				if len(in.Args) == 1 {
					u, _, _ = strings.Cut(in.Args[0], ":")
				}
				nr.AsRoot = u == "root" || u == "0"
				if len(in.Args) == 1 {
					nr.User = in.Args[0]
				}
			case "volume":
				for _, v := range in.Args {
					if !strings.Contains(v, "$") {
						add(joinDir(wd, v), "VOLUME", e)
					}
				}
			case "expose":
				for _, p := range in.Args {
					p, _, _ = strings.Cut(p, "/")
					p, _, _ = strings.Cut(p, "-")
					if n, err := strconv.Atoi(p); err == nil {
						addPort(n, "EXPOSE", e)
					}
				}
			case "run":
				// Making the app's own folder (mkdir -p /app, then
				// WORKDIR /app) sets the image up; it says nothing of
				// what the service writes.
				for _, dir := range madeDirs(in) {
					if p := joinDir(wd, dir.path); !strings.HasPrefix(appDir+"/", p+"/") {
						add(p, "RUN "+dir.how, e)
					}
				}
			}
		}
	}
	if cp != nil {
		cwd := d.Workdir(d.Final)
		if start != nil && start.Dir != "" {
			cwd = joinDir(cwd, start.Dir)
		}
		for _, w := range cp.Writes {
			p := w.Path
			if w.CwdRelative {
				p = joinDir(cwd, p)
			}
			// A file goes into its directory, and so does a directory
			// made without recursive (an existing one would fail it); a
			// recursive mkdir may find the directory made already.
			dir := path.Dir(path.Clean(p))
			if w.MakesDir && w.Recursive {
				dir = path.Clean(p)
			}
			add(dir, fmt.Sprintf("%s(%s)", w.Function, w.Arg), probe.Evidence{File: w.File, Line: w.Line})
		}
		for _, l := range cp.Listens {
			addPort(l.Port, fmt.Sprintf("listen(%d)", l.Port), probe.Evidence{File: l.File, Line: l.Line})
		}
	}
	return nr
}

// madeDir is a directory a RUN step makes, and how.
type madeDir struct{ path, how string }

// madeDirs are the directories mkdir and install -d make in a RUN step
// (shellcmd.MadeDirs), as written (relative ones are relative to the
// WORKDIR); a word the shell expands is left out.
func madeDirs(in dockerfile.Instruction) []madeDir {
	var out []madeDir
	for _, cmd := range shellcmd.Instruction(in) {
		how := "mkdir"
		if len(cmd) > 0 && path.Base(cmd[0]) == "install" {
			how = "install -d"
		}
		for _, d := range shellcmd.MadeDirs(cmd) {
			if !strings.Contains(d, "<expanded>") && !strings.ContainsAny(d, "$*?") {
				out = append(out, madeDir{d, how})
			}
		}
	}
	return out
}

// joinDir resolves p against the directory wd.
func joinDir(wd, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(wd, p)
}
