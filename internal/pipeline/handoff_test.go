package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// handing is a heavy probe that hands a blob on and names it in its facts.
type handing struct {
	blob string
	runs atomic.Int32
}

type handFacts struct {
	Blob string `json:"blob"`
}

func (h *handing) Desc() probe.Desc {
	return probe.Desc{Name: "hander", Version: "1", Heaviness: probe.Heavy, CacheStrategy: probe.CacheContent,
		DeclaredInputs: []string{"package.json"}, NeedsSandbox: true, NewFacts: func() any { return new(handFacts) }}
}

func (h *handing) Run(context.Context, *probe.Repo, *probe.Context) (probe.Output, error) {
	h.runs.Add(1)
	b := []byte(h.blob)
	return probe.Output{Confidence: probe.High, Facts: &handFacts{Blob: probe.BlobDigest(b)}, Blobs: [][]byte{b}}, nil
}

func (h *handing) Blobs(facts json.RawMessage) []string {
	var f handFacts
	if json.Unmarshal(facts, &f) != nil || f.Blob == "" {
		return nil
	}
	return []string{f.Blob}
}

// reading is a light probe that reads the hander's blob when it ran.
type reading struct{ runs atomic.Int32 }

type readFacts struct {
	Read string `json:"read"`
}

func (r *reading) Desc() probe.Desc {
	return probe.Desc{Name: "reader", Version: "1", Heaviness: probe.Light, CacheStrategy: probe.CacheContent,
		DeclaredInputs: []string{"package.json"}, After: []string{"hander"}, NewFacts: func() any { return new(readFacts) }}
}

func digestOf(pctx *probe.Context) string {
	if pctx.Handoff == nil {
		return ""
	}
	res, ok := pctx.Handoff.Earlier("hander")
	if !ok {
		return ""
	}
	var f handFacts
	_ = json.Unmarshal(res.Facts, &f)
	return f.Blob
}

func (r *reading) KeySettings(pctx *probe.Context) []string {
	return []string{"blob=" + digestOf(pctx)}
}

func (r *reading) Run(_ context.Context, _ *probe.Repo, pctx *probe.Context) (probe.Output, error) {
	r.runs.Add(1)
	d := digestOf(pctx)
	if d == "" {
		return probe.Output{Confidence: probe.High, Facts: &readFacts{Read: "(none)"}}, nil
	}
	b, err := pctx.Handoff.Blob(d)
	if err != nil {
		return probe.Output{}, err
	}
	return probe.Output{Confidence: probe.High, Facts: &readFacts{Read: string(b)}}, nil
}

type nopSandbox struct{}

func (nopSandbox) Spawn(context.Context, sandbox.SpawnRequest) (sandbox.Result, error) {
	return sandbox.Result{}, fmt.Errorf("not used")
}

