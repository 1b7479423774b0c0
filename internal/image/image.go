// Package image resolves container image references to manifest digests,
// for cache keys of probes whose output depends on a base image. It talks
// to registries with go-containerregistry and honours registry mirrors the
// way containers' registries.conf does: each mirror of a registry is tried
// in order, then the registry itself unless it is marked mirror-only.
//
// It does not pull layers or build anything.
package image

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Resolver turns an image reference into its manifest digest
// ("sha256:<hex>"). Implementations are safe for concurrent use.
type Resolver interface {
	Digest(ctx context.Context, ref string) (string, error)
}

// Mirrors maps a registry host (as go-containerregistry names it:
// "index.docker.io" for Docker Hub, "gcr.io") to the mirror hosts to try
// first, in order.
type Mirrors map[string][]string

// ParseMirrors parses "docker.io=127.0.0.1:5000,gcr.io=mirror.local" (also
// separated by semicolons or newlines). "docker.io" is an alias of
// index.docker.io.
func ParseMirrors(s string) (Mirrors, error) {
	m := Mirrors{}
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '\n' }) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		reg, mirror, ok := strings.Cut(item, "=")
		reg, mirror = strings.TrimSpace(reg), strings.TrimSpace(mirror)
		if !ok || reg == "" || mirror == "" {
			return nil, fmt.Errorf("registry mirror %q: want REGISTRY=MIRROR, for example docker.io=127.0.0.1:5000", item)
		}
		if strings.Contains(mirror, "/") {
			return nil, fmt.Errorf("registry mirror %q: the mirror is a host[:port], without scheme or path", item)
		}
		reg = canonicalRegistry(reg)
		m[reg] = append(m[reg], mirror)
	}
	return m, nil
}

// String formats m in the form ParseMirrors reads, sorted.
func (m Mirrors) String() string {
	var parts []string
	for reg, ms := range m {
		for _, mi := range ms {
			parts = append(parts, reg+"="+mi)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// For returns the mirrors tried first for ref's registry; none for a
// reference that does not parse.
func (m Mirrors) For(ref string) []string {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return nil
	}
	return m[parsed.Context().RegistryStr()]
}

func canonicalRegistry(r string) string {
	if r == "docker.io" {
		return name.DefaultRegistry
	}
	return r
}

// Remote resolves digests against real registries.
type Remote struct {
	Mirrors Mirrors
	// Options are passed to remote.Head (transport, user agent). The
	// default keychain is used unless Options set another.
	Options []remote.Option
}

var _ Resolver = (*Remote)(nil)

// Digest resolves ref. A reference pinned by digest is returned as is,
// without network. Mirrors are tried first; the error of every attempt is
// kept when all fail.
func (r *Remote) Digest(ctx context.Context, ref string) (string, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	if d, ok := parsed.(name.Digest); ok {
		return d.DigestStr(), nil
	}
	var errs []error
	for _, mirror := range r.Mirrors[parsed.Context().RegistryStr()] {
		mref, err := onRegistry(parsed, mirror)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := r.head(ctx, mref)
		if err == nil {
			return d, nil
		}
		errs = append(errs, fmt.Errorf("mirror %s: %w", mirror, err))
	}
	d, err := r.head(ctx, parsed)
	if err == nil {
		return d, nil
	}
	errs = append(errs, err)
	return "", fmt.Errorf("resolving digest of %s: %w", ref, errors.Join(errs...))
}

func (r *Remote) head(ctx context.Context, ref name.Reference) (string, error) {
	opts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, r.Options...)
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		return "", err
	}
	return desc.Digest.String(), nil
}

// onRegistry returns ref with its registry replaced by host. Loopback hosts
// are reached over plain HTTP, as registries.conf's insecure = true does.
func onRegistry(ref name.Reference, host string) (name.Reference, error) {
	var opts []name.Option
	if isLoopback(host) {
		opts = append(opts, name.Insecure)
	}
	s := host + "/" + ref.Context().RepositoryStr() + ":" + ref.Identifier()
	return name.ParseReference(s, opts...)
}

func isLoopback(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
