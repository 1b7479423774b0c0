package nodenpm_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/report/sariftest"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden is what a fixture's gather must give: the verdict, each blocker
// with its evidence, and each probe's confidence and warnings.
type golden struct {
	Image     *probe.ImageRef   `json:"image,omitempty"`
	Verdict   probe.Verdict     `json:"verdict"`
	Confirmed bool              `json:"confirmed"`
	Reason    string            `json:"reason,omitempty"`
	Blockers  []goldenBlocker   `json:"blockers"`
	Notes     []string          `json:"notes,omitempty"`
	Probes    map[string]gProbe `json:"probes"`
}

type goldenBlocker struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind"`
	Rule      string   `json:"rule"`
	Removable bool     `json:"removable"`
	Where     []string `json:"where"`
	Fix       string   `json:"fix,omitempty"`
	WhyNot    string   `json:"why_not,omitempty"`
}

type gProbe struct {
	Confidence probe.Confidence `json:"confidence"`
	Reason     string           `json:"reason,omitempty"`
	Warnings   []string         `json:"warnings,omitempty"`
}

func summarize(c *report.Context) golden {
	a := c.Assessments["distroless_readiness"]
	g := golden{Image: c.Image, Verdict: a.Verdict, Confirmed: a.Confirmed, Reason: a.Reason, Blockers: []goldenBlocker{}, Probes: map[string]gProbe{}}
	for _, n := range a.Notes {
		where := ""
		if len(n.Evidence) > 0 {
			where = fmt.Sprintf(" @%s:%d", n.Evidence[0].File, n.Evidence[0].Line)
		}
		g.Notes = append(g.Notes, n.ID+where+": "+n.Message)
	}
	for _, b := range a.Blockers {
		gb := goldenBlocker{ID: b.ID, Kind: string(b.Kind), Rule: b.Rule, Removable: b.Removable, Fix: b.Fix, WhyNot: b.WhyNot}
		for _, e := range b.Evidence {
			gb.Where = append(gb.Where, fmt.Sprintf("%s:%d", e.File, e.Line))
		}
		g.Blockers = append(g.Blockers, gb)
	}
	for _, r := range c.Probes {
		var ws []string
		for _, w := range r.Warnings {
			loc := ""
			if len(w.Evidence) > 0 {
				loc = fmt.Sprintf(" %s:%d", w.Evidence[0].File, w.Evidence[0].Line)
			}
			ws = append(ws, w.ID+loc)
		}
		sort.Strings(ws)
		g.Probes[r.Probe] = gProbe{Confidence: r.Confidence, Reason: string(r.Reason), Warnings: ws}
	}
	return g
}

// staticRegistry is the built-in registry without heavy or RunsLast
// probes: these fixtures test the static verdict, with no sandbox.
func staticRegistry() *probe.Registry {
	full := builtin.NewRegistry()
	reg := probe.NewRegistry()
	for _, w := range full.Warnings().All() {
		reg.Warnings().MustRegister(w)
	}
	for _, p := range full.All() {
		if d := p.Desc(); d.Heaviness == probe.Light && !d.RunsLast {
			reg.MustRegister(p)
		}
	}
	for _, a := range full.Assessors("") {
		if err := reg.RegisterAssessor(a); err != nil {
			panic(err)
		}
	}
	if sel, ok := full.ImageSelector(nodenpm.Task); ok {
		if err := reg.RegisterImageSelector(nodenpm.Task, sel); err != nil {
			panic(err)
		}
	}
	return reg
}

func TestFixtures(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*"))
	if err != nil || len(dirs) < 12 {
		t.Fatalf("found %d fixtures (%v), want at least 12", len(dirs), err)
	}
	reg := staticRegistry()
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := cache.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			opts := gather.Options{Registry: reg, Version: "test", Cache: c, Task: nodenpm.Task}
			cold, err := gather.Run(t.Context(), dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := summarize(cold.Context)
			goldenPath := filepath.Join("testdata", "golden", name+".json")
			if *update {
				b, _ := json.MarshalIndent(got, "", "  ")
				if err := os.MkdirAll(filepath.Dir(goldenPath), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(goldenPath, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			var want golden
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("gather %s (-want +got):\n%s", name, diff)
			}
			// Every blocker names its evidence with a file and line.
			for _, bl := range cold.Context.Assessments["distroless_readiness"].Blockers {
				if len(bl.Evidence) == 0 || bl.Evidence[0].File == "" || bl.Evidence[0].Line < 1 {
					t.Errorf("blocker %s has no file:line evidence", bl.ID)
				}
			}
			// A warm run is all cache hits, with identical bytes.
			warm, err := gather.Run(t.Context(), dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			var cb, wb bytes.Buffer
			if err := cold.Encode(&cb); err != nil {
				t.Fatal(err)
			}
			if err := warm.Encode(&wb); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(cb.Bytes(), wb.Bytes()) {
				t.Error("warm context differs from cold")
			}
			for _, r := range warm.Records {
				if !r.CacheHit && r.Result.Confidence != probe.Low {
					t.Errorf("warm run of %s missed the cache", r.Result.Probe)
				}
			}
			var sarif bytes.Buffer
			if err := report.EncodeSARIF(&sarif, cold.Context, reg); err != nil {
				t.Fatal(err)
			}
			sariftest.Validate(t, sarif.Bytes())
		})
	}
}
