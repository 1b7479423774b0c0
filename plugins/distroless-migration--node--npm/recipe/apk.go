package recipe

import (
	"regexp"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// An alpine stage that moves to a Debian (glibc) image keeps its steps, but
// apk and busybox's adduser and addgroup become their Debian forms.

// apkToApt rewrites stage i's RUN steps for Debian. Each step keeps its
// lines: a package list continued over several lines stays so, and a step
// that updated the index (apk update, or an add that updated it before the
// lists were removed) is not updated twice.
func (r *rewriter) apkToApt(i int) error {
	updated := false
	drop := r.unusedInit(i)
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command != "run" || in.Form != dockerfile.FormShell {
			continue
		}
		src := r.verbatim(in)
		if !apkRE.MatchString(src) && !busyboxUserRE.MatchString(src) {
			continue
		}
		text, unknown, dropped := debianRunFrom(src, &updated, drop)
		if len(unknown) > 0 {
			return r.refuse(readiness.RuleGlibcBuilder, "the step installs alpine packages with no known Debian name: "+strings.Join(unknown, ", "),
				"the stage moves to a glibc (Debian) image; write its apt-get install by hand", in.Line)
		}
		what := "apk and busybox user steps become apt-get and Debian adduser/addgroup"
		if strings.TrimSpace(text) == "RUN true" {
			text = "" // it installed only what the node image has
			what = "the apk step is dropped: it installs only what the node image already has"
		}
		r.replace(in, text)
		r.res.Changes = append(r.res.Changes, Change{Rule: readiness.RuleGlibcBuilder, Line: in.Line, What: what})
		if dropped {
			r.res.Changes = append(r.res.Changes, Change{Rule: readiness.RuleInitWrapper, Line: in.Line, What: "the files stage no longer installs " + droppedNames(drop) + ", which only the old start ran"})
		}
	}
	return nil
}

// apkOnlyNode returns stage i's RUN steps when each of them is an apk step
// that installs only what the node image has (apk add nodejs), and the
// stage has at least one; nil otherwise. On a distroless Node target
// such a stage needs no files stage: the steps go.
func (r *rewriter) apkOnlyNode(i int) []dockerfile.Instruction {
	var runs []dockerfile.Instruction
	updated := false
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command != "run" {
			continue
		}
		if in.Form != dockerfile.FormShell || !apkRE.MatchString(r.verbatim(in)) {
			return nil
		}
		if text, unknown, _ := debianRunFrom(r.verbatim(in), &updated, nil); len(unknown) > 0 || strings.TrimSpace(text) != "RUN true" {
			return nil
		}
		runs = append(runs, in)
	}
	return runs
}

var (
	apkRE         = regexp.MustCompile(`\bapk\s+((?:-[-\w]+(?:\s+[.\w-]+)?\s+)*)(add|update|upgrade|del)\b([^&;|]*)`)
	busyboxUserRE = regexp.MustCompile(`\b(adduser|addgroup)(\s+[^&;|]*)`)
)

// debianRun rewrites one RUN instruction's text; unknown lists packages it
// cannot name on Debian.
func debianRun(src string) (string, []string) {
	updated := false
	text, unknown, _ := debianRunFrom(src, &updated, nil)
	return text, unknown
}

// debianRunFrom is debianRun with the stage's state: *updated is true while
// an earlier apt-get update's lists are still there. The packages drop
// names are left out (unusedInit).
func debianRunFrom(src string, updated *bool, drop map[string]bool) (string, []string, bool) {
	var unknown []string
	dropped := false
	out := apkRE.ReplaceAllStringFunc(src, func(m string) string {
		sm := apkRE.FindStringSubmatch(m)
		ws := splitWords(sm[3])
		switch sm[2] {
		case "update":
			if *updated {
				return "true" + ws.trail
			}
			*updated = true
			return "apt-get update" + ws.trail
		case "upgrade", "del":
			return "true" + ws.trail
		}
		var b strings.Builder
		kept := 0
		for i := 0; i < len(ws.words); i++ {
			f := ws.words[i]
			if f == "--virtual" || f == "-t" {
				i++
				continue
			}
			if strings.HasPrefix(f, "-") {
				continue
			}
			name := f
			if j := strings.IndexAny(name, "=~<>"); j > 0 {
				name = name[:j]
			}
			deb, ok := readiness.DebianPackage(name)
			switch {
			case drop[name]:
				dropped = true
			case !ok:
				unknown = append(unknown, name)
			case deb != "":
				b.WriteString(ws.seps[i] + deb)
				kept++
			}
		}
		if kept == 0 {
			return "true" + ws.trail
		}
		update := "apt-get update && "
		if *updated {
			update = ""
		}
		*updated = false // the lists go at the end of the step
		return update + "apt-get install -y --no-install-recommends" + b.String() + " && rm -rf /var/lib/apt/lists/*" + ws.trail
	})
	out = busyboxUserRE.ReplaceAllStringFunc(out, func(m string) string {
		sm := busyboxUserRE.FindStringSubmatch(m)
		return sm[1] + debianUserFlags(sm[1], sm[2])
	})
	return out, unknown, dropped
}

