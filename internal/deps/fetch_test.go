package deps_test

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/deps"
	"github.com/codegenie/codegenie/internal/deps/depstest"
)

// writeRepo writes a repository with a package-lock.json v3 pinning pkgs
// (install path → package) and an .npmrc naming registry.
func writeRepo(t *testing.T, registry string, pkgs map[string]deps.Package) string {
	t.Helper()
	dir := t.TempDir()
	packages := map[string]any{"": map[string]any{"name": "svc", "version": "1.0.0"}}
	for p, pk := range pkgs {
		e := map[string]any{"version": pk.Version}
		if pk.Resolved != "" {
			e["resolved"] = pk.Resolved
		}
		if pk.Integrity != "" {
			e["integrity"] = pk.Integrity
		}
		if pk.Name != "" && !strings.HasSuffix(p, "/"+pk.Name) {
			e["name"] = pk.Name
		}
		packages[p] = e
	}
	lock, err := json.Marshal(map[string]any{"name": "svc", "lockfileVersion": 3, "requires": true, "packages": packages})
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "package-lock.json"), lock, 0o644))
	if registry != "" {
		must(t, os.WriteFile(filepath.Join(dir, ".npmrc"), []byte("registry="+registry+"/\n"), 0o644))
	}
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestInstallVerifiesAndRefuses(t *testing.T) {
	reg := depstest.NewRegistry(t)
	good := depstest.Package(t, "good", "1.0.0", nil, map[string]string{"index.js": "module.exports = 1\n", "lib/x.js": "x"})
	scoped := depstest.Package(t, "@s/n", "2.0.0", nil, map[string]string{"index.js": "module.exports = 2\n"})
	withLink := depstest.Tarball(t,
		depstest.Entry{Name: "package/package.json", Body: `{"name":"linked","version":"1.0.0"}`},
		depstest.Entry{Name: "package/real.js", Body: "real"},
		depstest.Entry{Name: "package/alias.js", Type: tar.TypeSymlink, Linkname: "real.js"})
	traversal := depstest.Tarball(t, depstest.Entry{Name: "package/../../evil.js", Body: "x"})
	absolute := depstest.Tarball(t, depstest.Entry{Name: "/etc/evil", Body: "x"})
	symOut := depstest.Tarball(t,
		depstest.Entry{Name: "package/package.json", Body: `{"name":"symout","version":"1.0.0"}`},
		depstest.Entry{Name: "package/passwd", Type: tar.TypeSymlink, Linkname: "../../../etc/passwd"})
	hardOut := depstest.Tarball(t,
		depstest.Entry{Name: "package/passwd", Type: tar.TypeLink, Linkname: "/etc/passwd"})
	device := depstest.Tarball(t, depstest.Entry{Name: "package/null", Type: tar.TypeChar})
	bomb := depstest.Tarball(t, depstest.Entry{Name: "package/zeros", Size: 8 << 20})
	wrong := depstest.Package(t, "wrong", "1.0.0", nil, map[string]string{"index.js": "tampered"})
	noIntegrity := depstest.Package(t, "noint", "3.1.4", nil, map[string]string{"index.js": "ok"})

	pkgs := map[string]deps.Package{
		"node_modules/good":      {Version: "1.0.0", Integrity: depstest.Integrity(good), Resolved: reg.Add("good", "1.0.0", good)},
		"node_modules/@s/n":      {Version: "2.0.0", Integrity: depstest.Integrity(scoped)}, // no resolved: by name
		"node_modules/linked":    {Version: "1.0.0", Integrity: depstest.Integrity(withLink), Resolved: reg.Add("linked", "1.0.0", withLink)},
		"node_modules/traversal": {Version: "1.0.0", Integrity: depstest.Integrity(traversal), Resolved: reg.Add("traversal", "1.0.0", traversal)},
		"node_modules/absolute":  {Version: "1.0.0", Integrity: depstest.Integrity(absolute), Resolved: reg.Add("absolute", "1.0.0", absolute)},
		"node_modules/symout":    {Version: "1.0.0", Integrity: depstest.Integrity(symOut), Resolved: reg.Add("symout", "1.0.0", symOut)},
		"node_modules/hardout":   {Version: "1.0.0", Integrity: depstest.Integrity(hardOut), Resolved: reg.Add("hardout", "1.0.0", hardOut)},
		"node_modules/device":    {Version: "1.0.0", Integrity: depstest.Integrity(device), Resolved: reg.Add("device", "1.0.0", device)},
		"node_modules/bomb":      {Version: "1.0.0", Integrity: depstest.Integrity(bomb), Resolved: reg.Add("bomb", "1.0.0", bomb)},
		"node_modules/wrong":     {Version: "1.0.0", Integrity: depstest.Integrity([]byte("the bytes the lockfile pinned")), Resolved: reg.Add("wrong", "1.0.0", wrong)},
		"node_modules/noint":     {Version: "3.1.4"},
		// A resolved URL on another host is not followed: the tarball
		// comes from the configured registry.
		"node_modules/elsewhere": {Name: "good", Version: "1.0.0", Integrity: depstest.Integrity(good), Resolved: "https://attacker.invalid/good/-/good-1.0.0.tgz"},
	}
	reg.Add("@s/n", "2.0.0", scoped)
	reg.Add("noint", "3.1.4", noIntegrity)
	dir := writeRepo(t, reg.URL, pkgs)

	cache := t.TempDir()
	f := &deps.Fetcher{Dir: cache, Limits: deps.Limits{Unpacked: 1 << 20}}
	res, err := f.Install(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, in := range res.Installed {
		got[in.Path] = "ok"
	}
	for _, m := range res.Missing {
		got[m.Path] = string(m.Kind)
	}
	want := map[string]string{
		"node_modules/good": "ok", "node_modules/@s/n": "ok", "node_modules/linked": "ok", "node_modules/noint": "ok", "node_modules/elsewhere": "ok",
		"node_modules/traversal": "unsafe_archive", "node_modules/absolute": "unsafe_archive", "node_modules/symout": "unsafe_archive",
		"node_modules/hardout": "unsafe_archive", "node_modules/device": "unsafe_archive",
		"node_modules/bomb": "too_large", "node_modules/wrong": "integrity_mismatch",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q (missing: %+v)", p, got[p], w, res.Missing)
		}
	}
	for _, in := range res.Installed {
		if in.Path == "node_modules/noint" != in.IntegrityFromRegistry {
			t.Errorf("%s: IntegrityFromRegistry = %v", in.Path, in.IntegrityFromRegistry)
		}
		if !strings.HasPrefix(in.Key, "sha512-") || in.Dir != filepath.Join(cache, in.Key) {
			t.Errorf("%s: key %s dir %s", in.Path, in.Key, in.Dir)
		}
		fi, err := os.Stat(filepath.Join(in.Dir, "package.json"))
		if err != nil {
			t.Fatalf("%s: %v", in.Path, err)
		}
		if fi.Mode().Perm() != 0o444 {
			t.Errorf("%s: package.json mode %v, want read-only 0444", in.Path, fi.Mode().Perm())
		}
	}
	// The wrong tarball's text is nowhere in the cache: it was not unpacked.
	must(t, filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); string(b) == "tampered" {
				t.Errorf("%s holds the tarball that failed its integrity check", p)
			}
		}
		return err
	}))
	// A link inside the package became a copy; nothing escaped the cache.
	for _, in := range res.Installed {
		if in.Path == "node_modules/linked" {
			b, err := os.ReadFile(filepath.Join(in.Dir, "alias.js"))
			if err != nil || string(b) != "real" {
				t.Errorf("alias.js: %q, %v", b, err)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(cache), "evil.js")); err == nil {
		t.Error("a traversal entry was written outside the cache")
	}
	// Scoped packages come from REGISTRY/@s/n/-/n-VERSION.tgz.
	if n := reg.Served(depstest.TarballPath("@s/n", "2.0.0")); n != 1 {
		t.Errorf("the scoped tarball was served %d times, want 1", n)
	}
	// good is wanted twice (good and elsewhere) and fetched once.
	if n := reg.Served(depstest.TarballPath("good", "1.0.0")); n != 1 {
		t.Errorf("good was fetched %d times, want 1", n)
	}

	// Warm: nothing is fetched again.
	before := reg.TotalServed()
	res2, err := (&deps.Fetcher{Dir: cache, Limits: f.Limits}).Install(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if reg.TotalServed() != before+countKind(res2, deps.KindUnsafe)+countKind(res2, deps.KindIntegrity)+countKind(res2, deps.KindTooLarge) {
		t.Errorf("a warm install fetched %d tarballs", reg.TotalServed()-before)
	}
	if len(res2.Installed) != len(res.Installed) {
		t.Errorf("warm: %d installed, cold %d: %+v", len(res2.Installed), len(res.Installed), res2)
	}
}

func countKind(r *deps.Result, k deps.Kind) int {
	n := 0
	for _, m := range r.Missing {
		if m.Kind == k {
			n++
		}
	}
	return n
}

// TestOfflineUsesCache: with the registry gone, cached packages are used and
// the rest are missing as unreachable, after one try of the registry.
func TestOfflineUsesCache(t *testing.T) {
	reg := depstest.NewRegistry(t)
	a := depstest.Package(t, "a", "1.0.0", nil, map[string]string{"index.js": "a"})
	b := depstest.Package(t, "b", "1.0.0", nil, map[string]string{"index.js": "b"})
	reg.Add("a", "1.0.0", a)
	reg.Add("b", "1.0.0", b)
	cache := t.TempDir()
	one := writeRepo(t, reg.URL, map[string]deps.Package{"node_modules/a": {Version: "1.0.0", Integrity: depstest.Integrity(a)}})
	if _, err := (&deps.Fetcher{Dir: cache}).Install(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	// A registry address that refuses connections: a closed listener.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	dead := "http://" + ln.Addr().String()
	ln.Close()
	both := writeRepo(t, dead, map[string]deps.Package{
		"node_modules/a": {Version: "1.0.0", Integrity: depstest.Integrity(a)},
		"node_modules/b": {Version: "1.0.0", Integrity: depstest.Integrity(b)},
	})
	for _, offline := range []bool{false, true} {
		res, err := (&deps.Fetcher{Dir: cache, Offline: offline}).Install(context.Background(), both)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Installed) != 1 || res.Installed[0].Name != "a" {
			t.Errorf("offline=%v: installed %+v, want a from the cache", offline, res.Installed)
		}
		if len(res.Missing) != 1 || res.Missing[0].Name != "b" || res.Missing[0].Kind != deps.KindUnreachable {
			t.Errorf("offline=%v: missing %+v, want b unreachable", offline, res.Missing)
		}
	}
}

// TestRealRegistry fetches ms@2.1.3 from the npm registry the way a
// lockfile pins it, through the host's trust store.
func TestRealRegistry(t *testing.T) {
	const integrity = "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA=="
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, deps.DefaultRegistry+"/ms", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Skipf("the npm registry %s is unreachable from here (%v): this test needs network access to it", deps.DefaultRegistry, err)
	} else {
		resp.Body.Close()
	}
	dir := writeRepo(t, "", map[string]deps.Package{
		"node_modules/ms": {Version: "2.1.3", Resolved: "https://registry.npmjs.org/ms/-/ms-2.1.3.tgz", Integrity: integrity},
	})
	f := &deps.Fetcher{Dir: t.TempDir()}
	res, err := f.Install(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Missing) > 0 || len(res.Installed) != 1 {
		t.Fatalf("installed %+v, missing %+v", res.Installed, res.Missing)
	}
	b, err := os.ReadFile(filepath.Join(res.Installed[0].Dir, "package.json"))
	if err != nil || !strings.Contains(string(b), `"version": "2.1.3"`) {
		t.Errorf("package.json: %.200s, %v", b, err)
	}
	// A wrong pin for the real tarball is refused.
	bad := writeRepo(t, "", map[string]deps.Package{
		"node_modules/ms": {Version: "2.1.3", Integrity: "sha512-" + strings.Repeat("A", 86) + "=="},
	})
	res, err = (&deps.Fetcher{Dir: t.TempDir()}).Install(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Missing) != 1 || res.Missing[0].Kind != deps.KindIntegrity {
		t.Errorf("a wrong pin: missing %+v, want integrity_mismatch", res.Missing)
	}
}

