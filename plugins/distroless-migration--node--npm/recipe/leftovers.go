package recipe

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// An init wrapper that the runtime stage installed for its start (apk add
// tini, then CMD ["/sbin/tini", "--", ...]) goes with the start: the
// launcher takes its job. When that stage becomes a files stage (split),
// the install would stay there, and nothing would run what it installs.
// So the wrapper's package is left out of the files stage's installs,
// unless one of its RUN steps runs the wrapper itself.

// unusedInit names the package of the init wrapper the rewrite drops,
// when stage i is the judged stage and none of its RUN steps runs the
// wrapper; nil otherwise.
func (r *rewriter) unusedInit(i int) map[string]bool {
	s := r.in.Plan.Start
	if i != r.t || s == nil || s.Init == "" || !r.has(readiness.RuleInitWrapper) {
		return nil
	}
	prog := path.Base(s.Init)
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command != "run" {
			continue
		}
		for _, cmd := range shellcmd.Instruction(in) {
			if len(cmd) == 0 || packageManagers[path.Base(cmd[0])] || isInitChmod(cmd, prog) {
				continue
			}
			if slices.ContainsFunc(cmd, func(w string) bool { return path.Base(w) == prog || path.Base(w) == prog+"-static" }) {
				return nil
			}
		}
	}
	return map[string]bool{prog: true}
}

// isInitFile reports whether name, a file's base name, is a build of the
// init prog: tini, tini-static, tini-amd64, dumb-init_1.2.5_x86_64.
func isInitFile(name, prog string) bool {
	return name == prog || strings.HasPrefix(name, prog+"-") || strings.HasPrefix(name, prog+"_")
}

// isInitChmod reports a chmod of init files only (chmod +x /tini), which
// makes the file runnable without running it.
func isInitChmod(cmd []string, prog string) bool {
	if len(cmd) < 3 || path.Base(cmd[0]) != "chmod" {
		return false
	}
	files := 0
	for _, w := range cmd[2:] {
		if strings.HasPrefix(w, "-") {
			continue
		}
		if !isInitFile(path.Base(w), prog) {
			return false
		}
		files++
	}
	return files > 0
}

// dropInitDownloads removes from stage i the ADD steps that download an
// init wrapper in drop from a URL (ADD https://…/tini /tini), and the RUN
// steps that only chmod what they downloaded: only the old start ran it,
// and the files stage would fetch it for nothing (from GitHub, which a
// build may not reach). The new runtime stage then copies no such file.
func (r *rewriter) dropInitDownloads(i int, drop map[string]bool) {
	for _, prog := range slices.Sorted(maps.Keys(drop)) {
		downloaded := false
		for _, in := range r.d.Stages[i].Instructions {
			if in.Command != "add" || len(in.Args) < 2 {
				continue
			}
			srcs := in.Args[:len(in.Args)-1]
			if !slices.ContainsFunc(srcs, func(s string) bool { return strings.Contains(s, "://") && isInitFile(path.Base(s), prog) }) ||
				slices.ContainsFunc(srcs, func(s string) bool { return !strings.Contains(s, "://") }) {
				continue
			}
			downloaded = true
			r.drop(in, fmt.Sprintf("the files stage no longer downloads %s, which only the old start ran", prog))
		}
		if !downloaded {
			continue
		}
		for _, in := range r.d.Stages[i].Instructions {
			if in.Command != "run" || in.Form != dockerfile.FormShell {
				continue
			}
			cmds := shellcmd.Instruction(in)
			if len(cmds) > 0 && !slices.ContainsFunc(cmds, func(cmd []string) bool { return !isInitChmod(cmd, prog) }) {
				r.drop(in, fmt.Sprintf("the step that made the downloaded %s runnable goes with it", prog))
			}
		}
	}
}

// drop removes in from the rewrite with its change line, and from the
// files the new runtime stage copies.
func (r *rewriter) drop(in dockerfile.Instruction, what string) {
	r.replace(in, "")
	if r.gone == nil {
		r.gone = map[int]bool{}
	}
	r.gone[in.Line] = true
	r.res.Changes = append(r.res.Changes, Change{Rule: readiness.RuleInitWrapper, Line: in.Line, What: what})
}

// packageManagers name packages as words without running them.
var packageManagers = map[string]bool{"apk": true, "apt-get": true, "apt": true}

// aptInstallRE is an apt-get (or apt) install with its options and
// words, up to the end of the command.
var aptInstallRE = regexp.MustCompile(`\bapt(?:-get)?\s+((?:-[-\w]+(?:=\S+)?\s+)*)install\b([^&;|]*)`)

// aptDrop is one RUN step whose apt-get installs name a package to leave
// out, with its new text: "" when the step goes.
type aptDrop struct {
	in   dockerfile.Instruction
	text string
}

// aptDrops finds stage i's RUN steps whose apt-get installs name a package
// of drop, and writes each without them. A step whose installs then name
// nothing, and that does nothing but apt-get and remove apt's lists,
// goes; one that does more keeps its install as it was.
func (r *rewriter) aptDrops(i int, drop map[string]bool) []aptDrop {
	if len(drop) == 0 {
		return nil
	}
	var out []aptDrop
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command != "run" || in.Form != dockerfile.FormShell {
			continue
		}
		dropped, left := 0, 0
		text := aptInstallRE.ReplaceAllStringFunc(r.verbatim(in), func(m string) string {
			sm := aptInstallRE.FindStringSubmatchIndex(m)
			ws := splitWords(m[sm[4]:sm[5]])
			var b strings.Builder
			for k, w := range ws.words {
				if name, _, _ := strings.Cut(w, "="); drop[name] {
					dropped++
					continue
				}
				if !strings.HasPrefix(w, "-") {
					left++
				}
				b.WriteString(ws.seps[k] + w)
			}
			return m[:sm[4]] + b.String() + ws.trail
		})
		switch {
		case dropped == 0:
		case left > 0:
			out = append(out, aptDrop{in: in, text: text})
		case onlyApt(in):
			out = append(out, aptDrop{in: in})
		}
	}
	return out
}

// dropAptPackages carries out stage i's aptDrops, and says so.
func (r *rewriter) dropAptPackages(i int, drop map[string]bool) {
	for _, d := range r.aptDrops(i, drop) {
		r.replace(d.in, d.text)
		what := "the files stage no longer installs " + droppedNames(drop) + ", which only the old start ran"
		if d.text == "" {
			what = "the step that installed " + droppedNames(drop) + ", which only the old start ran, goes"
		}
		r.res.Changes = append(r.res.Changes, Change{Rule: readiness.RuleInitWrapper, Line: d.in.Line, What: what})
	}
}

// everyRunGoes reports whether stage i's aptDrops remove all its RUN
// steps: the stage then makes no files of its own, and needs no files
// stage.
func (r *rewriter) everyRunGoes(i int, drops []aptDrop) bool {
	gone := 0
	for _, d := range drops {
		if d.text == "" {
			gone++
		}
	}
	runs := 0
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command == "run" {
			runs++
		}
	}
	return runs > 0 && gone == runs
}

// onlyApt reports a RUN step that only runs apt-get (or apt) and removes
// apt's lists.
func onlyApt(in dockerfile.Instruction) bool {
	for _, cmd := range shellcmd.Instruction(in) {
		if len(cmd) == 0 {
			continue
		}
		switch path.Base(cmd[0]) {
		case "apt-get", "apt":
		case "rm":
			for _, w := range cmd[1:] {
				if !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "/var/lib/apt/lists") {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// droppedNames names the packages of drop, for the change list.
func droppedNames(drop map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(drop)), ", ")
}
