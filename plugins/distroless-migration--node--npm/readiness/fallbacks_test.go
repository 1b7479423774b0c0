package readiness

import (
	"slices"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
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
		{"any package, no shape", `{"fallbacks":[{"package":"*","functions":["exec"],"why":"w","source":"https://x","says":"s"}]}`, "must name a shape"},
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
		{">=2.0.0 <3.0.0", "2.0.0", true}, {">=2.0.0 <3.0.0", "3.0.0", false}, {">=2.0.0 <3.0.0", "2.1.0-rc.0", false}, {">=2.0.0 <3.0.0", "2.1.0+build.5", true},
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

// TestOptInCalls: a dependency's call that runs only when the deployment
// turns it on (google-gax's certificate provider, google-auth-library's
// pluggable auth: both made microservices-demo's services unknown) is a
// note that names the condition, unless the image's ENV turns it on; then
// it is judged like any call, and its evidence says why.
func TestOptInCalls(t *testing.T) {
	t.Parallel()
	gax := childprocess.Finding{File: "node_modules/google-gax/build/src/grpc.js", Line: 61, Function: "execFile", Kind: childprocess.KindDynamic,
		Origin: childprocess.OriginDependency, Package: "google-gax", PackageVersion: "4.4.1", Scope: childprocess.ScopeReachable,
		Chain: []string{"server.js:33", "node_modules/google-gax/build/src/grpc.js:61"}}
	auth := childprocess.Finding{File: "node_modules/google-auth-library/build/src/auth/pluggable-auth-handler.js", Line: 51, Function: "spawn", Kind: childprocess.KindDynamic,
		Origin: childprocess.OriginDependency, Package: "google-auth-library", PackageVersion: "9.14.1", Scope: childprocess.ScopeReachable}
	old := auth
	old.PackageVersion = "8.1.0" // before pluggable auth: not read, so not known
	for _, tc := range []struct {
		name, env    string
		findings     []childprocess.Finding
		wantBlockers int
		wantOptIn    int
		wantNote     string
	}{
		{"the image turns neither on", "", []childprocess.Finding{gax, auth}, 0, 2, "GOOGLE_API_USE_CLIENT_CERTIFICATE=true and a context-aware"},
		{"the image allows executables", "ENV GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1\n", []childprocess.Finding{gax, auth}, 1, 1, "the image's ENV sets GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1, which turns it on"},
		{"another value does not", "ENV GOOGLE_API_USE_CLIENT_CERTIFICATE=false\n", []childprocess.Finding{gax}, 0, 1, ""},
		{"a version not read", "", []childprocess.Finding{old}, 1, 0, ""},
	} {
		d, err := dockerfile.Parse("Dockerfile", []byte("FROM node:22\nWORKDIR /app\n"+tc.env+"COPY . .\nCMD [\"node\", \"server.js\"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		b := &builder{judged: d}
		b.childProcess(&childprocess.Facts{Findings: tc.findings})
		if len(b.blockers) != tc.wantBlockers {
			t.Errorf("%s: %d blockers, want %d: %+v", tc.name, len(b.blockers), tc.wantBlockers, b.blockers)
		}
		optIn := 0
		for _, n := range b.notes {
			if n.ID == NoteOptIn {
				optIn = len(n.Evidence)
				if tc.wantNote != "" && !strings.Contains(n.Message, tc.wantNote) && tc.wantBlockers == 0 {
					t.Errorf("%s: note %q does not say %q", tc.name, n.Message, tc.wantNote)
				}
			}
		}
		if optIn != tc.wantOptIn {
			t.Errorf("%s: %d opt-in calls noted, want %d", tc.name, optIn, tc.wantOptIn)
		}
		if tc.wantBlockers > 0 && tc.wantNote != "" && !strings.Contains(b.blockers[0].Evidence[0].Note, tc.wantNote) {
			t.Errorf("%s: evidence %q does not say %q", tc.name, b.blockers[0].Evidence[0].Note, tc.wantNote)
		}
	}
	// The AWS SDK's credential_process (Ackee's and outline's blocker), in
	// each of its builds' files; a profile named in ENV turns it on.
	for _, tc := range []struct {
		file, version, env string
		want               bool
	}{
		{"dist-cjs/resolveProcessCredentials.js", "3.226.0", "", true},
		{"dist-cjs/index.js", "3.972.69", "", true},
		{"dist-es/resolveProcessCredentials.js", "3.972.69", "", true},
		{"dist-cjs/index.js", "3.972.69", "AWS_PROFILE=ci", false},
		{"dist-cjs/fromProcess.js", "3.972.69", "", false},
		{"dist-cjs/index.js", "3.973.0", "", false},
	} {
		fd := childprocess.Finding{File: "node_modules/@aws-sdk/credential-provider-process/" + tc.file, Line: 41, Function: "exec", Kind: childprocess.KindShell,
			Origin: childprocess.OriginDependency, Package: "@aws-sdk/credential-provider-process", PackageVersion: tc.version, Scope: childprocess.ScopeReachable}
		fb, known := knownFallback(fd)
		_, on := fb.enabledIn(map[string]string{"AWS_PROFILE": strings.TrimPrefix(tc.env, "AWS_PROFILE=")})
		if got := known && (tc.env == "" || !on); got != tc.want {
			t.Errorf("aws %s %s %s: opt-in and off %v, want %v", tc.version, tc.file, tc.env, got, tc.want)
		}
	}
	// Fallbacks (no opt-in) of one package each, by file, function and
	// version:
	//   - sharp's install-time helpers, which the modules an app loads do
	//     not call (every Next.js app with image optimisation ships sharp);
	//   - next's lookup of the process that holds a busy port, in its
	//     CommonJS and ES builds, in the stable releases read; the spawn
	//     of the commander it bundles, which only an executable
	//     subcommand makes and next declares none; the spawn of a Go
	//     route's executable, without a shell, in 16.5.0;
	//   - stripe's uname for its telemetry user agent, resolved null on
	//     error;
	//   - ssh2's Windows agents (unleash's pagent spawn and cygpath),
	//     which createAgent makes only on win32.
	for _, tc := range []struct {
		pkg, file, fn, version string
		want                   bool
	}{
		{"sharp", "dist/libvips.cjs", "spawnSync", "0.35.3", true},
		{"sharp", "lib/libvips.js", "spawnSync", "0.33.5", true},
		{"sharp", "lib/libvips.js", "spawnSync", "0.32.6", false},
		{"sharp", "install/build.js", "spawnSync", "0.35.3", false},
		{"next", "dist/server/lib/start-server.js", "exec", "16.5.0", true},
		{"next", "dist/esm/server/lib/start-server.js", "exec", "15.5.0", true},
		{"next", "dist/server/lib/start-server.js", "exec", "15.4.11", false},
		{"next", "dist/server/lib/start-server.js", "exec", "16.6.0", false},
		{"next", "dist/server/lib/start-server.js", "exec", "16.5.0-canary.2", false},
		{"next", "dist/server/lib/start-server.js", "execSync", "16.5.0", false},
		{"next", "dist/lib/helpers/get-pkg-manager.js", "exec", "16.5.0", false},
		{"next", "dist/compiled/commander/index.js", "spawn", "15.0.0", true},
		{"next", "dist/compiled/commander/index.js", "spawn", "16.5.0", true},
		{"next", "dist/compiled/commander/index.js", "spawn", "14.2.30", false},
		{"next", "dist/compiled/commander/index.js", "exec", "16.5.0", false},
		{"next", "dist/compiled/cross-spawn/index.js", "spawn", "16.5.0", false},
		{"next", "dist/server/lib/native-route.external.js", "spawn", "16.5.0", true},
		{"next", "dist/server/lib/native-route.external.js", "spawn", "16.4.6", false},
		{"next", "dist/server/lib/native-route.external.js", "exec", "16.5.0", false},
		{"stripe", "cjs/platform/NodePlatformFunctions.js", "exec", "17.3.1", true},
		{"stripe", "esm/platform/NodePlatformFunctions.js", "exec", "11.15.0", true},
		{"stripe", "cjs/platform/NodePlatformFunctions.js", "exec", "20.4.1", true},
		{"stripe", "lib/platform/NodePlatformFunctions.js", "exec", "11.13.0", false},
		{"stripe", "cjs/platform/NodePlatformFunctions.js", "exec", "21.0.0", false},
		{"ssh2", "lib/agent.js", "spawn", "1.17.0", true},
		{"ssh2", "lib/agent.js", "execFile", "1.0.0", true},
		{"ssh2", "lib/agent.js", "exec", "1.17.0", false},
		{"ssh2", "lib/agent.js", "spawn", "0.8.9", false},
	} {
		fd := childprocess.Finding{File: "node_modules/" + tc.pkg + "/" + tc.file, Line: 20, Function: tc.fn, Kind: childprocess.KindShell,
			Origin: childprocess.OriginDependency, Package: tc.pkg, PackageVersion: tc.version, Scope: childprocess.ScopeReachable}
		if fb, got := knownFallback(fd); got != tc.want || got && fb.RunsWhen != "" {
			t.Errorf("%s %s %s %s: known fallback %v, want %v", tc.pkg, tc.version, tc.file, tc.fn, got, tc.want)
		}
	}
	// The musl check of napi-rs's generated loader, in any package, once
	// the probe has named its shape in the file.
	for _, tc := range []struct {
		shape, fn, pkg string
		want           bool
	}{
		{childprocess.ShapeNapiMuslCheck, "execSync", "@firecrawl/pdf-inspector", true},
		{childprocess.ShapeNapiMuslCheck, "execSync", "@node-rs/argon2", true},
		{"", "execSync", "@firecrawl/pdf-inspector", false},
		{childprocess.ShapeNapiMuslCheck, "exec", "@node-rs/argon2", false},
		// The earlier loader's lookup on a Node without process.report.
		{childprocess.ShapeNapiNoReportCheck, "execSync", "@ngrok/ngrok", true},
		{childprocess.ShapeNapiNoReportCheck, "spawnSync", "@ngrok/ngrok", false},
	} {
		fd := childprocess.Finding{File: "node_modules/" + tc.pkg + "/index.js", Line: 56, Function: tc.fn, Kind: childprocess.KindShell,
			Command: "ldd --version", Origin: childprocess.OriginDependency, Package: tc.pkg, PackageVersion: "1.0.0",
			Scope: childprocess.ScopeReachable, Shape: tc.shape, Within: "isMuslFromChildProcess"}
		if fb, got := knownFallback(fd); got != tc.want || got && fb.RunsWhen != "" {
			t.Errorf("%s %s %q: known fallback %v, want %v", tc.pkg, tc.fn, tc.shape, got, tc.want)
		}
	}
	// Calls the app's own code turns on (kutt's two unknowns): commander's
	// executable subcommands, nodemailer's sendmail transport, in each
	// build's file; no ENV turns them on.
	for _, tc := range []struct {
		pkg, file, version string
		want               bool
	}{
		{"commander", "lib/command.js", "10.0.1", true},
		{"commander", "index.js", "6.2.1", true},
		{"commander", "index.js", "2.20.3", false}, // an alias of an action command spawned too
		{"nodemailer", "lib/sendmail-transport/index.js", "6.9.16", true},
		{"nodemailer", "dist/cjs/sendmail-transport/index.js", "10.6.1", true},
		{"nodemailer", "lib/smtp-transport/index.js", "6.9.16", false},
		// db-migrate's transition command (unleash's npm install async).
		{"db-migrate", "lib/transitions/try-require.js", "0.11.14", true},
		{"db-migrate", "lib/transitions/try-require.js", "0.9.26", false},
		// dotenvx's command substitution of a .env value's $(…)
		// (outline's): in each of its three files, and in primitives.
		{"@dotenvx/dotenvx", "src/lib/helpers/dotenvEval.js", "0.24.0", true},
		{"@dotenvx/dotenvx", "src/lib/helpers/parse.js", "1.30.0", true},
		{"@dotenvx/dotenvx", "src/lib/helpers/evalKeyValue.js", "1.75.1", true},
		{"@dotenvx/dotenvx", "src/lib/helpers/evalKeyValue.js", "2.0.0", false},
		{"@dotenvx/dotenvx", "src/lib/services/precommit.js", "1.75.1", false},
		{"@dotenvx/primitives", "dist/index.cjs", "0.8.0", true},
		{"@dotenvx/primitives", "dist/index.cjs", "1.10.0", false},
		// mongodb's mongocryptd, for automatic client-side encryption
		// (mongo-express's unknown).
		{"mongodb", "lib/client-side-encryption/mongocryptd_manager.js", "6.0.0", true},
		{"mongodb", "lib/client-side-encryption/mongocryptd_manager.js", "7.9.1", true},
		{"mongodb", "lib/client-side-encryption/mongocryptd_manager.js", "8.0.0", false},
		{"mongodb", "lib/cmap/connect.js", "6.10.0", false},
	} {
		fn := "spawn"
		switch tc.pkg {
		case "db-migrate":
			fn = "spawnSync"
		case "@dotenvx/dotenvx", "@dotenvx/primitives":
			fn = "execSync"
		}
		fd := childprocess.Finding{File: "node_modules/" + tc.pkg + "/" + tc.file, Line: 9, Function: fn, Kind: childprocess.KindDynamic,
			Origin: childprocess.OriginDependency, Package: tc.pkg, PackageVersion: tc.version, Scope: childprocess.ScopeReachable}
		fb, known := knownFallback(fd)
		if got := known && fb.RunsWhen != "" && len(fb.EnabledBy) == 0; got != tc.want {
			t.Errorf("%s %s %s: an opt-in no ENV turns on: %v, want %v", tc.pkg, tc.version, tc.file, got, tc.want)
		}
	}
	if _, err := parseFallbacks([]byte(`{"fallbacks":[{"package":"a","file":"x.js","functions":["exec"],"why":"w","source":"https://x","says":"s","enabled_by":["X"]}]}`)); err == nil || !strings.Contains(err.Error(), "runs_when") {
		t.Errorf("enabled_by without runs_when: %v, want an error that names runs_when", err)
	}
}

// TestForeignPrograms: a call of a macOS or Windows program (esbuild's
// sw_vers, systeminformation's wmic) fails on the original image as on
// distroless: a note, not a blocker. A Linux program stays a blocker.
func TestForeignPrograms(t *testing.T) {
	t.Parallel()
	call := func(bin string) childprocess.Finding {
		return childprocess.Finding{File: "node_modules/esbuild/install.js", Line: 120, Function: "execFileSync", Kind: childprocess.KindBinary,
			Binary: bin, Command: bin, Origin: childprocess.OriginDependency, Package: "esbuild", PackageVersion: "0.25.0", Scope: childprocess.ScopeReachable}
	}
	b := &builder{}
	b.childProcess(&childprocess.Facts{Findings: []childprocess.Finding{call("sw_vers"), call("/usr/bin/osascript"), call("wmic"), call("git")}})
	if len(b.blockers) != 1 || !strings.Contains(b.blockers[0].Title, "git") {
		t.Errorf("blockers %+v, want git's alone", b.blockers)
	}
	i := slices.IndexFunc(b.notes, func(n probe.Note) bool { return n.ID == NoteForeignProgram })
	if i < 0 || len(b.notes[i].Evidence) != 3 || !strings.Contains(b.notes[i].Message, "sw_vers (macOS)") || !strings.Contains(b.notes[i].Message, "wmic (Windows)") {
		t.Errorf("notes %+v, want the three foreign calls in one note", b.notes)
	}
}

// TestWtfnodeFallback: wtfnode's spawn of true runs only on Node 0.10
// (etherpad-lite loads wtfnode at start): a known fallback in the releases
// read, and not past them or in another file.
func TestWtfnodeFallback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, version string
		want          bool
	}{
		{"index.js", "0.3.5", true},
		{"index.js", "0.10.1", true},
		{"index.js", "0.11.0", false},
		{"index.js", "0.2.3", false},
		{"proxy.js", "0.10.1", false},
	} {
		fd := childprocess.Finding{File: "node_modules/wtfnode/" + tc.file, Line: 426, Function: "spawn", Kind: childprocess.KindBinary,
			Command: "true", Binary: "true", Origin: childprocess.OriginDependency, Package: "wtfnode", PackageVersion: tc.version, Scope: childprocess.ScopeReachable}
		if fb, got := knownFallback(fd); got != tc.want || got && fb.RunsWhen != "" {
			t.Errorf("wtfnode %s %s: known fallback %v, want %v", tc.version, tc.file, got, tc.want)
		}
	}
}
