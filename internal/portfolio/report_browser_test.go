package portfolio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
)

const chromiumPath = "/usr/bin/chromium"

// waitLimit bounds every wait for the page in these tests. It is minutes:
// it only ends a test that would otherwise hang, and never decides one
// that a slow machine would pass.
const waitLimit = 3 * time.Minute

// consoleMark is what consoleErrors writes to the console to know that
// every message before it has arrived.
const consoleMark = "codegenie-test: the console is read up to here"

// browser starts headless Debian chromium (never a downloaded one) with the
// flags this machine needs, and collects the page's console errors.
// consoleErrors returns those written so far: it writes a mark to the
// console and waits for it, since the messages arrive in order.
func browser(t *testing.T) (ctx context.Context, consoleErrors func() []string) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("%s is missing (scripts/setup.sh installs Debian's chromium): %v", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		// Its singleton socket folder goes under TMPDIR, and a killed
		// browser leaves it there: keep it in the test's folder.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// Start the browser with a blank page, then subscribe before any report
	// loads, so that no message is lost.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	var mu sync.Mutex
	var errs []string
	lctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	messages := chromedp.Console(lctx)
	marks := make(chan struct{}, 1)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			switch {
			case m.Type == chromedp.ConsoleLog && m.Text == consoleMark:
				marks <- struct{}{}
			case m.Type == chromedp.ConsoleError || m.IsException():
				mu.Lock()
				errs = append(errs, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		t.Helper()
		eval[chromedp.Void](t, ctx, fmt.Sprintf("console.log(%q)", consoleMark))
		select {
		case <-marks:
		case <-time.After(waitLimit):
			t.Fatalf("waited %v for the console message the test wrote", waitLimit)
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// rendered runs action, which makes the report render its rows again
// (the filter's input, which waits for typing to stop), and waits until
// the rows have been replaced.
func rendered(t *testing.T, ctx context.Context, action string) {
	t.Helper()
	eval[chromedp.Void](t, ctx, `(function(){window.cgRenders=0; new MutationObserver(function(){window.cgRenders++;}).observe(document.getElementById("rows"), {childList: true});})()`)
	eval[chromedp.Void](t, ctx, action)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.cgRenders > 0`, chromedp.WithPollingTimeout(waitLimit))); err != nil {
		t.Fatalf("waiting for the rows to render again after %s: %v", action, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// generated runs a synthetic portfolio through the real pipeline (static
// tier) and writes its outputs.
func generated(t *testing.T, n int) (string, *Document) {
	t.Helper()
	_, ss := services(t, n)
	out := t.TempDir()
	st, err := OpenStore(filepath.Join(out, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Store: st, Options: gather.Options{Registry: builtin.NewRegistry(), Version: "test", Task: "distroless-migration", Cache: c}}
	recs, _, err := r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDocument("test", "static", time.Now(), recs)
	if err := WriteOutputs(out, st, d); err != nil {
		t.Fatal(err)
	}
	return out, d
}

func TestReportInBrowser(t *testing.T) {
	out, _ := generated(t, 15)
	f, err := os.Open(filepath.Join(out, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := DecodeDocument(f)
	if err != nil {
		t.Fatal(err)
	}
	ctx, consoleErrors := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(out, HTMLFile)), chromedp.WaitVisible(chromedp.CSS("#rows tr.service"))); err != nil {
		t.Fatal(err)
	}

	// The DOM's counts are portfolio.json's.
	if got := eval[int](t, ctx, `document.querySelectorAll("#rows tr.service").length`); got != len(d.Services) {
		t.Errorf("%d rows, want %d services", got, len(d.Services))
	}
	if got := eval[string](t, ctx, `document.querySelector("#total-services b").textContent`); got != fmt.Sprint(d.Totals.Services) {
		t.Errorf("total %s, want %d", got, d.Totals.Services)
	}
	for _, v := range []probe.Verdict{probe.Ready, probe.ReadyAfterRewrite, probe.Blocked, probe.Unknown} {
		got := eval[string](t, ctx, fmt.Sprintf(`document.querySelector("#verdict-%s b").textContent`, v))
		if got != fmt.Sprint(d.Totals.ByVerdict[string(v)]) {
			t.Errorf("%s card says %s, want %d", v, got, d.Totals.ByVerdict[string(v)])
		}
	}
	if got := eval[int](t, ctx, `document.querySelectorAll("#chart .bar-row").length`); got != len(d.Blockers) {
		t.Errorf("%d chart rows, want %d blocker kinds", got, len(d.Blockers))
	}
	if len(d.Blockers) == 0 {
		t.Fatal("the generated portfolio has no blockers: it exercises nothing")
	}
	k := d.Blockers[0]
	want := fmt.Sprintf("blocks %d; fixing it unblocks %d service", k.Services, k.Unblocks)
	if got := eval[string](t, ctx, fmt.Sprintf(`document.querySelector('#chart [data-kind=%q] .unblocks-text').textContent`, k.Kind)); !strings.HasPrefix(got, want) {
		t.Errorf("chart says %q, want %q", got, want)
	}

	// Filtering by verdict, then by text.
	blocked := d.Totals.ByVerdict[string(probe.Blocked)] + d.Totals.ByVerdict[string(probe.ReadyAfterRewrite)]
	eval[chromedp.Void](t, ctx, `(function(){var s=document.getElementById("verdict"); s.value="blocked"; s.dispatchEvent(new Event("change"));})()`)
	if got := eval[int](t, ctx, `document.querySelectorAll("#rows tr.service").length`); got != d.Totals.ByVerdict["blocked"] {
		t.Errorf("filtered to blocked: %d rows, want %d", got, d.Totals.ByVerdict["blocked"])
	}
	eval[chromedp.Void](t, ctx, `(function(){var s=document.getElementById("verdict"); s.value=""; s.dispatchEvent(new Event("change"));})()`)
	first := ""
	for _, e := range d.Services {
		if len(e.Blockers) > 0 && e.Blockers[0].Evidence != nil && e.Blockers[0].Evidence[0].File != "" {
			first = e.ID
			break
		}
	}
	if first == "" || blocked == 0 {
		t.Fatal("no service with file evidence to drill into")
	}
	rendered(t, ctx, fmt.Sprintf(`(function(){var f=document.getElementById("filter"); f.value=%q; f.dispatchEvent(new Event("input"));})()`, first))
	ids := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#rows tr.service")).map(function(r){return r.dataset.id})`)
	if len(ids) == 0 || ids[0] != first {
		t.Errorf("filtered to %q: rows %v", first, ids)
	}

	// The drill-down shows the evidence with file:line and the fix.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#rows tr.service[data-id=%q]`, first)))); err != nil {
		t.Fatal(err)
	}
	var svc Entry
	for _, e := range d.Services {
		if e.ID == first {
			svc = e
		}
	}
	ev := svc.Blockers[0].Evidence[0]
	text := eval[string](t, ctx, `document.querySelector("#rows tr.detail").textContent`)
	for _, want := range []string{fmt.Sprintf("%s:%d", ev.File, ev.Line), svc.Blockers[0].Title} {
		if !strings.Contains(text, want) {
			t.Errorf("drill-down lacks %q:\n%s", want, text)
		}
	}
	if svc.Blockers[0].Fix != "" && !strings.Contains(text, "Fix: "+svc.Blockers[0].Fix) {
		t.Errorf("drill-down lacks the fix %q", svc.Blockers[0].Fix)
	}

	// Sorting by blockers, descending.
	rendered(t, ctx, `(function(){var f=document.getElementById("filter"); f.value=""; f.dispatchEvent(new Event("input"));})()`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`th[data-key=nblockers]`)), chromedp.Click(chromedp.CSS(`th[data-key=nblockers]`))); err != nil {
		t.Fatal(err)
	}
	counts := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#rows tr.service td:nth-child(7)")).map(function(c){return c.textContent})`)
	for i := 1; i < len(counts); i++ {
		if len(counts[i]) > len(counts[i-1]) || len(counts[i]) == len(counts[i-1]) && counts[i] > counts[i-1] {
			t.Errorf("not sorted by blockers, descending: %v", counts)
			break
		}
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(t.TempDir(), "report.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", png, len(shot))
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestReportFastWithManyServices renders a report of 1,000 synthetic
// services, each with trace and file evidence, and times the first render
// and a filter. The times are logged, not judged (measured: half a
// second and tens of ms; the aim is under 5 s and 500 ms): a test that a
// slow machine fails proves nothing about the report.
func TestReportFastWithManyServices(t *testing.T) {
	recs := make([]Record, 1000)
	kinds := []probe.BlockerKind{probe.ShellAtRuntime, probe.MissingBinary, probe.NativeABI, probe.ShellInFinalStageBuild}
	for i := range recs {
		s := Service{ID: fmt.Sprintf("repo-%04d:Dockerfile#runtime", i), Repo: fmt.Sprintf("https://git.example/repo-%04d.git", i), Dockerfile: "Dockerfile", Target: "runtime", Context: "."}
		res := &Result{Verdict: probe.Ready}
		if i%3 != 0 {
			res.Verdict = probe.Blocked
			for j := range 1 + i%4 {
				res.Blockers = append(res.Blockers, probe.Blocker{ID: "x", Kind: kinds[j], Title: "<b>shell</b> </script> in " + s.ID, Fix: "use exec form",
					Evidence: []probe.Evidence{{File: "Dockerfile", Line: 3 + j}, {Trace: &probe.TraceRef{Phase: "boot", PID: 7, Index: j}, Note: "sh -c"}}})
			}
		}
		recs[i] = Record{Service: s, State: StateDone, Result: res, Timings: Timings{StaticMS: float64(i % 50)}}
	}
	d := NewDocument("test", "static+sandbox", time.Now(), recs)
	out := t.TempDir()
	st, err := OpenStore(filepath.Join(out, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := WriteOutputs(out, st, d); err != nil {
		t.Fatal(err)
	}
	ctx, consoleErrors := browser(t)
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(out, HTMLFile)), chromedp.WaitVisible(chromedp.CSS("#rows tr.service"))); err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	if got := eval[int](t, ctx, `document.querySelectorAll("#rows tr.service").length`); got != 1000 {
		t.Errorf("%d rows, want 1000", got)
	}
	ms := eval[float64](t, ctx, `(function(){var t0=performance.now(); var s=document.getElementById("verdict"); s.value="blocked"; s.dispatchEvent(new Event("change")); return performance.now()-t0;})()`)
	t.Logf("1,000 services: load and first render %s, a filter %.1f ms (aim: under 5 s and 500 ms)", load.Round(time.Millisecond), ms)
	if got := eval[int](t, ctx, `document.querySelectorAll("#rows tr.service").length`); got != 666 {
		t.Errorf("filtered to blocked: %d rows, want 666", got)
	}
	// The hostile titles are text, not markup.
	if n := eval[int](t, ctx, `document.querySelectorAll("#rows b, script:not([id=data])").length`); n != 1 {
		t.Errorf("%d b or script elements, want just the report's script: a title became markup", n)
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestReportShowsMigration: a service's drill-down shows its migration,
// its gates and its patch, as text.
func TestReportShowsMigration(t *testing.T) {
	patch := "--- a/Dockerfile\n+++ b/Dockerfile\n@@ -1 +1 @@\n-FROM node:22\n+FROM gcr.io/distroless/nodejs22-debian13 </script><b>x</b>\n"
	s := Service{ID: "shop:Dockerfile", Repo: "shop", Dockerfile: "Dockerfile", Context: "."}
	rec := Record{Service: s, State: StateDone, Result: &Result{Verdict: probe.ReadyAfterRewrite},
		Migration: &Migration{Patch: patch, Migrated: true, Proven: true, Gates: []GateOutcome{{Gate: "no_shell", Status: "passed", Detail: "no shell"}},
			Images: &report.ImageChange{
				Before: &sandbox.ImageFacts{Bytes: 316_000_000, Layers: 9, Packages: 1065, PackageDBs: []string{"dpkg"}, SetuidCount: 1, Setuid: []string{"/bin/su"},
					ShellCount: 1, Shells: []sandbox.Shell{{Path: "/bin/sh", Target: "</script><b>dash</b>"}}},
				After: &sandbox.ImageFacts{Bytes: 211_000_000, Layers: 4, Packages: 16, PackageDBs: []string{"dpkg"}},
			}}}
	d := NewDocument("test", "static+sandbox", time.Now(), []Record{rec})
	if d.Totals.Migrated != 1 || d.Services[0].Patch == "" {
		t.Fatalf("document: migrated %d, patch %q", d.Totals.Migrated, d.Services[0].Patch)
	}
	out := t.TempDir()
	st, err := OpenStore(filepath.Join(out, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := WriteOutputs(out, st, d); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, d.Services[0].Patch)); err != nil || string(b) != patch {
		t.Fatalf("patch file: %v %q", err, b)
	}
	ctx, consoleErrors := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(out, HTMLFile)), chromedp.WaitVisible(chromedp.CSS("#rows tr.service")),
		chromedp.Click(chromedp.CSS("#rows tr.service")), chromedp.WaitVisible(chromedp.CSS("pre.diff"))); err != nil {
		t.Fatal(err)
	}
	if got := eval[string](t, ctx, `document.querySelector("pre.diff").textContent`); got != patch {
		t.Errorf("diff shown %q, want the patch", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("li.gate-passed").textContent`); !strings.Contains(got, "no_shell passed") {
		t.Errorf("gate shown %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#total-migrated b").textContent`); got != "1" {
		t.Errorf("migrated total %q, want 1", got)
	}
	for sel, want := range map[string]string{
		"#total-image-size b":                        "316 MB → 211 MB",
		"#total-image-packages b":                    "1,065 → 16",
		"#images-summary":                            "1 service (1 migrated): 316 MB → 211 MB, 1,065 → 16 OS packages",
		".images-table tr[data-fact=size]":           "size316 MB211 MB",
		".images-table tr[data-fact=shells] .before": "1 (/bin/sh -> </script><b>dash</b>)",
		".images-table tr[data-fact=shells] .after":  "none",
	} {
		if got := eval[string](t, ctx, `document.querySelector("`+strings.ReplaceAll(sel, `"`, `\"`)+`").textContent`); !strings.Contains(got, want) {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("pre.diff b").length`); n != 0 {
		t.Error("the patch became markup")
	}
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
