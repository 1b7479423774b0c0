package nodenpm_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// TestRecipeMovesEveryNativeStage: musl-built native code blocks wherever
// the image gets it from, with one glibc_builder blocker per stage that
// builds it (readiness.NativeStages), and the rewrite moves each of those
// stages to glibc, not only the builder node_runtime names: a deps stage
// the runtime copies node_modules from while the build stage is the
// builder, and an alpine stage that compiles a SQLite extension the
// runtime copies (issue 21). Their gather and migrate goldens are the
// fixtures' (TestFixtures, TestRecipeRemovesEveryBlocker).
func TestRecipeMovesEveryNativeStage(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"native-deps-stage", "musl-sqlite-extension"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata", "fixtures", name)
			out := gatherStatic(t, dir)
			res, err := nodenpm.Rewrite(t.Context(), dir, out.Probes, nodenpm.RewriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Refused() || len(res.Files) == 0 {
				t.Fatalf("refused %+v, %d files", res.Refusals, len(res.Files))
			}
			for _, f := range res.Files {
				if f.Path != "Dockerfile" {
					continue
				}
				for _, line := range strings.Split(string(f.New), "\n") {
					if strings.HasPrefix(strings.ToUpper(line), "FROM ") && strings.Contains(line, "alpine") {
						t.Errorf("a stage still builds on musl: %q", line)
					}
				}
			}
		})
	}
}

// TestSameAddonsFromRepositoryRoot: a service judged with its real build
// context, from the repository's root (--dockerfile src/api/Dockerfile),
// has the native addons and the blockers it has when judged from the
// Dockerfile's folder (issue 21: from the root, the root package.json's
// dependencies were read, and the musl builder did not block).
func TestSameAddonsFromRepositoryRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join("testdata", "fixtures", "subdir-native")
	type view struct {
		Verdict probe.Verdict
		Native  []string
		Rules   []string
	}
	look := func(dir string) view {
		c := gatherStatic(t, dir)
		var v view
		a := c.Assessments[readiness.Name]
		v.Verdict = a.Verdict
		for _, b := range a.Blockers {
			v.Rules = append(v.Rules, b.Rule)
		}
		for _, r := range c.Probes {
			if r.Probe != noderuntime.Name {
				continue
			}
			var f noderuntime.Facts
			if err := json.Unmarshal(r.Facts, &f); err != nil {
				t.Fatal(err)
			}
			for _, n := range f.Native {
				v.Native = append(v.Native, n.Package+" "+n.How)
			}
		}
		sort.Strings(v.Rules)
		return v
	}
	fromRoot, fromFolder := look(root), look(filepath.Join(root, "src", "api"))
	if diff := cmp.Diff(fromFolder, fromRoot); diff != "" {
		t.Errorf("judged from the repository's root vs from the Dockerfile's folder (-folder +root):\n%s", diff)
	}
	if len(fromRoot.Native) == 0 || !cmp.Equal(fromRoot.Rules, []string{readiness.RuleGlibcBuilder}) {
		t.Errorf("from the root: %+v, want bcrypt found and one glibc_builder blocker", fromRoot)
	}
}

// TestFixesNameOneMajor: on every fixture, the fixes of the builder and
// version rules name one Node major: a builder moved to glibc, a builder
// brought to the runtime's major and a runtime bumped to a supported LTS
// all land on the same one (issue 21: a builder fix said node:20 while
// the bump said 22).
func TestFixesNameOneMajor(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`node:(\d+)-bookworm-slim|bump to Node (\d+)|use Node (\d+)|nodejs(\d+)-debian`)
	for _, dir := range fixtureDirs(t) {
		a := gatherStatic(t, dir).Assessments[readiness.Name]
		majors := map[string][]string{}
		for _, b := range a.Blockers {
			switch b.Rule {
			case readiness.RuleGlibcBuilder, readiness.RuleSameMajor, readiness.RuleBumpNode:
			default:
				continue
			}
			for _, m := range re.FindAllStringSubmatch(b.Fix, -1) {
				for _, g := range m[1:] {
					if g != "" {
						majors[g] = append(majors[g], b.Rule)
					}
				}
			}
		}
		if len(majors) > 1 {
			t.Errorf("%s: the fixes name different Node majors: %v", filepath.Base(dir), majors)
		}
	}
}
