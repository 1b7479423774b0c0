package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// ImageChange is what a migration does to the image that ships: the facts
// of the original image and of the rewritten one, as the gates' builds
// read them (sandbox.ImageFacts).
type ImageChange struct {
	// Before are the original image's facts; nil when they are unknown
	// (never zeros), and BeforeUnknown says why: it did not build here,
	// say.
	Before        *sandbox.ImageFacts `json:"before"`
	BeforeUnknown string              `json:"before_unknown,omitempty"`
	// After are the rewritten image's facts; nil when unknown, and
	// AfterUnknown says why.
	After        *sandbox.ImageFacts `json:"after"`
	AfterUnknown string              `json:"after_unknown,omitempty"`
}

// Sized reports whether f has a known size: it is not nil, and its
// layers were read.
func Sized(f *sandbox.ImageFacts) bool { return f != nil && f.Layers > 0 }

// Lines say the change for a person, one fact a line, each "name  before
// → after", then why a side is unknown or incomplete.
func (c *ImageChange) Lines() []string {
	size := func(f *sandbox.ImageFacts) string {
		if !Sized(f) {
			return "unknown"
		}
		return Bytes(f.Bytes)
	}
	layers := func(f *sandbox.ImageFacts) string {
		if !Sized(f) {
			return "unknown"
		}
		return strconv.Itoa(f.Layers)
	}
	packages := func(f *sandbox.ImageFacts) string {
		switch {
		case f == nil:
			return "unknown"
		case len(f.PackageDBs) == 0:
			return "0 (no package database)"
		}
		return Count(f.Packages) + " (" + strings.Join(f.PackageDBs, ", ") + ")"
	}
	setuid := func(f *sandbox.ImageFacts) string {
		if f == nil {
			return "unknown"
		}
		return listed(f.SetuidCount, f.Setuid, 3)
	}
	shells := func(f *sandbox.ImageFacts) string {
		if f == nil {
			return "unknown"
		}
		var names []string
		for _, s := range f.Shells {
			if s.Target != "" {
				names = append(names, s.Path+" -> "+s.Target)
			} else {
				names = append(names, s.Path)
			}
		}
		return listed(f.ShellCount, names, 4)
	}
	rows := []struct {
		name string
		fn   func(*sandbox.ImageFacts) string
	}{{"size", size}, {"layers", layers}, {"OS packages", packages}, {"setuid/setgid", setuid}, {"shells", shells}}
	var out []string
	for _, r := range rows {
		b, a := r.fn(c.Before), r.fn(c.After)
		line := fmt.Sprintf("%-14s %s → %s", r.name, b, a)
		if r.name == "size" && Sized(c.Before) && Sized(c.After) && c.Before.Bytes > 0 {
			line += fmt.Sprintf(" (%+.0f%%)", 100*float64(c.After.Bytes-c.Before.Bytes)/float64(c.Before.Bytes))
		}
		out = append(out, line)
	}
	for _, side := range []struct {
		name, unknown string
		f             *sandbox.ImageFacts
	}{{"original", c.BeforeUnknown, c.Before}, {"rewritten", c.AfterUnknown, c.After}} {
		switch {
		case side.f == nil && side.unknown != "":
			out = append(out, fmt.Sprintf("the %s image's facts are unknown: %s", side.name, side.unknown))
		case side.f == nil:
			out = append(out, fmt.Sprintf("the %s image's facts are unknown", side.name))
		case side.f.Incomplete != "":
			out = append(out, fmt.Sprintf("the %s image's facts are incomplete: %s", side.name, side.f.Incomplete))
		}
	}
	return out
}

// listed is n, then the first max of names in parentheses, "none" for 0.
func listed(n int, names []string, max int) string {
	if n == 0 {
		return "none"
	}
	s := strconv.Itoa(n)
	if len(names) == 0 {
		return s
	}
	shown := names[:min(len(names), max)]
	more := ""
	if n > len(shown) {
		more = fmt.Sprintf(", %d more", n-len(shown))
	}
	return s + " (" + strings.Join(shown, ", ") + more + ")"
}

// Bytes writes n bytes in decimal units, as image tools do: "512 B",
// "7.9 MB", "146 MB", "41 GB".
func Bytes(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	v, u := float64(n), 0
	for (v >= 999.5 || v <= -999.5) && u < len(units)-1 {
		v /= 1000
		u++
	}
	switch {
	case u == 0:
		return fmt.Sprintf("%d B", n)
	case v < 9.95 && v > -9.95:
		return fmt.Sprintf("%.1f %s", v, units[u])
	}
	return fmt.Sprintf("%.0f %s", v, units[u])
}

// Count writes n with a comma between thousands: "16,400".
func Count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
