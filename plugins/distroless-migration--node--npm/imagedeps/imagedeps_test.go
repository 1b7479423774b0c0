package imagedeps

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
)

func repoWith(t *testing.T, files map[string]string) *probe.Repo {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := probe.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fakeHandoff hands on facts and blobs as given.
type fakeHandoff struct {
	facts json.RawMessage
	blobs map[string][]byte
}

func (h *fakeHandoff) Earlier(name string) (*probe.Result, bool) {
	if name != Source || h.facts == nil {
		return nil, false
	}
	return &probe.Result{Probe: Source, Facts: h.facts}, true
}

func (h *fakeHandoff) Blob(d string) ([]byte, error) {
	if b, ok := h.blobs[d]; ok {
		return b, nil
	}
	return nil, probe.ErrNoBlob
}

// handed is the handoff of a trace that read set.
func handed(t *testing.T, set *sandbox.FileSet) (probe.Handoff, *Ref) {
	t.Helper()
	h, ref, err := Handing(set)
	if err != nil {
		t.Fatal(err)
	}
	return h, ref
}

func testSet() *sandbox.FileSet {
	return &sandbox.FileSet{
		Workdir: "/app/server",
		Roots:   []string{"/app/server/node_modules", "/app/node_modules", "/opt/np"},
		Files: []sandbox.File{
			{Path: "/app/node_modules/shelly/index.js", Data: []byte("require('child_process').execSync('ls')")},
			{Path: "/app/node_modules/shelly/package.json", Data: []byte(`{"name":"shelly"}`)},
			{Path: "/app/server/node_modules/near/index.js", Data: []byte("module.exports = 1")},
			{Path: "/opt/np/far/index.js", Data: []byte("module.exports = 2")},
		},
	}
}

// TestRead: the set the trace handed on stands for the repository's
// node_modules, folders by where the image holds them relative to the
// application's folder; the checkout's own node_modules and lockfile
// mounts under it are hidden; roots outside are said, not scanned.
func TestRead(t *testing.T) {
	repo := repoWith(t, map[string]string{
		"package.json":                 `{"dependencies":{"shelly":"1"}}`,
		"Dockerfile":                   "FROM node:22\nWORKDIR /app\nCOPY . .\nWORKDIR /app/server\nCMD [\"node\", \"index.js\"]\n",
		"server/index.js":              "require('near')",
		"node_modules/own/index.js":    "checkout's own",
		"packages/x/node_modules/b.js": "kept",
	})
	lock := t.TempDir()
	if err := os.WriteFile(filepath.Join(lock, "index.js"), []byte("from the lockfile"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := repo.AddMounts(probe.Mount{Path: "node_modules/a", Dir: lock, Key: "sha512-a"}); err != nil {
		t.Fatal(err)
	}
	// The image's WORKDIR is /app/server; the judged image holds the
	// repository's package.json in /app, which is the application's
	// folder: /app/server/node_modules stands at server/node_modules.
	h, ref := handed(t, testSet())
	pctx := &probe.Context{Handoff: h}
	in, err := Read(t.Context(), repo, pctx)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Ref.Digest != ref.Digest || in.AppDir != "/app" {
		t.Fatalf("ref %+v app dir %q", in.Ref, in.AppDir)
	}
	files, err := in.Repo.Files()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Dockerfile", "node_modules/shelly/index.js", "node_modules/shelly/package.json",
		"package.json", "packages/x/node_modules/b.js",
		"server/index.js", "server/node_modules/near/index.js",
	}
	if !slices.Equal(files, want) {
		t.Fatalf("files %q, want %q", files, want)
	}
	if b, err := in.Repo.ReadFile("node_modules/shelly/index.js"); err != nil || !strings.Contains(string(b), "execSync") {
		t.Fatalf("reading the image's file: %q, %v", b, err)
	}
	if !slices.Equal(in.Outside, []string{"/opt/np"}) || !strings.Contains(in.Partial(), "/opt/np") {
		t.Errorf("outside %q, partial %q", in.Outside, in.Partial())
	}
	if !in.Holds("node_modules/shelly/index.js") || !in.Holds("server/node_modules/near/index.js") || in.Holds("server/index.js") {
		t.Error("Holds does not follow the mounts")
	}
	if orig, _ := repo.Files(); !slices.Contains(orig, "node_modules/own/index.js") {
		t.Error("the original view changed")
	}
	dir := in.dir
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left %s: %v", dir, err)
	}

	// An image without node_modules still hides the checkout's.
	empty, _ := handed(t, &sandbox.FileSet{Workdir: "/app/server"})
	in, err = Read(t.Context(), repo, &probe.Context{Handoff: empty})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// ... and lists as an empty folder, not an error (the npm-start
	// fixture ships no node_modules).
	files, err = in.Repo.Files()
	if err != nil {
		t.Fatalf("listing an image without node_modules: %v", err)
	}
	for _, f := range files {
		if strings.HasPrefix(f, "node_modules/") {
			t.Errorf("%s listed though the image has no node_modules", f)
		}
	}
}

func TestReadWithoutTrace(t *testing.T) {
	repo := repoWith(t, map[string]string{"package.json": "{}"})
	for name, pctx := range map[string]*probe.Context{
		"no handoff":  {},
		"no trace":    {Handoff: &fakeHandoff{}},
		"no ref":      {Handoff: &fakeHandoff{facts: json.RawMessage(`{"execs":1}`)}},
		"nil context": nil,
	} {
		in, err := Read(t.Context(), repo, pctx)
		if err != nil || in != nil {
			t.Errorf("%s: %+v, %v; want nothing", name, in, err)
		}
	}
	_, ref := handed(t, testSet())
	h := &fakeHandoff{facts: json.RawMessage(`{"node_modules":{"digest":"` + ref.Digest + `","workdir":"/app/server","files":4,"bytes":1}}`)}
	if _, err := Read(t.Context(), repo, &probe.Context{Handoff: h}); !errors.Is(err, probe.ErrNoBlob) {
		t.Errorf("a missing blob: %v, want ErrNoBlob", err)
	}
}

func TestEncodeDecode(t *testing.T) {
	a, ra, err := Encode(testSet())
	if err != nil {
		t.Fatal(err)
	}
	b, rb, err := Encode(testSet())
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) || ra.Digest != rb.Digest || ra.Digest != probe.BlobDigest(a) {
		t.Fatal("the same set encodes to different bytes")
	}
	if ra.Files != 4 || ra.Bytes == 0 {
		t.Errorf("ref %+v", ra)
	}
	set, err := Decode(a)
	if err != nil || len(set.Files) != 4 {
		t.Fatalf("decode: %v", err)
	}
	if _, err := Decode([]byte(`{"workdir":"/app","extra":1}`)); err == nil {
		t.Error("an unknown field decoded")
	}
	if _, err := Decode([]byte(`{"workdir":"/app","roots":["/app/node_modules"],"files":[{"path":"/etc/passwd","data":""}]}`)); err == nil {
		t.Error("a file outside the roots decoded")
	}
	bad := testSet()
	bad.Files[0].Path = "/app/node_modules/../../etc/passwd"
	if _, _, err := Encode(bad); err == nil {
		t.Error("a set with a path out of its roots encoded")
	}
}

