package nodenpm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
)

// dockerfileShapes write Dockerfiles of n steps, in shapes whose
// assessment once took time (or memory) quadratic in n.
var dockerfileShapes = []struct {
	name  string
	write func(b *strings.Builder, n int)
}{
	{"run_lines", func(b *strings.Builder, n int) {
		b.WriteString("FROM node:22\nWORKDIR /app\n")
		for i := range n {
			fmt.Fprintf(b, "RUN echo %d > /tmp/f%d\n", i, i)
		}
	}},
	{"relative_workdirs", func(b *strings.Builder, n int) {
		b.WriteString("FROM node:22\nWORKDIR /app\n")
		for i := range n / 3 {
			fmt.Fprintf(b, "WORKDIR d%d\nRUN echo %d > /tmp/f%d\nWORKDIR ..\n", i, i, i)
		}
	}},
	{"stage_chain", func(b *strings.Builder, n int) {
		b.WriteString("FROM node:22 AS s0\n")
		for i := 1; i < n/2; i++ {
			fmt.Fprintf(b, "FROM s%d AS s%d\nRUN echo %d > /tmp/f%d\n", i-1, i, i, i)
		}
	}},
	// Each stage of a chain sets a variable and expands the ones before
	// it: the scopes of ARG and ENV values must not be copied per stage.
	{"variable_chain", func(b *strings.Builder, n int) {
		b.WriteString("ARG APP=/app\nFROM node:22 AS s0\nARG APP\nWORKDIR $APP\n")
		for i := 1; i < n/3; i++ {
			fmt.Fprintf(b, "FROM s%d AS s%d\nENV V%d=${APP}/v%d\nWORKDIR ${V%d}\n", i-1, i, i, i, i)
		}
		b.WriteString("WORKDIR $APP\n")
	}},
}

// scaleRepo writes a repository whose Dockerfile has the shape's n steps.
func scaleRepo(tb testing.TB, write func(*strings.Builder, int), n int) string {
	tb.Helper()
	dir := tb.TempDir()
	var b strings.Builder
	write(&b, n)
	b.WriteString("COPY . .\nCMD [\"node\", \"server.js\"]\n")
	for name, body := range map[string]string{
		"Dockerfile":   b.String(),
		"package.json": `{"name": "svc", "main": "server.js"}`,
		"server.js":    "require('node:http').createServer().listen(8080);\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// TestDockerfileAssessmentIsLinear: gathering and assessing a Dockerfile
// costs the same per instruction, however long the Dockerfile: the
// allocations per step of a Dockerfile four times as long grow by less
// than half. (Allocations, not time, so that a busy machine cannot fail
// it: each shape below once allocated in proportion to the square of its
// length.) It does not run in parallel: allocations are counted process
// wide.
func TestDockerfileAssessmentIsLinear(t *testing.T) {
	reg := staticRegistry()
	perStep := func(t *testing.T, write func(*strings.Builder, int), n int) float64 {
		dir := scaleRepo(t, write, n)
		o := gather.Options{Registry: reg, Version: "test", Task: nodenpm.Task}
		return testing.AllocsPerRun(1, func() {
			out, err := gather.Run(t.Context(), dir, o)
			if err != nil {
				t.Fatal(err)
			}
			if v := out.Context.Assessments["distroless_readiness"].Verdict; v == probe.Unknown {
				t.Fatalf("%d steps: verdict unknown (%s)", n, out.Context.Assessments["distroless_readiness"].Reason)
			}
		}) / float64(n)
	}
	for _, shape := range dockerfileShapes {
		t.Run(shape.name, func(t *testing.T) {
			small, large := perStep(t, shape.write, 500), perStep(t, shape.write, 2000)
			t.Logf("allocations per step: %.0f at 500 steps, %.0f at 2000", small, large)
			if large > 1.5*small {
				t.Errorf("allocations per step grow from %.0f at 500 steps to %.0f at 2000: the assessment is not linear in the Dockerfile's length", small, large)
			}
		})
	}
}

// BenchmarkDockerfileAssessment gathers and assesses Dockerfiles of each
// shape and size, and reports the time per step: flat across sizes when
// the work is linear.
func BenchmarkDockerfileAssessment(b *testing.B) {
	reg := staticRegistry()
	for _, shape := range dockerfileShapes {
		for _, n := range []int{1000, 4000, dockerfile.MaxInstructions - 10} {
			b.Run(fmt.Sprintf("%s/%d", shape.name, n), func(b *testing.B) {
				dir := scaleRepo(b, shape.write, n)
				o := gather.Options{Registry: reg, Version: "test", Task: nodenpm.Task}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := gather.Run(b.Context(), dir, o); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
			})
		}
	}
}

// TestDockerfileOverTheCap: a Dockerfile with more instructions than
// dockerfile.MaxInstructions is not parsed: the dockerfile probe says so,
// low, and the verdict is not ready.
func TestDockerfileOverTheCap(t *testing.T) {
	t.Parallel()
	dir := scaleRepo(t, dockerfileShapes[0].write, dockerfile.MaxInstructions+1)
	out, err := gather.Run(t.Context(), dir, gather.Options{Registry: staticRegistry(), Version: "test", Task: nodenpm.Task})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Context.Probes {
		if r.Probe != dockerfileprobe.Name {
			continue
		}
		want := fmt.Sprintf("more than %d instructions", dockerfile.MaxInstructions)
		if r.Confidence != probe.Low || r.Reason != dockerfileprobe.ReasonParseError || !strings.Contains(r.Detail, want) || !strings.Contains(r.Detail, "Dockerfile") {
			t.Errorf("dockerfile: %s/%s (%s), want low/%s saying Dockerfile has %s", r.Confidence, r.Reason, r.Detail, dockerfileprobe.ReasonParseError, want)
		}
	}
	if v := out.Context.Assessments["distroless_readiness"].Verdict; v == probe.Ready || v == probe.ReadyAfterRewrite {
		t.Errorf("verdict %s for a Dockerfile that was not parsed", v)
	}
}