// TestHandoff: a probe naming another in After runs after it and reads its
// blob; warm is byte-identical to cold; a warm result whose blob is gone
// runs again; without the sandbox the reader stays light and reads
// nothing.
func TestHandoff(t *testing.T) {
	repo := repoWith(t, map[string]string{"package.json": "{}"})
	h, rd := &handing{blob: "node_modules of the image"}, &reading{}
	p := newPipeline(t, true, rd, h)
	pctx := &probe.Context{Sandbox: nopSandbox{}}
	cold, err := p.Run(t.Context(), repo, pctx)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(cold)
	if ph := got["reader"].Phase; ph != "after" {
		t.Fatalf("reader ran in phase %q, want after", ph)
	}
	if !strings.Contains(string(got["reader"].Result.Facts), "node_modules of the image") {
		t.Fatalf("reader facts = %s", got["reader"].Result.Facts)
	}
	warm, err := p.Run(t.Context(), mustReopen(t, repo), pctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"hander", "reader"} {
		w := byName(warm)[n]
		if !w.CacheHit || string(w.Raw) != string(got[n].Raw) {
			t.Errorf("%s: warm hit %t, raw %s, cold %s", n, w.CacheHit, w.Raw, got[n].Raw)
		}
	}
	if h.runs.Load() != 1 || rd.runs.Load() != 1 {
		t.Fatalf("runs: hander %d reader %d, want 1 each", h.runs.Load(), rd.runs.Load())
	}

	// The blob is gone (its entry holds other bytes now): the hander's
	// cached result names it, so the hander runs again.
	if err := p.Cache.Put(blobKey(probe.BlobDigest([]byte(h.blob))), []byte("other bytes")); err != nil {
		t.Fatal(err)
	}
	again, err := p.Run(t.Context(), mustReopen(t, repo), pctx)
	if err != nil {
		t.Fatal(err)
	}
	if byName(again)["hander"].CacheHit || h.runs.Load() != 2 {
		t.Errorf("a result whose blob is gone was served from the cache")
	}
	if string(byName(again)["reader"].Raw) != string(got["reader"].Raw) {
		t.Errorf("reader after the re-run differs")
	}

	// No sandbox: the hander cannot run, the reader stays light.
	bare, err := p.Run(t.Context(), mustReopen(t, repo), &probe.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if r := byName(bare)["reader"]; r.Phase != "light" || !strings.Contains(string(r.Result.Facts), "(none)") {
		t.Errorf("without a sandbox: reader phase %q facts %s", r.Phase, r.Result.Facts)
	}
}

// deadlines reports how far its context's deadline is.
type deadlines struct{ far atomic.Bool }

func (d *deadlines) Desc() probe.Desc {
	return probe.Desc{Name: "deadlines", Version: "1", Heaviness: probe.Light, CacheStrategy: probe.CacheNone,
		After: []string{"hander"}, NewFacts: func() any { return new(readFacts) }}
}

func (d *deadlines) Run(ctx context.Context, _ *probe.Repo, _ *probe.Context) (probe.Output, error) {
	dl, ok := ctx.Deadline()
	d.far.Store(ok && time.Until(dl) > 30*time.Minute)
	return probe.Output{Confidence: probe.High, Facts: &readFacts{}}, nil
}

// TestAfterPhaseGetsTheHeavyTimeout: a light probe that waits for a heavy
// one's handoff scans what it handed on (a whole image's node_modules),
// so it gets the heavy timeout, not the light one.
func TestAfterPhaseGetsTheHeavyTimeout(t *testing.T) {
	repo := repoWith(t, map[string]string{"package.json": "{}"})
	d := &deadlines{}
	p := newPipeline(t, false, d, &handing{blob: "x"})
	p.LightTimeout, p.HeavyTimeout = time.Second, time.Hour
	if _, err := p.Run(t.Context(), repo, &probe.Context{Sandbox: nopSandbox{}}); err != nil {
		t.Fatal(err)
	}
	if !d.far.Load() {
		t.Error("the after-phase probe ran with the light timeout")
	}
	// Without the sandbox it stays light, with the light timeout.
	if _, err := p.Run(t.Context(), mustReopen(t, repo), &probe.Context{}); err != nil {
		t.Fatal(err)
	}
	if d.far.Load() {
		t.Error("a light probe got the heavy timeout")
	}
}

// ownTimeout is a light probe that declares a timeout of its own, and
// reports how far its context's deadline is.
type ownTimeout struct{ deadlines }

func (o *ownTimeout) Desc() probe.Desc {
	return probe.Desc{Name: "own_timeout", Version: "1", Heaviness: probe.Light, CacheStrategy: probe.CacheNone,
		Timeout: time.Hour, NewFacts: func() any { return new(readFacts) }}
}

// TestDescriptorTimeout: a light probe's own Timeout applies when the run
// sets none (gather without --light-timeout: the child_process scan of a
// large dependency tree gets its 10 minutes), and the run's setting wins
// when it is given.
func TestDescriptorTimeout(t *testing.T) {
	repo := repoWith(t, map[string]string{"package.json": "{}"})
	o := &ownTimeout{}
	p := newPipeline(t, false, o)
	if _, err := p.Run(t.Context(), repo, &probe.Context{}); err != nil {
		t.Fatal(err)
	}
	if !o.far.Load() {
		t.Error("the probe's own timeout did not apply when the run set none")
	}
	p.LightTimeout = time.Second
	if _, err := p.Run(t.Context(), mustReopen(t, repo), &probe.Context{}); err != nil {
		t.Fatal(err)
	}
	if o.far.Load() {
		t.Error("the run's --light-timeout did not win over the probe's own")
	}
}
