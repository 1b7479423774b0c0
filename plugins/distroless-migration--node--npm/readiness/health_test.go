package readiness

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/httpcheck"
)

// TestHealthAnalysis: a node check with a fallback that fails keeps its
// words as sh reads them; one whose fallback passes is not removable.
func TestHealthAnalysis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line      string
		removable bool
		argv      []string
	}{
		{"node hc.js", true, []string{"node", "hc.js"}},
		{"node hc.js || exit 1", true, []string{"node", "hc.js"}},
		{`node "health check.js" --url "http://a/b c" || exit 1`, true, []string{"node", "health check.js", "--url", "http://a/b c"}},
		{"node hc.js > /dev/null 2>&1 || exit 1", true, []string{"node", "hc.js"}},
		{"node hc.js || exit 0", false, nil},
		{"node hc.js || true", false, nil},
		{"node hc.js && node other.js", false, nil},
		{"A=1 node hc.js || exit 1", false, nil},
	}
	for _, tt := range tests {
		got := healthAnalysis(tt.line)
		if got.Removable != tt.removable || (tt.removable && !cmp.Equal(got.Argv, tt.argv)) {
			t.Errorf("healthAnalysis(%q) = removable %v, argv %q; want %v, %q", tt.line, got.Removable, got.Argv, tt.removable, tt.argv)
		}
	}
}

func parse(t *testing.T, src string) *dockerfile.File {
	t.Helper()
	f, err := dockerfile.Parse("Dockerfile", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBusyboxWget: which wget the final stage runs decides which
// answers its check passes.
func TestBusyboxWget(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]bool{
		"FROM node:22-alpine\nHEALTHCHECK CMD wget -qO- localhost\n":                                            true,
		"FROM node:22-alpine\nRUN apk add --no-cache wget curl\nHEALTHCHECK CMD wget -qO- localhost\n":          false,
		"FROM node:22-alpine AS base\nFROM base\nHEALTHCHECK CMD wget -qO- localhost\n":                         true,
		"FROM node:22-alpine AS base\nRUN apk add wget\nFROM base\nHEALTHCHECK CMD wget -qO- localhost\n":       false,
		"FROM node:22-bookworm-slim\nRUN apt-get install -y wget\nHEALTHCHECK CMD wget -qO- localhost\n":        false,
		"FROM gcr.io/distroless/nodejs22-debian13:debug\nHEALTHCHECK CMD [\"wget\", \"-qO-\", \"localhost\"]\n": true,
	} {
		if got := busyboxWget(parse(t, src)); got != want {
			t.Errorf("busyboxWget(%q) = %v, want %v", src, got, want)
		}
	}
}

// TestViaProxy: a proxy the image's ENV sets carries curl's and wget's
// requests, unless no_proxy names the host.
func TestViaProxy(t *testing.T) {
	t.Parallel()
	local := &httpcheck.Check{URLs: []string{"http://localhost:3000/health"}}
	for _, tt := range []struct {
		src  string
		c    *httpcheck.Check
		want string
	}{
		{"FROM node:22\n", local, ""},
		{"FROM node:22\nENV HTTP_PROXY=http://proxy:3128\n", local, "http_proxy"},
		{"FROM node:22\nENV http_proxy=http://proxy:3128 no_proxy=localhost,127.0.0.1\n", local, ""},
		{"FROM node:22\nENV HTTPS_PROXY=http://proxy:3128\n", local, ""},
		{"FROM node:22 AS base\nENV http_proxy=http://proxy:3128\nFROM base\nENV no_proxy=localhost\n", local, ""},
		{"FROM node:22\nENV http_proxy=http://proxy:3128 no_proxy=localhost\nENV no_proxy=example.com\n", local, "http_proxy"},
		{"FROM node:22\nENV ALL_PROXY=socks5://proxy:1080\n", local, "all_proxy"},
		{"FROM node:22\nENV http_proxy=http://proxy:3128\n", &httpcheck.Check{URLs: local.URLs, UnixSocket: "/run/s.sock"}, ""},
	} {
		if got := viaProxy(proxyEnv(parse(t, tt.src)), tt.c); got != tt.want {
			t.Errorf("viaProxy(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
}
