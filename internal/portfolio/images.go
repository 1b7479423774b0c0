package portfolio

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/internal/report"
)

// ImageTotals sum what the migrations do to the images that ship, over the
// services whose original and rewritten images were both measured by the
// gates' builds.
type ImageTotals struct {
	// Services counts the services measured, before and after; Migrated
	// those of them whose migration every gate proved. The sums are over
	// the Services.
	Services int `json:"services"`
	Migrated int `json:"migrated"`
	// Unknown counts the services whose gates ran but left an image
	// unmeasured (the original does not build here, say): they are in no
	// sum.
	Unknown int `json:"unknown"`
	// BytesBefore and BytesAfter sum the images' uncompressed sizes.
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
	// PackagesBefore and PackagesAfter sum their OS packages.
	PackagesBefore int `json:"packages_before"`
	PackagesAfter  int `json:"packages_after"`
	// SetuidBefore and SetuidAfter sum their setuid and setgid files.
	SetuidBefore int `json:"setuid_before"`
	SetuidAfter  int `json:"setuid_after"`
	// ShellBefore and ShellAfter count the services whose image has a
	// shell.
	ShellBefore int `json:"shell_before"`
	ShellAfter  int `json:"shell_after"`
	// Summary says it in a line: "40 services: 41 GB → 7.9 GB, 16,400 →
	// 1,100 OS packages, ...".
	Summary string `json:"summary"`
}

// imageTotals sums the images of the entries' migrations; nil when no
// migration's gates reported images.
func imageTotals(entries []Entry) *ImageTotals {
	var t ImageTotals
	seen := false
	for _, e := range entries {
		m := e.Migration
		if m == nil || m.Images == nil {
			continue
		}
		seen = true
		b, a := m.Images.Before, m.Images.After
		if !report.Sized(b) || !report.Sized(a) {
			t.Unknown++
			continue
		}
		t.Services++
		if m.Migrated {
			t.Migrated++
		}
		t.BytesBefore += b.Bytes
		t.BytesAfter += a.Bytes
		t.PackagesBefore += b.Packages
		t.PackagesAfter += a.Packages
		t.SetuidBefore += b.SetuidCount
		t.SetuidAfter += a.SetuidCount
		if b.ShellCount > 0 {
			t.ShellBefore++
		}
		if a.ShellCount > 0 {
			t.ShellAfter++
		}
	}
	if !seen {
		return nil
	}
	t.Summary = t.summary()
	return &t
}

// summary is the totals in a line.
func (t *ImageTotals) summary() string {
	var s strings.Builder
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	if t.Services > 0 {
		fmt.Fprintf(&s, "%d %s (%d migrated): %s → %s, %s → %s OS packages, %s → %s setuid/setgid files, a shell in %d → %d",
			t.Services, plural(t.Services, "service", "services"), t.Migrated,
			report.Bytes(t.BytesBefore), report.Bytes(t.BytesAfter),
			report.Count(t.PackagesBefore), report.Count(t.PackagesAfter),
			report.Count(t.SetuidBefore), report.Count(t.SetuidAfter), t.ShellBefore, t.ShellAfter)
	} else {
		s.WriteString("no service had both images measured")
	}
	if t.Unknown > 0 {
		fmt.Fprintf(&s, "; %d more %s an image unknown (not built here)", t.Unknown, plural(t.Unknown, "service with", "services with"))
	}
	return s.String()
}
