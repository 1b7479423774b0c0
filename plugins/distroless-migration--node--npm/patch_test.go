package nodenpm_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// A patch a maintainer would merge (issue 21) keeps the author's
// formatting and intent. checkPatch holds a rewrite of the Dockerfile
// before to it:
//   - a rewrite that changes a file says what it changed;
//   - a comment above an instruction is not left behind at the end of the
//     file, after the last instruction;
//   - stage names keep their case;
//   - no RUN runs apt-get update twice;
//   - a FROM pinned by digest stays pinned, or a change says the pin must
//     be refreshed;
//   - no COPY puts another image's /etc/passwd or /etc/group over the
//     target's own;
//   - a new CMD is in the change list;
//   - a continued RUN that is rewritten stays continued.
func checkPatch(t *testing.T, before []byte, res *recipe.Result) {
	t.Helper()
	if len(res.Files) > 0 && len(res.Changes) == 0 {
		t.Errorf("the rewrite changes %d file(s) but lists no change", len(res.Files))
	}
	var after []byte
	for _, f := range res.Files {
		if f.Path == res.Dockerfile {
			after = f.New
		}
	}
	if after == nil {
		return
	}
	old, out := logicalLines(string(before)), logicalLines(string(after))

	// Comments stay with their instructions.
	lastInstr := -1
	for i, l := range out {
		if l.instr {
			lastInstr = i
		}
	}
	for i, l := range old {
		if !l.comment || i+1 >= len(old) || !old[i+1].instr || strings.HasPrefix(l.text, "# syntax=") || strings.HasPrefix(l.text, "# escape=") {
			continue
		}
		for j := lastInstr + 1; j < len(out); j++ {
			if out[j].comment && out[j].text == l.text {
				t.Errorf("the comment %q, above %q in the original, is left after the last instruction:\n%s", l.text, old[i+1].text, after)
			}
		}
	}

	// Stage names keep their case.
	names := map[string]string{}
	for _, l := range old {
		if m := fromNameRE.FindStringSubmatch(l.joined); m != nil {
			names[strings.ToLower(m[1])] = m[1]
		}
	}
	for _, l := range out {
		if m := fromNameRE.FindStringSubmatch(l.joined); m != nil {
			for _, n := range []string{m[1], strings.TrimSuffix(strings.TrimSuffix(m[1], "-files"), "-users")} {
				if orig, ok := names[strings.ToLower(n)]; ok && orig != n {
					t.Errorf("the stage %s is renamed %s: %q", orig, n, l.joined)
				}
			}
		}
	}

	// apt-get update once per RUN.
	for _, l := range out {
		if l.instr && strings.Count(l.joined, "apt-get update") > 1 && !strings.Contains(string(before), l.joined) {
			t.Errorf("a RUN runs apt-get update twice: %q", l.joined)
		}
	}

	// Digest pins.
	pins := func(ls []logicalLine) int {
		n := 0
		for _, l := range ls {
			if fromRE.MatchString(l.joined) && strings.Contains(l.joined, "@sha256:") {
				n++
			}
		}
		return n
	}
	if pins(out) < pins(old) {
		said := false
		for _, c := range res.Changes {
			said = said || strings.Contains(c.What, "digest")
		}
		if !said {
			t.Errorf("the original pins %d base(s) by digest, the rewrite %d, and no change says the pin must be refreshed:\n%s", pins(old), pins(out), after)
		}
	}

	// The target's own users and groups stay.
	for _, l := range out {
		f := strings.Fields(l.joined)
		if len(f) >= 3 && strings.EqualFold(f[0], "COPY") && strings.HasSuffix(f[len(f)-1], "/etc/") || len(f) >= 3 && strings.EqualFold(f[0], "COPY") && f[len(f)-1] == "/etc/passwd" {
			for _, s := range f[1 : len(f)-1] {
				if s == "/etc/passwd" || s == "/etc/group" {
					t.Errorf("the rewrite copies another image's %s over the target's own: %q", s, l.joined)
				}
			}
		}
	}

	// A new CMD is in the change list.
	for _, l := range out {
		if !l.instr || !strings.HasPrefix(strings.ToUpper(l.joined), "CMD ") || strings.Contains(string(before), l.raw) {
			continue
		}
		args := strings.TrimSpace(l.joined[4:])
		if !slices.ContainsFunc(res.Changes, func(c recipe.Change) bool { return strings.Contains(c.What, args) }) {
			t.Errorf("the rewrite writes %q, and no change says so", l.joined)
		}
	}

	// A continued RUN that is rewritten stays continued. One the rewrite
	// removes, and says so at its line (an install of the init wrapper
	// only the old start ran), is not rewritten.
	for _, l := range old {
		if !l.instr || l.lines < 2 || !strings.HasPrefix(strings.ToUpper(l.text), "RUN") || strings.Contains(string(after), l.raw) {
			continue
		}
		if slices.ContainsFunc(res.Changes, func(c recipe.Change) bool {
			return c.Line == l.line && strings.Contains(c.What, "which only the old start ran")
		}) {
			continue
		}
		for _, o := range out {
			if o.instr && o.lines == 1 && strings.HasPrefix(strings.ToUpper(o.text), "RUN") && !strings.Contains(string(before), o.raw) && len(o.text) > 80 {
				t.Errorf("the RUN continued over %d lines at %q is rewritten as one line: %q", l.lines, l.text, o.text)
			}
		}
	}
}

