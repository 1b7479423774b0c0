package nodenpm_test

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// instrRE is a line that begins an instruction: its keyword and the rest.
var instrRE = regexp.MustCompile(`^([A-Za-z]+)([ \t]+)(.*)$`)

// dockerfileVariant rewrites a Dockerfile's text into another that a build
// reads the same way (or, for the WORKDIR variant, a shape real
// Dockerfiles have).
type dockerfileVariant struct {
	name string
	f    func(src string) string
}

// eachInstruction calls f on every line that begins an instruction (not a
// continuation, comment or heredoc body line) and joins the results.
func eachInstruction(src string, escape byte, f func(kw, sep, rest string) string) string {
	ls := strings.SplitAfter(src, "\n")
	var b strings.Builder
	continued, heredoc := false, ""
	for _, l := range ls {
		body := strings.TrimRight(l, "\r\n")
		switch {
		case heredoc != "":
			if strings.TrimSpace(body) == heredoc {
				heredoc = ""
			}
			b.WriteString(l)
			continue
		case continued || strings.HasPrefix(strings.TrimSpace(body), "#"):
			b.WriteString(l)
		default:
			if m := instrRE.FindStringSubmatch(body); m != nil && !strings.Contains(body, "<<") {
				b.WriteString(f(m[1], m[2], m[3]) + l[len(body):])
			} else {
				b.WriteString(l)
			}
		}
		if i := strings.Index(body, "<<"); i >= 0 && !continued {
			heredoc = strings.Trim(strings.Fields(body[i+2:] + " x")[0], `-"'`)
		}
		trimmed := strings.TrimRight(body, " \t")
		continued = len(trimmed) > 0 && trimmed[len(trimmed)-1] == escape || continued && strings.HasPrefix(strings.TrimSpace(body), "#")
	}
	return b.String()
}

// splitAt continues an instruction on a second line after its first
// argument, at a space outside quotes, with comment lines between.
func splitAt(escape string, comment bool) func(kw, sep, rest string) string {
	return func(kw, sep, rest string) string {
		quote := byte(0)
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			switch {
			case quote != 0 && c == quote:
				quote = 0
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
			case quote == 0 && c == ' ' && i > 0 && strings.TrimSpace(rest[i:]) != "":
				mid := " " + escape + "\n"
				if comment {
					mid += "  # a comment between continued lines\n"
				}
				return kw + sep + rest[:i] + mid + "   " + rest[i:]
			}
		}
		return kw + sep + rest
	}
}

// asNameRE is a FROM's text up to its stage name, and the name.
var asNameRE = regexp.MustCompile(`^(.*\s[Aa][Ss]\s+)([a-z][A-Za-z0-9_.-]*)\s*$`)

