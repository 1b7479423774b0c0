package sandbox

import (
	"strings"
	"testing"
)

func TestNetworkHint(t *testing.T) {
	online := &EgressReport{Allow: []string{"registry.npmjs.org"}}
	// npm 10 behind a TLS-inspecting network prints only its crash text;
	// the proxy saw the handshakes given up.
	abandoned := &EgressReport{Allow: []string{"registry.npmjs.org"}, Conns: []EgressConn{
		{Phase: "build:deps:step 4", Host: "registry.npmjs.org", Port: 443, Up: 1595, Down: 2255, Allowed: true, TLSAbandoned: true},
		{Phase: "build:deps:step 4", Host: "registry.npmjs.org", Port: 443, Up: 1595, Down: 2255, Allowed: true, TLSAbandoned: true},
	}}
	for _, tc := range []struct {
		name, output string
		rep          *EgressReport
		want         string
	}{
		{"TLS given up", "npm error Exit handler never called!\n", abandoned, "2 HTTPS connection(s) to registry.npmjs.org ended in the TLS handshake"},
		{"TLS given up, whole target", "npm error Exit handler never called!\n", abandoned, "--build-ca FILE"},
		{"TLS given up in another step", "npm error Exit handler never called!\n", abandoned, "only through the egress proxy"},
		{"offline npm", "npm error Exit handler never called!\n", nil, "the build ran with no network"},
		{"offline apt", "W: Temporary failure resolving 'deb.debian.org'\n", nil, "the build ran with no network"},
		{"TLS", "npm error code SELF_SIGNED_CERT_IN_CHAIN\n", online, "--build-ca FILE"},
		{"online refused", "npm error code ECONNREFUSED\n", online, "only through the egress proxy"},
		{"a plain failure", "error: cannot find module 'x'\n", online, ""},
	} {
		phase := "build:deps:step 4"
		switch tc.name {
		case "TLS given up, whole target":
			phase = "build:runner"
		case "TLS given up in another step":
			phase = "build:deps:step 5"
		}
		got := NetworkHint(tc.rep, phase, tc.output)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
