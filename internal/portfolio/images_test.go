package portfolio

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// TestImageTotals sums the images of synthetic migrations: only services
// with both images measured count in the sums; one whose original did not
// build is unknown; one with no gates is in neither.
func TestImageTotals(t *testing.T) {
	t.Parallel()
	facts := func(bytes int64, pkgs, setuid int, shell bool) *sandbox.ImageFacts {
		f := &sandbox.ImageFacts{Bytes: bytes, Layers: 3, Packages: pkgs, PackageDBs: []string{sandbox.PackageDBDpkg}, SetuidCount: setuid}
		if shell {
			f.ShellCount, f.Shells = 1, []sandbox.Shell{{Path: "/bin/sh", Target: "dash"}}
		}
		return f
	}
	rec := func(id string, m *Migration) Record {
		return Record{Service: Service{ID: id, Repo: id, Dockerfile: "Dockerfile", Context: "."}, State: StateDone,
			Result: &Result{Verdict: probe.ReadyAfterRewrite}, Migration: m}
	}
	var recs []Record
	// 40 services of about 1 GB and 410 packages each, moved to 200 MB
	// and 27 packages.
	for i := range 40 {
		recs = append(recs, rec(string(rune('a'+i%26))+string(rune('0'+i/26)), &Migration{Migrated: i%4 != 0, Proven: i%4 != 0,
			Images: &report.ImageChange{Before: facts(1_025_000_000, 410, 3, true), After: facts(197_500_000, 27, 0, false)}}))
	}
	recs = append(recs,
		rec("alpine", &Migration{Images: &report.ImageChange{BeforeUnknown: "the image was not built here", After: facts(131_000_000, 9, 0, false)}}),
		rec("nogates", &Migration{Patch: "x"}),
		Record{Service: Service{ID: "static-only"}, State: StateDone, Result: &Result{Verdict: probe.Ready}},
	)
	d := NewDocument("test", "static+sandbox", time.Unix(0, 0), recs)
	want := &ImageTotals{Services: 40, Migrated: 30, Unknown: 1,
		BytesBefore: 41_000_000_000, BytesAfter: 7_900_000_000, PackagesBefore: 16_400, PackagesAfter: 1_080,
		SetuidBefore: 120, ShellBefore: 40,
		Summary: "40 services (30 migrated): 41 GB → 7.9 GB, 16,400 → 1,080 OS packages, 120 → 0 setuid/setgid files, a shell in 40 → 0; 1 more service with an image unknown (not built here)"}
	if diff := cmp.Diff(want, d.Totals.Images); diff != "" {
		t.Errorf("image totals (-want +got):\n%s", diff)
	}
	// portfolio.json keeps them, and reads back strictly.
	var buf bytes.Buffer
	if err := d.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeDocument(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back.Totals.Images); diff != "" {
		t.Errorf("image totals read back (-want +got):\n%s", diff)
	}
	if m := back.Services[40].Migration; m == nil || m.Images == nil || m.Images.Before != nil || m.Images.BeforeUnknown == "" {
		t.Errorf("the unknown original read back as %+v; want unknown with its reason", m)
	}

	// No migration with gates: no image totals at all.
	if d := NewDocument("test", "static", time.Unix(0, 0), recs[41:]); d.Totals.Images != nil {
		t.Errorf("totals %+v; want none", d.Totals.Images)
	}
}