var (
	fromRE     = regexp.MustCompile(`(?i)^FROM\s`)
	fromNameRE = regexp.MustCompile(`(?i)^FROM\s.*\sAS\s+(\S+)\s*$`)
)

// logicalLine is a comment, a blank line or an instruction with its
// continuation lines.
type logicalLine struct {
	text    string // the first line, trimmed
	joined  string // the instruction's lines joined, continuations removed
	raw     string // the lines as written
	lines   int
	line    int // the first line's number, from 1
	comment bool
	instr   bool
}

func logicalLines(src string) []logicalLine {
	var out []logicalLine
	ls := strings.SplitAfter(src, "\n")
	for i := 0; i < len(ls); i++ {
		t := strings.TrimSpace(ls[i])
		l := logicalLine{text: t, raw: ls[i], lines: 1, joined: t, line: i + 1}
		switch {
		case t == "":
		case strings.HasPrefix(t, "#"):
			l.comment = true
		default:
			l.instr = true
			var parts []string
			cur := t
			for (strings.HasSuffix(cur, `\`) || strings.HasSuffix(cur, "`")) && i+1 < len(ls) {
				parts = append(parts, strings.TrimSpace(cur[:len(cur)-1]))
				i++
				l.raw += ls[i]
				l.lines++
				cur = strings.TrimSpace(ls[i])
				for strings.HasPrefix(cur, "#") && i+1 < len(ls) {
					i++
					l.raw += ls[i]
					l.lines++
					cur = strings.TrimSpace(ls[i])
				}
			}
			parts = append(parts, cur)
			l.joined = strings.Join(parts, " ")
		}
		if l.text != "" || l.raw != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestRewriteRepinsDigests: a FROM pinned by digest that the rewrite
// replaces names the new image with its digest when the digest resolves,
// and by its tag, with a change that says the pin must be refreshed, when
// it does not (issue 21).
func TestRewriteRepinsDigests(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "fixtures", "patch-pinned")
	out := gatherStatic(t, dir)
	digestOf := func(ref string) string { return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(ref))) }
	for _, tc := range []struct {
		name       string
		resolvable func(ref string) bool
	}{
		{"every digest resolves", func(string) bool { return true }},
		{"the builder's does not", func(ref string) bool { return !strings.HasPrefix(ref, "node:") }},
		{"none does", func(string) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := nodenpm.Rewrite(t.Context(), dir, out.Probes, nodenpm.RewriteOptions{Digest: func(_ context.Context, ref string) (string, error) {
				if !tc.resolvable(ref) {
					return "", errors.New("not resolvable here")
				}
				return digestOf(ref), nil
			}})
			if err != nil || res.Refused() || len(res.Files) == 0 {
				t.Fatalf("rewrite: %v, %+v", err, res)
			}
			for _, l := range logicalLines(string(res.Files[0].New)) {
				f := strings.Fields(l.joined)
				if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
					continue
				}
				ref, _, pinned := strings.Cut(f[1], "@")
				said := slices.ContainsFunc(res.Changes, func(c recipe.Change) bool {
					return strings.Contains(c.What, "could not resolve "+ref+" to a digest")
				})
				switch {
				case tc.resolvable(ref) && (!pinned || f[1] != ref+"@"+digestOf(ref)):
					t.Errorf("%q: want %s@%s", l.joined, ref, digestOf(ref))
				case !tc.resolvable(ref) && (pinned || !said):
					t.Errorf("%q: want the tag, and a change that says the pin must be refreshed (changes: %+v)", l.joined, res.Changes)
				case tc.resolvable(ref) && said:
					t.Errorf("%s resolves, but a change says it could not", ref)
				}
			}
		})
	}
}

