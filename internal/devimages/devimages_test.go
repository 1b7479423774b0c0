package devimages

import (
	"archive/tar"
	"errors"
	"io"
	"os"
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

// files lists an image's flattened filesystem: path → symlink target or "".
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
	}
}

func TestBuildAndServe(t *testing.T) {
	in := inputs(t)
	start := time.Now()
	node, distroless, nonroot, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built in %s", time.Since(start))

	nf := files(t, node)
	for _, p := range []string{"usr/local/bin/node", "usr/local/lib/node_modules/npm/bin/npm-cli.js", "bin/sh", "usr/bin/env",
		"usr/local/bin/docker-entrypoint.sh", "lib/x86_64-linux-gnu/libc.so.6", "lib64/ld-linux-x86-64.so.2", "etc/passwd"} {
		if _, ok := nf[p]; !ok {
			t.Errorf("node image lacks %s", p)
		}
	}
	df := files(t, distroless)
	for _, p := range []string{"nodejs/bin/node", "lib/x86_64-linux-gnu/libstdc++.so.6", "etc/passwd"} {
		if _, ok := df[p]; !ok {
			t.Errorf("distroless image lacks %s", p)
		}
	}
	for _, p := range []string{"bin/sh", "usr/bin/env", "bin/busybox", "usr/local/bin/npm"} {
		if _, ok := df[p]; ok {
			t.Errorf("distroless image has %s", p)
		}
	}
	cfg, err := distroless.ConfigFile()
	if err != nil || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/nodejs/bin/node" {
		t.Errorf("distroless entrypoint = %v, %v", cfg.Config.Entrypoint, err)
	}
	if cfg, _ := nonroot.ConfigFile(); cfg.Config.User != "65532" {
		t.Errorf("nonroot user = %q", cfg.Config.User)
	}
	if cfg, _ := node.ConfigFile(); cfg.Config.Entrypoint[0] != "docker-entrypoint.sh" {
		t.Errorf("node entrypoint = %v", cfg.Config.Entrypoint)
	}

	// The same inputs give the same digests.
	node2, _, _, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := node.Digest()
	d2, _ := node2.Digest()
	if d1 != d2 {
		t.Errorf("two builds differ: %s and %s", d1, d2)
	}

	// The on-disk cache gives back the same images.
	dir := t.TempDir()
	c1, _, _, err := Cached(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	c2, _, _, err := Cached(in, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []v1.Image{c1, c2} {
		if d, _ := img.Digest(); d != d1 {
			t.Errorf("cached node image digest %s, built %s", d, d1)
		}
	}

	reg, err := Serve(t.Context(), "127.0.0.1:0", node, distroless, nonroot)
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
		"node:22-slim":                        "library/node:22-slim",
		"gcr.io/distroless/nodejs22-debian13": "distroless/nodejs22-debian13:latest",
	} {
		got, err := res.Digest(t.Context(), ref)
		if err != nil || got != reg.Digests[tag] {
			t.Errorf("resolving %s through the mirror = %s, %v; want %s", ref, got, err, reg.Digests[tag])
		}
	}
	ref, _ := name.ParseReference(reg.Host+"/library/node:22", name.Insecure)
	if _, err := remote.Image(ref); err != nil {
		t.Errorf("pulling node:22 from the registry: %v", err)
	}
	if _, err := Serve(t.Context(), "0.0.0.0:0", node, distroless, nonroot); err == nil {
		t.Error("Serve listened on a non-loopback address")
	}
}

func TestSetTags(t *testing.T) {
	n, d, nr := Set{Major: 22}.Tags()
	if len(n) != len(NodeTags) || d[0] != DistrolessTags[0] || nr[0] != NonrootTags[0] {
		t.Fatalf("22: %v %v %v", n, d, nr)
	}
	n, d, nr = Set{Major: 24}.Tags()
	want := []string{"library/node:24", "library/node:24-slim", "library/node:24-bookworm", "library/node:24-bookworm-slim"}
	if strings.Join(n, ",") != strings.Join(want, ",") || d[0] != "distroless/nodejs24-debian13:latest" || nr[0] != "distroless/nodejs24-debian13:nonroot" {
		t.Fatalf("24: %v %v %v", n, d, nr)
	}
}

func TestTarballVersion(t *testing.T) {
	in := DefaultInputs()
	if err := in.Check(); err != nil {
		t.Skipf("no tarballs here (%v): run scripts/setup.sh", err)
	}
	v, err := tarballVersion(in.NodeTarball)
	if err != nil || !strings.HasPrefix(v, "22.") {
		t.Fatalf("version %q, %v", v, err)
	}
}
