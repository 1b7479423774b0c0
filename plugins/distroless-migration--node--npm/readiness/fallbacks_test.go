package readiness

import (
	"strings"
	"testing"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
)

// TestFallbacksTable: a dependency's call matches an entry only in the
// package, versions, file and functions it names, and a malformed entry
// is refused with what is wrong.
func TestFallbacksTable(t *testing.T) {
	t.Parallel()
	base := childprocess.Finding{File: "node_modules/detect-libc/lib/detect-libc.js", Line: 19, Function: "exec", Kind: childprocess.KindShell,
		Origin: childprocess.OriginDependency, Package: "detect-libc", PackageVersion: "2.0.3", Scope: childprocess.ScopeReachable}
	for _, tc := range []struct {
		name string
		edit func(*childprocess.Finding)
		want bool
	}{
		{"detect-libc 2.0.3 exec", func(*childprocess.Finding) {}, true},
		{"execSync", func(f *childprocess.Finding) { f.Function = "execSync" }, true},
		{"nested copy", func(f *childprocess.Finding) {
			f.File = "node_modules/node-gyp-build-optional-packages/node_modules/detect-libc/lib/detect-libc.js"
		}, true},
		{"2.1.2", func(f *childprocess.Finding) { f.PackageVersion = "2.1.2" }, true},
		{"1.0.3 runs getconf first", func(f *childprocess.Finding) { f.PackageVersion = "1.0.3"; f.Function = "spawnSync" }, false},
		{"3.0.0 is unread", func(f *childprocess.Finding) { f.PackageVersion = "3.0.0" }, false},
		{"no version", func(f *childprocess.Finding) { f.PackageVersion = "" }, false},
		{"another file", func(f *childprocess.Finding) { f.File = "node_modules/detect-libc/bin/x.js" }, false},
		{"another function", func(f *childprocess.Finding) { f.Function = "spawn" }, false},
		{"the app's own", func(f *childprocess.Finding) { f.Origin = childprocess.OriginApp }, false},
		{"a package of the same file name", func(f *childprocess.Finding) {
			f.Package, f.File = "not-detect-libc", "node_modules/not-detect-libc/lib/detect-libc.js"
		}, false},
	} {
		fd := base
		tc.edit(&fd)
		if _, got := knownFallback(fd); got != tc.want {
			t.Errorf("%s: known fallback %v, want %v", tc.name, got, tc.want)
		}
	}
	// google-auth-library's gcloud call, the file's only one (the scan of a
	// dependency may not record its command), in the releases read.
	gal := childprocess.Finding{File: "node_modules/google-auth-library/build/src/auth/googleauth.js", Line: 569, Function: "exec", Kind: childprocess.KindShell,
		Origin: childprocess.OriginDependency, Package: "google-auth-library", PackageVersion: "9.14.1", Scope: childprocess.ScopeReachable}
	for _, tc := range []struct {
		name string
		edit func(*childprocess.Finding)
		want bool
	}{
		{"9.14.1", func(*childprocess.Finding) {}, true},
		{"11.3.4", func(f *childprocess.Finding) { f.PackageVersion = "11.3.4" }, true},
		{"8.9.0 is unread", func(f *childprocess.Finding) { f.PackageVersion = "8.9.0" }, false},
		{"11.4.0 is unread", func(f *childprocess.Finding) { f.PackageVersion = "11.4.0" }, false},
		{"another function", func(f *childprocess.Finding) { f.Function = "execSync" }, false},
		{"another file", func(f *childprocess.Finding) {
			f.File = "node_modules/google-auth-library/build/src/auth/pluggable-auth-handler.js"
		}, false},
	} {
		fd := gal
		tc.edit(&fd)
		if _, got := knownFallback(fd); got != tc.want {
			t.Errorf("google-auth-library %s: known fallback %v, want %v", tc.name, got, tc.want)
		}
	}
	// node-pre-gyp's install-time commands: loaded only when the CLI runs one.
	for _, tc := range []struct {
		file, fn, version string
		want              bool
	}{
		{"lib/testbinary.js", "execFile", "1.0.11", true},
		{"lib/util/compile.js", "spawn", "2.0.3", true},
		{"lib/util/compile.js", "spawn", "1.0.0", true},
		{"lib/util/compile.js", "spawn", "2.0.4", false},
		{"lib/testbinary.js", "spawn", "1.0.11", false},
		{"lib/main.js", "execFile", "1.0.11", false},
	} {
		fd := childprocess.Finding{File: "node_modules/@mapbox/node-pre-gyp/" + tc.file, Function: tc.fn, Kind: childprocess.KindMaybeShell,
			Origin: childprocess.OriginDependency, Package: "@mapbox/node-pre-gyp", PackageVersion: tc.version, Scope: childprocess.ScopeUnresolved}
		if _, got := knownFallback(fd); got != tc.want {
			t.Errorf("node-pre-gyp %s %s %s: known fallback %v, want %v", tc.version, tc.file, tc.fn, got, tc.want)
		}
	}
	for _, tc := range []struct{ name, json, want string }{
		{"no source", `{"fallbacks":[{"package":"a","file":"x.js","functions":["exec"],"why":"w","says":"s"}]}`, "a source"},
		{"no why", `{"fallbacks":[{"package":"a","file":"x.js","functions":["exec"],"source":"https://x","says":"s"}]}`, "why"},
		{"no functions", `{"fallbacks":[{"package":"a","file":"x.js","why":"w","source":"https://x","says":"s"}]}`, "the functions"},
		{"bad range", `{"fallbacks":[{"package":"a","versions":"~2","file":"x.js","functions":["exec"],"why":"w","source":"https://x","says":"s"}]}`, "comparison"},
		{"unknown field", `{"fallbacks":[{"package":"a","line":3,"file":"x.js","functions":["exec"],"why":"w","source":"https://x","says":"s"}]}`, "unknown field"},
	} {
		if _, err := parseFallbacks([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error that says %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		r, v string
		want bool
	}{
		{">=2.0.0 <3.0.0", "2.0.0", true}, {">=2.0.0 <3.0.0", "3.0.0", false}, {">=2.0.0 <3.0.0", "2.1.0-rc.0", true},
		{">1.2", "1.2.1", true}, {"<=1.2.3", "1.2.4", false}, {"=1.0.0", "1.0.0", true}, {"", "9.9.9", true}, {">=1", "x", false},
	} {
		r, err := parseRange(tc.r)
		if err != nil {
			t.Fatalf("parseRange(%q): %v", tc.r, err)
		}
		if got := r.holds(tc.v); got != tc.want {
			t.Errorf("%q holds %q = %v, want %v", tc.r, tc.v, got, tc.want)
		}
	}
}
