package childprocess

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// shellWhenCalled is a service whose dependency runs a shell only when
// called: a boot that never calls it shows nothing, the shipped code does.
func shellWhenCalled(t *testing.T) (string, *sandbox.FileSet) {
	t.Helper()
	dir := t.TempDir()
	for p, body := range map[string]string{
		"package.json": `{"name":"svc","dependencies":{"node-cmd":"5.0.0","quiet":"1.0.0"}}`,
		"Dockerfile":   "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n",
		"server.js":    "const cmd = require('node-cmd');\nrequire('quiet');\nrequire('http').createServer((q, s) => s.end(q.url === '/up' ? cmd.runSync('uptime').data : 'ok')).listen(3000);\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := &sandbox.FileSet{Workdir: "/app", Roots: []string{"/app/node_modules"}, Files: []sandbox.File{
		{Path: "/app/node_modules/node-cmd/cmd.js", Data: []byte("const { exec } = require('child_process');\nmodule.exports.runSync = function (command) {\n  return exec(command);\n};\n")},
		{Path: "/app/node_modules/node-cmd/package.json", Data: []byte(`{"name":"node-cmd","version":"5.0.0","main":"cmd.js"}`)},
		{Path: "/app/node_modules/quiet/index.js", Data: []byte("module.exports = 1;\n")},
		{Path: "/app/node_modules/quiet/package.json", Data: []byte(`{"name":"quiet","version":"1.0.0"}`)},
	}}
	return dir, set
}

// TestScanImage: the node_modules read back from an image stand for the
// checkout's (which has none), and a dependency's exec the entrypoint
// reaches is found, with its package and load chain.
func TestScanImage(t *testing.T) {
	dir, set := shellWhenCalled(t)
	img := probe.ImageRef{Dockerfile: "Dockerfile", Target: "0"}
	s, err := ScanImage(t.Context(), dir, img, set)
	if err != nil {
		t.Fatal(err)
	}
	blocking := s.Facts.Blocking()
	if len(blocking) != 1 {
		t.Fatalf("blocking %+v, want the one exec in node-cmd (findings %+v)", blocking, s.Facts.Findings)
	}
	b := blocking[0]
	if b.Kind != KindShell || b.Package != "node-cmd" || b.File != "node_modules/node-cmd/cmd.js" || b.Scope != ScopeReachable ||
		len(b.Chain) < 2 || !strings.HasPrefix(b.Chain[0], "server.js:") {
		t.Fatalf("finding %+v", b)
	}
	if s.Facts.ImageNodeModules == nil || s.Facts.DependenciesScanned != 2 || s.Confidence == probe.Low {
		t.Fatalf("scan %+v facts %+v: want both packages read from the image", s, s.Facts)
	}
	// Without the image's set, the checkout has no node_modules: the
	// same scan cannot see the exec, and says the dependencies are not
	// installed.
	s, err = ScanImage(t.Context(), dir, img, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Facts.Blocking()); n != 0 || s.Reason != ReasonDependenciesNotInstalled {
		t.Fatalf("without the image: %d blocking, reason %s", n, s.Reason)
	}
}

// A file of the image's node_modules too large to read back leaves the
// scan short only when the entrypoint may load it: a bundled compiler
// that nothing requires does not (excalidraw-room ships typescript, whose
// typescript.js is 9 MB, in "dependencies"), and a required one does.
func TestScanImageUnreadFile(t *testing.T) {
	dir, set := shellWhenCalled(t)
	img := probe.ImageRef{Dockerfile: "Dockerfile", Target: "0"}
	set.Files = append([]sandbox.File{
		{Path: "/app/node_modules/big/package.json", Data: []byte(`{"name":"big","version":"1.0.0","main":"big.js"}`)}}, set.Files...)
	set.TooLarge = []string{"/app/node_modules/big/big.js"}
	s, err := ScanImage(t.Context(), dir, img, set)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Facts.UnreadInImage) != 0 || s.Reason == ReasonImageDependenciesPartial {
		t.Fatalf("an unread file nothing loads: unread in image %v, reason %s (%s)", s.Facts.UnreadInImage, s.Reason, s.Detail)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.js"), []byte("require('big');\nrequire('node-cmd');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err = ScanImage(t.Context(), dir, img, set); err != nil {
		t.Fatal(err)
	}
	if len(s.Facts.UnreadInImage) != 1 || s.Facts.UnreadInImage[0] != "node_modules/big/big.js" || s.Reason != ReasonImageDependenciesPartial {
		t.Fatalf("an unread file the entrypoint loads: unread in image %v, reason %s (%s)", s.Facts.UnreadInImage, s.Reason, s.Detail)
	}
}