// TestPruneMatchesThePackageManager: the builder whose node_modules the
// runtime copies prunes its dev dependencies with its own package
// manager's command, at its end (after the build that needed them), and an
// install that left them out is not pruned again (issue 21).
func TestPruneMatchesThePackageManager(t *testing.T) {
	t.Parallel()
	for install, prune := range map[string]string{
		"npm ci":                         "npm prune --omit=dev",
		"npm install":                    "npm prune --omit=dev",
		"pnpm install --frozen-lockfile": "pnpm prune --prod",
		"yarn install --frozen-lockfile": "yarn install --production --frozen-lockfile --ignore-scripts",
		"npm ci --omit=dev":              "",
		// Yarn 2+ has no install --production: a warning names the way.
		"yarn install --immutable":       "",
		"npm ci && npm prune --omit=dev": "",
		// NODE_ENV=production for the step's own install.
		"rm -rf node_modules && NODE_ENV=production pnpm i": "",
		// Yarn 2+'s focus --production is its prune: nothing owed.
		"yarn install --immutable && yarn workspaces focus --all --production": "",
	} {
		t.Run(install, func(t *testing.T) {
			t.Parallel()
			repo := t.TempDir()
			copyTree(t, filepath.Join("testdata", "fixtures", "patch-devdeps"), repo)
			rewriteDockerfiles(t, repo, func(s string) string { return strings.Replace(s, "RUN npm ci\n", "RUN "+install+"\n", 1) })
			out := gatherStatic(t, repo)
			res, err := nodenpm.Rewrite(t.Context(), repo, out.Probes, nodenpm.RewriteOptions{})
			if err != nil || res.Refused() || len(res.Files) == 0 {
				t.Fatalf("rewrite: %v, %+v", err, res)
			}
			got := string(res.Files[0].New)
			if prune == "" {
				old := string(res.Files[0].Old)
				if strings.Count(got, "prune") != strings.Count(old, "prune") || strings.Count(got, "--production") != strings.Count(old, "--production") {
					t.Fatalf("the install leaves dev dependencies out, or its package manager has no prune codegenie writes, but the rewrite prunes:\n%s", got)
				}
				warned := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "yarn workspaces focus") })
				if focused := strings.Contains(install, "focus"); strings.Contains(install, "--immutable") && warned == focused {
					t.Errorf("Yarn 2+ (pruned with focus: %v): warnings %v", focused, res.Warnings)
				}
				return
			}
			if want := "RUN npm run build\nRUN " + prune + "\n\nFROM "; !strings.Contains(got, want) {
				t.Fatalf("want the builder to end with RUN %s:\n%s", prune, got)
			}
			if !slices.ContainsFunc(res.Changes, func(c recipe.Change) bool { return strings.Contains(c.What, prune) }) {
				t.Errorf("no change says the builder prunes: %+v", res.Changes)
			}
		})
	}
}
