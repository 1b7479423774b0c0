package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// tlsFailures are what clients print when they do not trust a TLS
// certificate: npm and Node, OpenSSL and curl, git, pip.
var tlsFailures = []string{"SELF_SIGNED_CERT_IN_CHAIN", "UNABLE_TO_GET_ISSUER_CERT", "unable to get local issuer certificate",
	"self-signed certificate in certificate chain", "certificate verify failed", "server certificate verification failed", "CERTIFICATE_VERIFY_FAILED"}

// networkFailures are what package managers print when they reach no
// network; npm's "Exit handler never called!" is how npm 10 ends then.
var networkFailures = []string{"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ENETUNREACH", "Exit handler never called", "Could not resolve host",
	"Temporary failure resolving", "Could not resolve", "getaddrinfo"}

// NetworkHint says, after a failed step's last lines, the likely cause
// when they show a network failure: a build that ran offline, or a TLS
// certificate that the build does not trust (a network that inspects
// TLS). A package manager's crash text is then never the whole reason.
func NetworkHint(rep *EgressReport, phase, output string) string {
	has := func(list []string) bool {
		return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(output, s) })
	}
	if n, host := abandonedTLS(rep, phase); n > 0 {
		// npm 10 prints only "Exit handler never called!" then; the
		// proxy saw why.
		return fmt.Sprintf("; %d HTTPS connection(s) to %s ended in the TLS handshake, which the build's client gave up after the server's certificate: "+
			"it does not trust the certificate this network presents; on a network that inspects TLS, pass its CA bundle with --build-ca FILE", n, host)
	}
	switch {
	case has(tlsFailures):
		return "; a client did not trust a TLS certificate: on a network that inspects TLS, pass its CA bundle with --build-ca FILE"
	case rep == nil && has(networkFailures):
		return "; the build ran with no network (--build-egress none, or a gate-control that allows none): a step that installs packages needs the egress proxy"
	case rep != nil && has(networkFailures):
		return "; the build reached the network only through the egress proxy: see the trace facts' egress for what it connected to"
	}
	return ""
}

// abandonedTLS counts the connections of the failed phase (a step, or any
// step when the phase is a whole target) whose TLS handshake the client
// gave up, with the first one's host.
func abandonedTLS(rep *EgressReport, phase string) (n int, host string) {
	if rep == nil {
		return 0, ""
	}
	for _, c := range rep.Conns {
		if c.TLSAbandoned && (c.Phase == phase || !strings.Contains(phase, ":step ")) {
			if n++; host == "" {
				host = c.Host
			}
		}
	}
	return n, host
}