// TestReadParentNodeModules: an image whose app folder has no
// node_modules, with a parent's that Node's resolution reaches first
// (COPY package*.json / then npm install in WORKDIR /app, which installs
// into /node_modules), has that folder stand for the app's own: it is
// scanned, not left outside. (A real service in the issue 20 scorecard.)
func TestReadParentNodeModules(t *testing.T) {
	repo := repoWith(t, map[string]string{
		"package.json": `{"dependencies":{"shelly":"1"}}`,
		"Dockerfile":   "FROM node:22-slim\nWORKDIR /app\nCOPY package*.json /\nRUN npm i --omit=dev\nCOPY . .\nCMD [\"npm\", \"start\"]\n",
		"src/index.js": "require('shelly')",
	})
	set := &sandbox.FileSet{Workdir: "/app", Roots: []string{"/node_modules", "/opt/np"}, Files: []sandbox.File{
		{Path: "/node_modules/shelly/index.js", Data: []byte("require('child_process').execSync('ls')")},
		{Path: "/node_modules/shelly/package.json", Data: []byte(`{"name":"shelly"}`)},
		{Path: "/opt/np/far/index.js", Data: []byte("module.exports = 2")},
	}}
	h, _ := handed(t, set)
	in, err := Read(t.Context(), repo, &probe.Context{Handoff: h, Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if b, err := in.Repo.ReadFile("node_modules/shelly/index.js"); err != nil || !strings.Contains(string(b), "execSync") {
		t.Fatalf("the parent's node_modules is not the app's: %q, %v", b, err)
	}
	if !slices.Equal(in.Outside, []string{"/opt/np"}) {
		t.Errorf("outside %q, want only NODE_PATH's /opt/np", in.Outside)
	}
}

// The package list is whole unless the read-back failed, was cut short,
// or left node_modules out: a file too large to read (typescript.js, 9
// MB) leaves its own content unread, not the packages, so a package the
// graph needs and the image lacks is still known to be absent.
func TestPackagesWhole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   Installed
		want bool
	}{
		{"read whole", Installed{Ref: &Ref{Files: 10}}, true},
		{"a file too large", Installed{Ref: &Ref{Files: 10, TooLarge: []string{"node_modules/typescript/lib/typescript.js"}}}, true},
		{"cut short", Installed{Ref: &Ref{Files: 10, Truncated: true}}, false},
		{"unread", Installed{Ref: &Ref{Unread: "no such folder"}}, false},
		{"node_modules outside the app", Installed{Ref: &Ref{Files: 10}, Outside: []string{"/node_modules"}}, false},
		{"no read-back", Installed{}, false},
	} {
		if got := tc.in.PackagesWhole(); got != tc.want {
			t.Errorf("%s: PackagesWhole() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
