package nodenpm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

func gatherStatic(t *testing.T, dir string) *report.Context {
	t.Helper()
	out, err := gather.Run(t.Context(), dir, gather.Options{Registry: staticRegistry(), Version: "test", Task: nodenpm.Task})
	if err != nil {
		t.Fatal(err)
	}
	return out.Context
}

func fixtureDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return dirs
}

// TestRuleTableDecidesEveryBlocker: on every fixture, each blocker names a
// rule of the table, is removable exactly when its rule is, and
// ready_after_rewrite means every blocker is removable (the contract the
// migrate recipe implements).
func TestRuleTableDecidesEveryBlocker(t *testing.T) {
	t.Parallel()
	used := map[string]bool{}
	for _, dir := range fixtureDirs(t) {
		a := gatherStatic(t, dir).Assessments[readiness.Name]
		removable := true
		for _, b := range a.Blockers {
			r := readiness.RuleFor(b.Rule) // panics on a rule the table lacks
			used[b.Rule] = true
			if b.Removable != r.Removable {
				t.Errorf("%s: blocker %s removable=%v, rule %s says %v", filepath.Base(dir), b.ID, b.Removable, b.Rule, r.Removable)
			}
			if !b.Removable && b.Fix == "" && b.WhyNot == "" {
				t.Errorf("%s: blocker %s has neither a fix nor a reason none exists", filepath.Base(dir), b.ID)
			}
			removable = removable && b.Removable
		}
		if got := a.Verdict == probe.ReadyAfterRewrite; got != (removable && len(a.Blockers) > 0 && a.Reason == "") {
			t.Errorf("%s: verdict %s with blockers all removable=%v", filepath.Base(dir), a.Verdict, removable)
		}
	}
	for _, r := range readiness.Rules {
		if r.Removable == (r.WhyNot != "") || r.Removable != (r.Rewrite != "") {
			t.Errorf("rule %s must have a rewrite when removable and a reason when not", r.Name)
		}
	}
	if len(used) < 12 {
		t.Errorf("the fixtures exercise %d rules; want most of the table covered", len(used))
	}
}

// TestFixesHoldOnDistroless applies each CMD and HEALTHCHECK fix the
// verdict suggests, on a distroless runtime, and gathers again: the fixed
// blocker is gone and no finding appears that was not there before. A fix
// never starts CMD with node, since the distroless entrypoint is node.
func TestFixesHoldOnDistroless(t *testing.T) {
	t.Parallel()
	applied := 0
	for _, dir := range fixtureDirs(t) {
		name := filepath.Base(dir)
		c := gatherStatic(t, dir)
		a := c.Assessments[readiness.Name]
		if c.Image == nil || c.Image.Dockerfile != "Dockerfile" {
			continue
		}
		var cmd, env, health string
		before := map[string]bool{}
		for _, b := range a.Blockers {
			before[b.ID] = true
			fix := b.Fix
			if e, rest, ok := strings.Cut(fix, " and CMD ["); ok && (strings.HasPrefix(e, "ENV ") || strings.HasPrefix(e, "WORKDIR ")) {
				// "WORKDIR d and ENV x and CMD [...]": one line each.
				env, fix = strings.Replace(e, " and ENV ", "\nENV ", 1), "CMD ["+rest
			}
			switch {
			case strings.HasPrefix(fix, "CMD ["):
				var argv []string
				if err := json.Unmarshal([]byte(strings.TrimPrefix(fix, "CMD ")), &argv); err != nil {
					t.Errorf("%s: fix %q is not an exec-form CMD: %v", name, b.Fix, err)
					continue
				}
				if len(argv) > 0 && (argv[0] == "node" || strings.HasSuffix(argv[0], "/node")) {
					t.Errorf("%s: fix %q starts CMD with node; the distroless entrypoint is node", name, b.Fix)
				}
				cmd = fix
			case strings.HasPrefix(fix, "HEALTHCHECK CMD ["):
				// The instruction, then what its script does.
				health = fix[:strings.Index(fix, "]")+1]
			}
		}
		if cmd == "" && health == "" {
			continue
		}
		applied++
		work := t.TempDir()
		copyTree(t, dir, work)
		rewriteFinalStage(t, filepath.Join(work, "Dockerfile"), cmd, env, health)
		after := gatherStatic(t, work).Assessments[readiness.Name]
		for _, b := range after.Blockers {
			if len(b.Evidence) > 0 && b.Evidence[0].File != "Dockerfile" {
				continue // a compose file's finding: this test edits the Dockerfile only
			}
			if !before[b.ID] {
				t.Errorf("%s: applying the fixes raised a new finding %s: %s", name, b.ID, b.Title)
			}
			for _, fixed := range []string{"npm_scripts.package_manager_start", "dockerfile.shell_form_cmd", "dockerfile.shell_form_healthcheck",
				"npm_scripts.distroless_node_twice", "entrypoint_scripts.base_image_entrypoint"} {
				if b.ID == fixed && (cmd != "" || health != "") && b.Rule != readiness.RuleNodeLauncher {
					t.Errorf("%s: %s is still there after its fix (%s)", name, b.ID, b.Title)
				}
			}
		}
	}
	if applied < 5 {
		t.Errorf("applied fixes on %d fixtures; want at least 5", applied)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rewriteFinalStage moves the final stage onto the distroless base and
// puts the fixes in place of its CMD, ENTRYPOINT and HEALTHCHECK lines.
func rewriteFinalStage(t *testing.T, path, cmd, env, health string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	final := 0
	for i, l := range lines {
		if strings.HasPrefix(strings.ToUpper(l), "FROM ") {
			final = i
		}
	}
	out := append([]string{}, lines[:final]...)
	out = append(out, "FROM gcr.io/distroless/nodejs22-debian13")
	dropping := false // the dropped instruction goes on to this line
	for _, l := range lines[final+1:] {
		up := strings.ToUpper(l)
		switch {
		case dropping:
		case strings.HasPrefix(up, "CMD ") || strings.HasPrefix(up, "ENTRYPOINT "):
		case strings.HasPrefix(up, "HEALTHCHECK ") && health != "":
		default:
			out = append(out, l)
			continue
		}
		dropping = strings.HasSuffix(strings.TrimRight(l, " \t"), "\\")
	}
	if env != "" {
		out = append(out, env)
	}
	if health != "" {
		out = append(out, health)
	}
	if cmd != "" {
		out = append(out, cmd)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