var dockerfileVariants = []dockerfileVariant{
	{"as-is", func(s string) string { return s }},
	{"continued", func(s string) string { return eachInstruction(s, '\\', splitAt(`\`, false)) }},
	{"continued-with-comments", func(s string) string { return eachInstruction(s, '\\', splitAt(`\`, true)) }},
	{"lower-case", func(s string) string {
		return eachInstruction(s, '\\', func(kw, sep, rest string) string { return strings.ToLower(kw) + sep + rest })
	}},
	{"no-workdir", func(s string) string {
		return eachInstruction(s, '\\', func(kw, sep, rest string) string {
			if strings.EqualFold(kw, "workdir") {
				return "# WORKDIR " + rest
			}
			return kw + sep + rest
		})
	}},
	{"syntax-directive", func(s string) string { return "# syntax=docker/dockerfile:1\n" + s }},
	{"escape-backtick", func(s string) string {
		// The continuation character is ` and a \ is a plain character.
		s = eachInstruction(s, '\\', func(kw, sep, rest string) string { return kw + sep + rest })
		s = regexp.MustCompile(`\\([ \t]*\r?\n)`).ReplaceAllString(s, "`$1")
		return "# escape=`\n" + eachInstruction(s, '`', splitAt("`", true))
	}},
	{"heredoc-in-runtime-stage", func(s string) string {
		// A heredoc RUN in the last stage, the one usually judged.
		froms := 0
		eachInstruction(s, '\\', func(kw, sep, rest string) string {
			if strings.EqualFold(kw, "from") {
				froms++
			}
			return kw + sep + rest
		})
		n := 0
		return eachInstruction(s, '\\', func(kw, sep, rest string) string {
			if strings.EqualFold(kw, "from") {
				if n++; n == froms {
					return kw + sep + rest + "\nRUN <<EOF\nmkdir -p /tmp/codegenie-heredoc\nEOF"
				}
			}
			return kw + sep + rest
		})
	}},
	{"stage-names-capitalised", func(s string) string {
		// Stage names as some authors write them: AS Build, --from=Build.
		names := map[string]string{}
		s = eachInstruction(s, '\\', func(kw, sep, rest string) string {
			if m := asNameRE.FindStringSubmatch(rest); strings.EqualFold(kw, "from") && m != nil {
				names[strings.ToLower(m[2])] = strings.ToUpper(m[2][:1]) + m[2][1:]
				return kw + sep + m[1] + names[strings.ToLower(m[2])]
			}
			return kw + sep + rest
		})
		return eachInstruction(s, '\\', func(kw, sep, rest string) string {
			for lower, upper := range names {
				rest = regexp.MustCompile(`(--from=)`+regexp.QuoteMeta(lower)+`(\s)`).ReplaceAllString(rest, "${1}"+upper+"${2}")
				if strings.EqualFold(kw, "from") {
					rest = regexp.MustCompile(`^`+regexp.QuoteMeta(lower)+`(\s|$)`).ReplaceAllString(rest, upper+"${1}")
				}
			}
			return kw + sep + rest
		})
	}},
	{"heredoc", func(s string) string {
		done := false
		return eachInstruction(s, '\\', func(kw, sep, rest string) string {
			if !done && strings.EqualFold(kw, "from") {
				done = true
				return kw + sep + rest + "\nRUN <<EOF\nmkdir -p /tmp/codegenie-heredoc\nEOF"
			}
			return kw + sep + rest
		})
	}},
}

// TestReadyAfterRewriteIsCarriedOut is issue 21's property: over every
// fixture and generated variants of its Dockerfiles (continuation lines,
// comments between them, lower-case instructions, no WORKDIR, a syntax or
// escape directive, a heredoc), when gather's static verdict is
// ready_after_rewrite the recipe refuses nothing, leaves no shell-form
// instruction in the distroless runtime stage or compose healthcheck, and
// run again on its own output changes nothing.
func TestReadyAfterRewriteIsCarriedOut(t *testing.T) {
	t.Parallel()
	var dirs []string
	for _, glob := range []string{"fixtures", "migrate-e2e"} {
		d, err := filepath.Glob(filepath.Join("testdata", glob, "*"))
		if err != nil || len(d) == 0 {
			t.Fatalf("no fixtures in testdata/%s: %v", glob, err)
		}
		dirs = append(dirs, d...)
	}
	carried := map[string]int{}
	t.Cleanup(func() {
		for _, v := range dockerfileVariants {
			if !t.Failed() && carried[v.name] == 0 {
				t.Errorf("no fixture's %s variant was ready_after_rewrite: the property tested nothing there", v.name)
			}
		}
	})
	for _, dir := range dirs {
		for _, v := range dockerfileVariants {
			t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir)+"/"+v.name, func(t *testing.T) {
				repo := t.TempDir()
				copyTree(t, dir, repo)
				if !rewriteDockerfiles(t, repo, v.f) {
					t.Skip("no Dockerfile")
				}
				out := gatherStatic(t, repo)
				if out.Assessments["distroless_readiness"].Verdict != probe.ReadyAfterRewrite {
					return
				}
				carried[v.name]++
				res, err := nodenpm.Rewrite(t.Context(), repo, out.Probes, nodenpm.RewriteOptions{})
				if err != nil {
					t.Fatalf("verdict ready_after_rewrite, but the recipe failed: %v", err)
				}
				if res.Refused() {
					t.Fatalf("verdict ready_after_rewrite, but the recipe refuses: %+v\nDockerfile:\n%s", res.Refusals, readDockerfile(t, repo, res.Dockerfile))
				}
				checkNoShellForm(t, res)
				checkPatch(t, []byte(readDockerfile(t, repo, res.Dockerfile)), res)
				writeResult(t, repo, res)
				after := gatherStatic(t, repo)
				again, err := nodenpm.Rewrite(t.Context(), repo, after.Probes, nodenpm.RewriteOptions{})
				if err != nil {
					t.Fatalf("the recipe on its own output: %v", err)
				}
				if len(again.Files) > 0 {
					t.Fatalf("the recipe on its own output changes %s:\n%s", again.Files[0].Path, again.Files[0].New)
				}
			})
		}
	}
}

// rewriteDockerfiles applies f to every Dockerfile under repo.
func rewriteDockerfiles(t *testing.T, repo string, f func(string) string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "Dockerfile") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		found = true
		return os.WriteFile(p, []byte(f(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func readDockerfile(t *testing.T, repo, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(rel)))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// checkNoShellForm fails when a rewrite leaves a shell-form instruction in
// its distroless runtime stage, or a CMD-SHELL compose healthcheck.
func checkNoShellForm(t *testing.T, res *recipe.Result) {
	t.Helper()
	for _, f := range res.Files {
		switch {
		case f.Path == res.Dockerfile:
			nf, err := dockerfile.Parse(f.Path, f.New)
			if err != nil {
				t.Fatalf("the rewritten Dockerfile does not parse: %v", err)
			}
			if dockerfile.ClassifyBase(nf.RootBase(res.Stage)) != dockerfile.BaseDistroless {
				t.Fatalf("the rewritten runtime stage %d is on %s, not distroless:\n%s", res.Stage, nf.RootBase(res.Stage), f.New)
			}
			if in, ok := recipe.ShellForm(nf, res.Stage); ok {
				t.Fatalf("the rewrite leaves a shell-form %s (line %d) in the distroless stage:\n%s", in.Command, in.Line, f.New)
			}
		case strings.Contains(path.Base(f.Path), "compose") && strings.Contains(string(f.New), "CMD-SHELL"):
			t.Fatalf("the rewrite leaves a CMD-SHELL healthcheck in %s:\n%s", f.Path, f.New)
		}
	}
}
