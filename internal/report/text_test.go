package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codegenie/codegenie/internal/probe"
)

func textContext() *Context {
	shellInCode := func(file string, line int) probe.Blocker {
		return probe.Blocker{ID: "child_process.shell_in_app", Kind: probe.ShellAtRuntime, Title: "the app calls execSync, which runs /bin/sh",
			Fix: "call execFile with an argv", Evidence: []probe.Evidence{{File: file, Line: line}}}
	}
	return &Context{
		Repo:  "/src/svc",
		Image: &probe.ImageRef{Dockerfile: "Dockerfile", Target: "runtime", Why: "the last stage (runtime)"},
		Assessments: map[string]probe.Assessment{"distroless_readiness": {
			Verdict: probe.Blocked,
			Blockers: []probe.Blocker{
				{ID: "dockerfile.shell_form_run_in_final_stage", Kind: probe.ShellInFinalStageBuild, Stage: "runtime", Removable: true,
					Title:    "RUN apt-get update &&     apt-get install -y " + strings.Repeat("some-very-long-package-name ", 8) + "needs /bin/sh in the final stage",
					Fix:      "move this step into the builder stage",
					Evidence: append([]probe.Evidence{{File: "Dockerfile", Line: 9}}, tracedRuns(9, 5)...)},
				{ID: "node_runtime.musl_builder_glibc_runtime", Kind: probe.NativeABI, Stage: "build", Removable: true,
					Title: "native addons are built on musl", Fix: "build on node:22-bookworm-slim", Evidence: []probe.Evidence{{File: "Dockerfile", Line: 1}}},
				shellInCode("src/a.js", 3), shellInCode("src/b.js", 7), shellInCode("src/c.js", 11),
				{ID: "entrypoint_scripts.shell_shebang", Kind: probe.ShellAtRuntime, Stage: "runtime", Title: "entry.sh is a shell script (#!/bin/sh)",
					WhyNot: "the script has logic exec form cannot express", Evidence: []probe.Evidence{{File: "Dockerfile", Line: 12}}},
			},
		}},
	}
}

// tracedRuns are n shells a traced build step ran at line.
func tracedRuns(line, n int) []probe.Evidence {
	var out []probe.Evidence
	for i := range n {
		out = append(out, probe.Evidence{File: "Dockerfile", Line: line, Trace: &probe.TraceRef{Phase: "build", PID: int32(100 + i)},
			Note: fmt.Sprintf("ran \"/var/lib/dpkg/info/pkg%d.postinst configure\"", i)})
	}
	return out
}

// TestTextCapsTracedRuns: a blocker's traced runs (an apt-get install's
// dozens of maintainer scripts) show a few, and say how many more;
// --verbose lists them all.
func TestTextCapsTracedRuns(t *testing.T) {
	t.Parallel()
	out := encodeText(t, TextOptions{})
	if n := strings.Count(out, ".postinst configure"); n != maxTraceLines || !strings.Contains(out, "and 2 more traced run(s)") {
		t.Errorf("%d traced runs shown, want %d and \"and 2 more traced run(s)\":\n%s", n, maxTraceLines, out)
	}
	if n := strings.Count(encodeText(t, TextOptions{Verbose: true}), ".postinst configure"); n != 5 {
		t.Errorf("--verbose shows %d traced runs, want 5", n)
	}
}

func encodeText(t *testing.T, opt TextOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := EncodeText(&b, textContext(), opt); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTextGroupsByImageThenStage(t *testing.T) {
	t.Parallel()
	out := encodeText(t, TextOptions{})
	order := []string{"image Dockerfile, target runtime", "chosen: the last stage (runtime)", "stage runtime (the target that ships)", "stage build", "code, scripts and package.json"}
	last := -1
	for _, s := range order {
		i := strings.Index(out, s)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in:\n%s", s, out)
		}
		last = i
	}
}

func TestTextFoldsRepeats(t *testing.T) {
	t.Parallel()
	out := encodeText(t, TextOptions{})
	if n := strings.Count(out, "the app calls execSync"); n != 1 {
		t.Errorf("the repeated finding shows %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "src/a.js:3") || !strings.Contains(out, "and 2 more") {
		t.Errorf("want the first place and \"and 2 more\":\n%s", out)
	}
	verbose := encodeText(t, TextOptions{Verbose: true})
	for _, w := range []string{"src/a.js:3", "src/b.js:7", "src/c.js:11"} {
		if !strings.Contains(verbose, w) {
			t.Errorf("--verbose does not list %s:\n%s", w, verbose)
		}
	}
}

func TestTextEveryBlockerHasAFixOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	out := encodeText(t, TextOptions{})
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.Contains(l, "✗") && !strings.Contains(l, "~") || strings.Contains(l, "legend") {
			continue
		}
		found := false
		for _, next := range lines[i+1:] {
			if strings.Contains(next, "✗") || strings.Contains(next, "~") {
				break
			}
			if strings.Contains(next, "fix:") || strings.Contains(next, "no rewrite:") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("row %q has neither a fix nor a reason there is none", l)
		}
	}
}

func TestTextCutsToWidth(t *testing.T) {
	t.Parallel()
	out := encodeText(t, TextOptions{Width: 100})
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "RUN apt-get") {
			if !strings.HasSuffix(l, "…") {
				t.Errorf("long command not cut: %q", l)
			}
			if strings.Contains(l, "&&     ") {
				t.Errorf("continued lines not folded: %q", l)
			}
			if !strings.Contains(l, "Dockerfile:9") {
				t.Errorf("cut row lost the place to read the rest: %q", l)
			}
			if n := utf8.RuneCountInString(l); n > 140 {
				t.Errorf("row is %d columns wide at width 100: %q", n, l)
			}
		}
	}
	whole := encodeText(t, TextOptions{})
	if !strings.Contains(whole, "needs /bin/sh in the final stage") {
		t.Errorf("without a width the command is cut:\n%s", whole)
	}
}
