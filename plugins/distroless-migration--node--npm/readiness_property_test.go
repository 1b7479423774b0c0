package nodenpm_test

import (
	"path/filepath"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// TestNeverReadyOnLowConfidence: for every fixture's results, lowering any
// probe the verdict needs (every static probe; the trace only confirms)
// to low confidence makes the verdict neither ready nor
// ready_after_rewrite (issue 21).
func TestNeverReadyOnLowConfidence(t *testing.T) {
	t.Parallel()
	a := readiness.New("")
	for _, dir := range fixtureDirs(t) {
		c := gatherStatic(t, dir)
		for i, r := range c.Probes {
			if r.Probe == shelltrace.Name {
				continue
			}
			results := append([]probe.Result(nil), c.Probes...)
			low := results[i]
			low.Confidence, low.Reason, low.Detail = probe.Low, "test_lowered", "lowered by the test"
			results[i] = low
			got, err := a.Assess(results)
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(dir), err)
			}
			if got.Verdict == probe.Ready || got.Verdict == probe.ReadyAfterRewrite {
				t.Errorf("%s: with %s at low confidence the verdict is %s, want neither ready nor ready_after_rewrite", filepath.Base(dir), r.Probe, got.Verdict)
			}
		}
	}
}
