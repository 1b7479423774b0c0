// Package depstest serves npm-style tarballs from a local registry for
// tests: packages are built in memory, and the registry counts what it
// serves.
package depstest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Entry is one tar entry. Type defaults to a regular file.
type Entry struct {
	Name     string
	Body     string
	Type     byte
	Linkname string
	// Size overrides len(Body) for a regular file whose Body is empty: the
	// file is that many zero bytes (a compressible bomb).
	Size int64
}

// Tarball gzips a tar of entries.
func Tarball(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: 0o644, Typeflag: e.Type, Linkname: e.Linkname}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		switch h.Typeflag {
		case tar.TypeReg:
			h.Size = int64(len(e.Body))
			if e.Body == "" && e.Size > 0 {
				h.Size = e.Size
			}
		case tar.TypeDir:
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if e.Body == "" && e.Size > 0 {
				zero := make([]byte, 64<<10)
				for left := e.Size; left > 0; {
					n := min(left, int64(len(zero)))
					if _, err := tw.Write(zero[:n]); err != nil {
						t.Fatal(err)
					}
					left -= n
				}
			} else if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Package builds a package tarball: package/package.json for name and
// version, plus files (path under the package → body).
func Package(t testing.TB, name, version string, deps map[string]string, files map[string]string) []byte {
	t.Helper()
	m := map[string]any{"name": name, "version": version}
	if len(deps) > 0 {
		m["dependencies"] = deps
	}
	pj, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{Name: "package/package.json", Body: string(pj)}}
	for p, b := range files {
		entries = append(entries, Entry{Name: "package/" + p, Body: b})
	}
	return Tarball(t, entries...)
}

// Integrity is the sha512 SRI string of data.
func Integrity(data []byte) string {
	s := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

// Registry is a local npm registry serving tarballs at
// /NAME/-/BASE-VERSION.tgz and version documents at /NAME/VERSION.
type Registry struct {
	*httptest.Server

	mu       sync.Mutex
	tarballs map[string][]byte // path → bytes
	served   map[string]int
}

// NewRegistry starts a registry; it stops with the test.
func NewRegistry(t testing.TB) *Registry {
	r := &Registry{tarballs: map[string][]byte{}, served: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// TarballPath is where name@version's tarball is served.
func TarballPath(name, version string) string {
	base := name[strings.LastIndexByte(name, '/')+1:]
	return "/" + name + "/-/" + base + "-" + version + ".tgz"
}

// Add serves data as name@version's tarball and returns its URL.
func (r *Registry) Add(name, version string, data []byte) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := TarballPath(name, version)
	r.tarballs[p] = data
	return r.URL + p
}

// Served counts the GETs of a tarball path.
func (r *Registry) Served(p string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.served[p]
}

// TotalServed counts every tarball GET.
func (r *Registry) TotalServed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.served {
		n += c
	}
	return n
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	data, ok := r.tarballs[req.URL.Path]
	if ok {
		r.served[req.URL.Path]++
	}
	r.mu.Unlock()
	if ok {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
		return
	}
	// A version document: /NAME/VERSION, NAME maybe %2f-escaped.
	p := strings.ReplaceAll(req.URL.EscapedPath(), "%2f", "/")
	p = strings.ReplaceAll(p, "%2F", "/")
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		name, version := strings.TrimPrefix(p[:i], "/"), p[i+1:]
		name = strings.ReplaceAll(name, "%40", "@")
		r.mu.Lock()
		data, ok := r.tarballs[TarballPath(name, version)]
		r.mu.Unlock()
		if ok {
			fmt.Fprintf(w, `{"name":%q,"version":%q,"dist":{"integrity":%q,"tarball":%q}}`, name, version, Integrity(data), r.URL+TarballPath(name, version))
			return
		}
	}
	http.NotFound(w, req)
}