func TestReadRegistries(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, ".yarnrc.yml"), []byte("npmRegistryServer: \"https://yarn.example\"\nnpmScopes:\n  corp:\n    npmRegistryServer: https://corp.example/npm/\n"), 0o644))
	r, err := deps.ReadRegistries(dir)
	must(t, err)
	if r.For("x") != "https://yarn.example" || r.TarballURL("@corp/lib", "1.2.3") != "https://corp.example/npm/@corp/lib/-/lib-1.2.3.tgz" {
		t.Errorf("from .yarnrc.yml: %+v", r)
	}
	must(t, os.WriteFile(filepath.Join(dir, ".npmrc"), []byte("; comment\nregistry=https://npm.example/\n@other:registry=https://other.example\n//npm.example/:_authToken=secret\n"), 0o644))
	r, err = deps.ReadRegistries(dir)
	must(t, err)
	if r.TarballURL("x", "1.0.0") != "https://npm.example/x/-/x-1.0.0.tgz" || r.For("@other/y") != "https://other.example" {
		t.Errorf("from .npmrc: %+v", r)
	}
	must(t, os.WriteFile(filepath.Join(dir, ".npmrc"), []byte("registry=${REG}\n"), 0o644))
	if _, err := deps.ReadRegistries(dir); err == nil || !strings.Contains(err.Error(), "${REG}") {
		t.Errorf("an unexpanded variable: %v", err)
	}
	// Defaults.
	var none deps.Registries
	if none.TarballURL("ms", "2.1.3") != "https://registry.npmjs.org/ms/-/ms-2.1.3.tgz" {
		t.Error(none.TarballURL("ms", "2.1.3"))
	}
}

