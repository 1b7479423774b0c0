package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/codegenie/codegenie/internal/fleet/fleettest"
)

func TestOpenStoreLocations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, loc := range []string{dir, "file://" + dir, "file://localhost" + dir} {
		st, err := OpenStore(t.Context(), loc)
		if err != nil {
			t.Errorf("%s: %v", loc, err)
			continue
		}
		if fs, ok := st.(*FSStore); !ok || fs.Dir() != dir {
			t.Errorf("%s opened %T %v, want the FSStore in %s", loc, st, st, dir)
		}
	}
	for loc, want := range map[string]string{
		"":                          "no result store",
		"gs://bucket/prefix":        "gs:// result stores are not supported",
		"azblob://container/prefix": "azblob:// result stores are not supported",
		"ftp://host/x":              `unknown result store scheme "ftp"`,
		"file://otherhost/x":        "not a host",
		"s3:///prefix":              "no bucket",
	} {
		if _, err := OpenStore(t.Context(), loc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", loc, err, want)
		}
	}
}

// openS3Store opens a BlobStore under a fresh prefix of srv's bucket.
func openS3Store(t *testing.T, srv *fleettest.S3, prefix string) *BlobStore {
	t.Helper()
	st, err := OpenStore(t.Context(), srv.URL(prefix))
	if err != nil {
		t.Fatal(err)
	}
	bs, ok := st.(*BlobStore)
	if !ok {
		t.Fatalf("%s opened a %T", srv.URL(prefix), st)
	}
	t.Cleanup(func() { _ = bs.Close() })
	return bs
}

// TestBlobStore runs the FSStore's checks against a real S3 server.
func TestBlobStore(t *testing.T) {
	srv := fleettest.StartS3(t, t.TempDir())
	srv.SetEnv(t)
	ctx := t.Context()
	st := openS3Store(t, srv, "a/b")
	d, err := st.Put(ctx, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if d2, err := st.Put(ctx, []byte("hello")); d2 != d || err != nil || !strings.HasPrefix(d, "sha256:") {
		t.Fatalf("digests %s and %s (%v)", d, d2, err)
	}
	if got, err := st.Get(ctx, d); err != nil || string(got) != "hello" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	other, _ := st.Put(ctx, []byte("world"))
	if _, err := st.Get(ctx, "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing digest: %v, want ErrNotFound", err)
	}
	if _, err := st.Get(ctx, "md5:abc"); err == nil {
		t.Error("a malformed digest was accepted")
	}
	if got, err := st.Bind(ctx, "k", d); err != nil || got != d {
		t.Fatalf("Bind = %s, %v", got, err)
	}
	if got, err := st.Bind(ctx, "k", other); err != nil || got != d {
		t.Fatalf("second Bind = %s, %v; want the first digest", got, err)
	}
	if got, ok, err := st.Lookup(ctx, "k"); err != nil || !ok || got != d {
		t.Fatalf("Lookup = %s %v %v", got, ok, err)
	}
	if _, ok, err := st.Lookup(ctx, "absent"); ok || err != nil {
		t.Errorf("an unbound key: found %v, %v", ok, err)
	}
	// The objects are under the prefix, in the server's bucket.
	c := srv.Client()
	lh, _ := hexOf(d)
	name := "a/b/" + blobObject(lh)
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(name)}); err != nil {
		t.Errorf("the object %s is not in the bucket: %v", name, err)
	}
	// A binding to an object that is gone is no binding, and is replaced.
	lost, _ := st.Put(ctx, []byte("lost"))
	if _, err := st.Bind(ctx, "lost-key", lost); err != nil {
		t.Fatal(err)
	}
	lost2, _ := hexOf(lost)
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("a/b/" + blobObject(lost2))}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.Lookup(ctx, "lost-key"); ok || err != nil {
		t.Errorf("a binding to a lost object was found (%v)", err)
	}
	if got, err := st.Bind(ctx, "lost-key", other); err != nil || got != other {
		t.Errorf("rebinding over a lost object = %s, %v; want %s", got, err, other)
	}
	// A damaged object is reported, not returned.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String(name), Body: bytes.NewReader([]byte("HELLO"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, d); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a damaged object: %v", err)
	}
	// Prune keeps what is recent, and removes everything with 0.
	if ps, err := st.Prune(ctx, time.Hour); err != nil || ps.Removed != 0 || ps.Kept == 0 {
		t.Errorf("Prune(1h) = %+v, %v; want all kept", ps, err)
	}
	if ps, err := st.Prune(ctx, 0); err != nil || ps.Removed == 0 || ps.Kept != 0 {
		t.Errorf("Prune(0) = %+v, %v; want all removed", ps, err)
	}
	if _, ok, err := st.Lookup(ctx, "k"); ok || err != nil {
		t.Errorf("a pruned binding was found (%v)", err)
	}
}

