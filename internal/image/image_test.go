package image

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestParseMirrors(t *testing.T) {
	t.Parallel()
	got, err := ParseMirrors("docker.io=127.0.0.1:5000, gcr.io=m1.local;gcr.io=m2.local\n")
	if err != nil {
		t.Fatal(err)
	}
	want := Mirrors{name.DefaultRegistry: {"127.0.0.1:5000"}, "gcr.io": {"m1.local", "m2.local"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseMirrors (-want +got):\n%s", diff)
	}
	if s := got.String(); s != "gcr.io=m1.local,gcr.io=m2.local,index.docker.io=127.0.0.1:5000" {
		t.Errorf("String() = %q", s)
	}
	for _, bad := range []string{"docker.io", "=x", "docker.io=", "docker.io=http://x/y"} {
		if _, err := ParseMirrors(bad); err == nil {
			t.Errorf("ParseMirrors(%q) succeeded", bad)
		}
	}
}

// TestRemoteThroughMirror resolves unmodified docker.io and gcr.io
// references through an in-process registry on loopback, as users behind
// a registry mirror do.
func TestRemoteThroughMirror(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	push := func(repo string) string {
		t.Helper()
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(host+"/"+repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	nodeDigest := push("library/node:22")
	distrolessDigest := push("distroless/nodejs22-debian13:latest")

	mirrors, err := ParseMirrors("docker.io=" + host + ",gcr.io=" + host)
	if err != nil {
		t.Fatal(err)
	}
	r := &Remote{Mirrors: mirrors}
	for ref, want := range map[string]string{
		"node:22":                             nodeDigest,
		"docker.io/library/node:22":           nodeDigest,
		"gcr.io/distroless/nodejs22-debian13": distrolessDigest,
		"node@" + nodeDigest:                  nodeDigest, // pinned: no network needed
	} {
		got, err := r.Digest(t.Context(), ref)
		if err != nil {
			t.Fatalf("Digest(%s): %v", ref, err)
		}
		if got != want {
			t.Errorf("Digest(%s) = %s, want %s", ref, got, want)
		}
	}
	if _, err := r.Digest(t.Context(), "node:does-not-exist"); err == nil {
		t.Error("resolving a missing tag succeeded")
	}
	if _, err := r.Digest(t.Context(), "UPPER/case:x"); err == nil {
		t.Error("resolving an invalid reference succeeded")
	}
}