func TestNoLockfile(t *testing.T) {
	_, err := (&deps.Fetcher{Dir: t.TempDir()}).Install(context.Background(), t.TempDir())
	if !errors.Is(err, deps.ErrNoLockfile) {
		t.Errorf("got %v, want ErrNoLockfile", err)
	}
}

// TestCaps: a tarball over the compressed-size cap is refused before it is
// read, one with too many entries while it is unpacked; neither is kept.
func TestCaps(t *testing.T) {
	reg := depstest.NewRegistry(t)
	var noise strings.Builder
	for range 300 {
		noise.WriteString(rand.Text()) // incompressible enough to stay large
	}
	big := depstest.Package(t, "big", "1.0.0", nil, map[string]string{"index.js": noise.String()})
	var many []depstest.Entry
	for i := range 50 {
		many = append(many, depstest.Entry{Name: "package/f" + strings.Repeat("0", i%3) + string(rune('a'+i%26)) + ".js", Body: "x"})
	}
	crowd := depstest.Tarball(t, many...)
	dir := writeRepo(t, reg.URL, map[string]deps.Package{
		"node_modules/big":   {Version: "1.0.0", Integrity: depstest.Integrity(big), Resolved: reg.Add("big", "1.0.0", big)},
		"node_modules/crowd": {Version: "1.0.0", Integrity: depstest.Integrity(crowd), Resolved: reg.Add("crowd", "1.0.0", crowd)},
	})
	cache := t.TempDir()
	f := &deps.Fetcher{Dir: cache, Limits: deps.Limits{Compressed: int64(len(crowd)) + 1, Files: 20}}
	res, err := f.Install(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Installed) != 0 || len(res.Missing) != 2 {
		t.Fatalf("installed %+v, missing %+v", res.Installed, res.Missing)
	}
	for _, m := range res.Missing {
		want := map[string]string{"big": "compressed size", "crowd": "file count"}[m.Name]
		if m.Kind != deps.KindTooLarge || !strings.Contains(m.Error, want) {
			t.Errorf("%s: %s %q, want too_large naming the %s", m.Name, m.Kind, m.Error, want)
		}
	}
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) != 0 {
		t.Errorf("the cache keeps %v after refusals (%v)", entries, err)
	}
}