// TestBlobStoreConcurrentBindHasOneWinner binds one key from many
// goroutines through two stores (two hosts' clients) at once, 20 times: one
// binding is left each time, and every binder sees it. It found that
// versitygw refuses a conditional write before the winner's object can be
// read, which Bind now waits out.
func TestBlobStoreConcurrentBindHasOneWinner(t *testing.T) {
	srv := fleettest.StartS3(t, t.TempDir())
	srv.SetEnv(t)
	ctx := t.Context()
	hosts := []*BlobStore{openS3Store(t, srv, "race"), openS3Store(t, srv, "race")}
	const rounds = 20
	for round := range rounds {
		key := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		got := make([]string, 16)
		for i := range got {
			wg.Go(func() {
				st := hosts[i%2]
				d, err := st.Put(ctx, []byte{byte(round), byte(i)})
				if err != nil {
					t.Error(err)
					return
				}
				if got[i], err = st.Bind(ctx, key, d); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, g := range got {
			if g != got[0] || g == "" {
				t.Fatalf("round %d: binders saw different winners: %v", round, got)
			}
		}
		if d, ok, err := hosts[1].Lookup(ctx, key); !ok || err != nil || d != got[0] {
			t.Fatalf("round %d: Lookup = %s %v %v, want %s", round, d, ok, err, got[0])
		}
	}
	if n, err := hosts[0].Keys(ctx); err != nil || n != rounds {
		t.Errorf("%d keys (%v), want %d: one per raced key", n, err, rounds)
	}
}

// TestBlobStoreRefusesAStoreWithoutConditionalWrites puts a proxy in front
// of the server that turns its refusal of a conditional write (412) into a
// success, as a store that ignores If-None-Match answers: OpenStore refuses
// it, since Bind could not be create-if-absent there.
func TestBlobStoreRefusesAStoreWithoutConditionalWrites(t *testing.T) {
	srv := fleettest.StartS3(t, t.TempDir())
	srv.SetEnv(t)
	target, _ := url.Parse(srv.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method == http.MethodPut && r.StatusCode == http.StatusPreconditionFailed {
			_ = r.Body.Close()
			r.StatusCode, r.Status = http.StatusOK, "200 OK"
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader("")), 0
			r.Header.Del("Content-Length")
			r.Header.Set("ETag", `"ignored"`)
		}
		return nil
	}
	proxy := httptest.NewServer(rp)
	defer proxy.Close()
	loc := strings.Replace(srv.URL("p"), url.QueryEscape(srv.Endpoint), url.QueryEscape(proxy.URL), 1)
	_, err := OpenStore(t.Context(), loc)
	if !errors.Is(err, ErrNoConditionalWrite) {
		t.Fatalf("OpenStore(%s) = %v, want ErrNoConditionalWrite", loc, err)
	}
	// The same server without the proxy is accepted.
	if st, err := OpenStore(t.Context(), srv.URL("p")); err != nil {
		t.Errorf("the server itself: %v", err)
	} else {
		_ = st.(io.Closer).Close()
	}
}