// words are a command's words, each with the separator before it (blanks,
// line continuations and the comment lines between them), and the
// separator after the last.
type words struct {
	words, seps []string
	trail       string
}

// splitWords splits s, the text after a command, into words; joining each
// separator and word, then trail, gives s back.
func splitWords(s string) words {
	var w words
	i := 0
	for {
		start := i
		for i < len(s) {
			switch {
			case s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n':
				i++
			case continuation(s, i):
				i += 2
			case s[i] == '#' && lineStart(s, i):
				for i < len(s) && s[i] != '\n' {
					i++
				}
			default:
				goto word
			}
		}
		w.trail = s[start:]
		return w
	word:
		sep := s[start:i]
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\r' && s[j] != '\n' && !continuation(s, j) {
			j++
		}
		w.seps, w.words = append(w.seps, sep), append(w.words, s[i:j])
		i = j
	}
}

// busyboxValueFlags are the busybox adduser options that take a value.
var busyboxValueFlags = map[string]bool{"-h": true, "-g": true, "-s": true, "-G": true, "-u": true, "-k": true}

// dropIgnoredGroup removes the second name of a busybox adduser that has
// options, which busybox ignores.
func dropIgnoredGroup(ws words) words {
	var names []int
	opts := false
	for i := 0; i < len(ws.words); i++ {
		w := ws.words[i]
		switch {
		case busyboxValueFlags[w]:
			opts = true
			i++
		case strings.HasPrefix(w, "-") && len(w) > 1:
			opts = true
		default:
			names = append(names, i)
		}
	}
	if !opts || len(names) != 2 {
		return ws
	}
	k := names[1]
	ws.seps = append(ws.seps[:k:k], ws.seps[k+1:]...)
	ws.words = append(ws.words[:k:k], ws.words[k+1:]...)
	return ws
}

// continuation reports a line continuation (either escape character) at
// s[i].
func continuation(s string, i int) bool {
	return (s[i] == '\\' || s[i] == '`') && i+1 < len(s) && (s[i+1] == '\n' || s[i+1] == '\r')
}

// lineStart reports whether s[i] is the first non-blank of its line.
func lineStart(s string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch s[j] {
		case ' ', '\t':
		case '\n':
			return true
		default:
			return false
		}
	}
	return false
}

// debianUserFlags turns busybox adduser/addgroup flags (args, the text
// after the command) into Debian's, each word where it was.
//
// busybox adduser with options and two names (adduser -D app app) creates
// the first, in a group of its own name, and ignores the second; only
// with no option does it add an existing user to an existing group, as
// Debian's does with two names (loginutils/adduser.c, adduser_main: if
// (!opts && argv[1]) return addgroup_wrapper(...)). So the ignored second
// name goes, or Debian's adduser would try to add a user that does not
// exist yet to that group, and fail.
func debianUserFlags(cmd, args string) string {
	ws := splitWords(args)
	if cmd == "adduser" {
		ws = dropIgnoredGroup(ws)
	}
	var b strings.Builder
	for i := 0; i < len(ws.words); i++ {
		f, sep := ws.words[i], ws.seps[i]
		val := func(flag string) string {
			if i+1 < len(ws.words) {
				i++
				return sep + flag + ws.seps[i] + ws.words[i]
			}
			return sep + flag
		}
		switch f {
		case "-S":
			b.WriteString(sep + "--system")
		case "-D":
			b.WriteString(sep + "--disabled-password")
		case "-H":
			b.WriteString(sep + "--no-create-home")
		case "-G":
			b.WriteString(val("--ingroup"))
		case "-u":
			b.WriteString(val("--uid"))
		case "-g":
			if cmd == "addgroup" {
				b.WriteString(val("--gid"))
			} else {
				b.WriteString(val("--gecos"))
			}
		case "-h":
			b.WriteString(val("--home"))
		case "-s":
			b.WriteString(val("--shell"))
		default:
			b.WriteString(sep + f)
		}
	}
	return b.String() + ws.trail
}
