package readiness

import (
	"strings"
	"testing"
)

// TestWrappersTable: the table holds the wrappers issue 21 names, each
// with a source, and a malformed entry is refused with what is wrong.
func TestWrappersTable(t *testing.T) {
	t.Parallel()
	for pkg, want := range map[string]string{
		"fluent-ffmpeg": "ffmpeg ffprobe", "exiftool-vendored": "perl ps", "serialport": "udevadm",
		"simple-git": "git", "puppeteer": "chromium chromium-browser",
	} {
		w, ok := wrappersByPackage[pkg]
		if !ok || strings.Join(w.Programs, " ") != want {
			t.Errorf("%s runs %v, want %s", pkg, w.Programs, want)
		}
	}
	if w := wrappersByPackage["sharp"]; strings.Join(w.Bundled, " ") != "libvips" || len(w.Programs) > 0 {
		t.Errorf("sharp: %+v, want libvips bundled and no program", w)
	}
	for _, tc := range []struct{ name, json, want string }{
		{"no source", `{"wrappers":[{"package":"a","programs":["x"],"says":"s"}]}`, "a source"},
		{"twice", `{"wrappers":[{"package":"a","programs":["x"],"source":"https://x","says":"s"},{"package":"a","programs":["x"],"source":"https://x","says":"s"}]}`, "twice"},
		{"unknown field", `{"wrappers":[{"package":"a","program":["x"],"source":"https://x","says":"s"}]}`, "unknown field"},
		{"nothing named", `{"wrappers":[{"package":"a","source":"https://x","says":"s"}]}`, "names no program"},
	} {
		if _, err := parseWrappers([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error that says %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range [][2]string{{"libvips-dev", "vips"}, {"libvips42", "vips"}, {"vips-dev", "vips"}, {"libgs10", "gs"}} {
		if got := libraryStem(tc[0]); got != tc[1] {
			t.Errorf("libraryStem(%s) = %s, want %s", tc[0], got, tc[1])
		}
	}
}
