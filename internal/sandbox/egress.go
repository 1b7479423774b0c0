package sandbox

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Egress is what a build's RUN steps may reach over the network. The zero
// value is offline: the steps have no route at all. When Online, the
// backend runs an egress proxy for the spawn, the steps' only route, which
// connects only to the destinations in Allow (and, with BaseMirrors, to
// the package mirrors that the base images' own sources name). HTTPS
// passes through it unread. See docs/adr/0012-build-egress.md.
type Egress struct {
	// Allow are HOST[:PORT] destinations; a missing port means 80 and
	// 443, and "*.example.com" matches its sub-domains.
	Allow []string `json:"allow,omitempty"`
	// BaseMirrors adds the apt and apk mirrors that the base images'
	// /etc/apt and /etc/apk sources name.
	BaseMirrors bool `json:"base_mirrors,omitempty"`
	// Private lets the proxy connect to loopback, private, link-local and
	// metadata addresses, which it refuses otherwise, whatever the name.
	Private bool `json:"private,omitempty"`
	// CA is a PEM bundle that every RUN step trusts, besides its image's
	// own store (NODE_EXTRA_CA_CERTS, npm's and yarn's cafile,
	// SSL_CERT_FILE, CURL_CA_BUNDLE): for networks that inspect TLS. The
	// image's trust store is not changed.
	CA []byte `json:"ca,omitempty"`
	// Boot are HOST[:PORT] destinations the booted service may reach,
	// through a proxy of its own (its HTTP_PROXY and HTTPS_PROXY, which
	// only proxy-aware clients read); empty keeps the boot offline, as it
	// is by default.
	Boot []string `json:"boot,omitempty"`
}

// Online reports whether the build gets a route to the network.
func (e Egress) Online() bool { return len(e.Allow) > 0 || e.BaseMirrors }

// Secret is a build secret: RUN --mount=type=secret,id=ID reads Data. Its
// bytes never appear in a Result, in progress, or in the audit log.
type Secret struct {
	ID   string `json:"id"`
	Data []byte `json:"data"`
}

// String hides the secret's bytes from fmt and logs.
func (s Secret) String() string { return "secret " + s.ID }

// GoString hides the secret's bytes from %#v.
func (s Secret) GoString() string { return "sandbox.Secret{ID: " + fmt.Sprintf("%q", s.ID) + "}" }

// Bounds of the egress and secret parts of a build request.
const (
	MaxEgressRules  = 64
	MaxCABytes      = 512 << 10
	MaxSecrets      = 16
	MaxSecretBytes  = 64 << 10
	maxEgressRuleSz = 261
)

// MaxBootEnv bounds BuildSpec.BootEnv.
const MaxBootEnv = 64

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var secretID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// validate checks the egress and secret parts of a build request: their
// shape only; the backend parses the rules.
func (b *BuildSpec) validateEgress() error {
	e := b.Egress
	if len(e.Allow) > MaxEgressRules {
		return fmt.Errorf("%w: more than %d egress rules", ErrInvalidRequest, MaxEgressRules)
	}
	if len(e.Boot) > MaxEgressRules {
		return fmt.Errorf("%w: more than %d boot egress rules", ErrInvalidRequest, MaxEgressRules)
	}
	for _, r := range append(slices.Clone(e.Allow), e.Boot...) {
		if r == "" || len(r) > maxEgressRuleSz || strings.ContainsFunc(r, func(c rune) bool { return c <= ' ' || c == 0x7f || c == '/' || c == '@' }) {
			return fmt.Errorf("%w: egress rule %q is not HOST[:PORT]", ErrInvalidRequest, r)
		}
	}
	if len(e.CA) > MaxCABytes {
		return fmt.Errorf("%w: the build CA bundle is over %d KiB", ErrInvalidRequest, MaxCABytes>>10)
	}
	if len(e.CA) > 0 && !strings.Contains(string(e.CA), "-----BEGIN CERTIFICATE-----") {
		return fmt.Errorf("%w: the build CA bundle holds no PEM certificate", ErrInvalidRequest)
	}
	if len(b.BootEnv) > MaxBootEnv {
		return fmt.Errorf("%w: more than %d boot environment entries", ErrInvalidRequest, MaxBootEnv)
	}
	for _, kv := range b.BootEnv {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !envName.MatchString(name) || len(kv) > MaxSecretBytes || strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("%w: boot environment entry %.40q is not NAME=value", ErrInvalidRequest, kv)
		}
	}
	if len(b.Secrets) > MaxSecrets {
		return fmt.Errorf("%w: more than %d build secrets", ErrInvalidRequest, MaxSecrets)
	}
	seen := map[string]bool{}
	for _, s := range b.Secrets {
		if !secretID.MatchString(s.ID) {
			return fmt.Errorf("%w: build secret id %q: use letters, digits, '_', '.' and '-'", ErrInvalidRequest, s.ID)
		}
		if seen[s.ID] {
			return fmt.Errorf("%w: build secret %q given twice", ErrInvalidRequest, s.ID)
		}
		seen[s.ID] = true
		if len(s.Data) > MaxSecretBytes {
			return fmt.Errorf("%w: build secret %q is over %d KiB", ErrInvalidRequest, s.ID, MaxSecretBytes>>10)
		}
	}
	return nil
}

// EgressConn is one connection a build step asked the egress proxy for.
type EgressConn struct {
	// Phase is the build step it came from (a BuildPhase), or "" when
	// none was running.
	Phase string `json:"phase,omitempty"`
	Host  string `json:"host"`
	Port  int    `json:"port"`
	// Up and Down are the bytes sent to and received from the
	// destination.
	Up   int64 `json:"up,omitempty"`
	Down int64 `json:"down,omitempty"`
	// Allowed is false when the proxy refused the destination.
	Allowed bool `json:"allowed"`
	// Reason says why it was refused or failed; empty when it worked.
	Reason string `json:"reason,omitempty"`
	// TLSAbandoned is set when the client began a TLS handshake, heard
	// the server, and closed without finishing it: most often a build
	// that does not trust a TLS-inspecting network's certificate.
	TLSAbandoned bool `json:"tls_abandoned,omitempty"`
}

// EgressReport is what the egress proxy of a build spawn saw.
type EgressReport struct {
	// Allow is the allow-list the proxy enforced: the request's, capped
	// by the server, plus the base images' mirrors.
	Allow []string `json:"allow,omitempty"`
	// Conns are the connections, in the order they were asked for.
	Conns []EgressConn `json:"conns,omitempty"`
	// Dropped counts connections past the record's bound.
	Dropped int `json:"dropped,omitempty"`
}

// Denied returns the refused connections.
func (r *EgressReport) Denied() []EgressConn {
	if r == nil {
		return nil
	}
	var out []EgressConn
	for _, c := range r.Conns {
		if !c.Allowed {
			out = append(out, c)
		}
	}
	return out
}
