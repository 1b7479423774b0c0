package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Rule is one destination a build may reach. Host is a lower-case host name
// without a trailing dot ("registry.npmjs.org"), a wildcard that matches the
// sub-domains of a name but not the name itself ("*.example.com"), or an IP
// literal in its canonical form ("203.0.113.80", "2001:db8::1"). Port is the
// destination port; 0 means both 80 and 443.
//
// Rules are made by ParseRule, which normalises them, so that two rules
// naming the same destinations compare equal.
type Rule struct {
	Host string
	Port int
}

// maxHostLen is the longest host name DNS allows.
const maxHostLen = 253

// ParseRule parses a rule written as HOST, HOST:PORT, [IPV6] or [IPV6]:PORT,
// where HOST is a host name, "*." followed by a host name, an IPv4 literal or
// a bare IPv6 literal. Host names are lower-cased and lose a trailing dot.
// URLs, paths, zones and empty parts are errors that say what to write
// instead.
func ParseRule(s string) (Rule, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Rule{}, errors.New("empty egress rule: write HOST or HOST:PORT, such as registry.npmjs.org or npm.corp:8443")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@") {
		return Rule{}, fmt.Errorf("egress rule %q is not a host: write HOST or HOST:PORT without a scheme, user or path (e.g. registry.npmjs.org:443)", in)
	}
	host, port := s, 0
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return Rule{}, fmt.Errorf("egress rule %q: missing ] after the IPv6 address", in)
		}
		host = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return Rule{}, fmt.Errorf("egress rule %q: unexpected %q after the IPv6 address", in, rest)
			}
			p, err := parsePort(rest[1:])
			if err != nil {
				return Rule{}, fmt.Errorf("egress rule %q: %w", in, err)
			}
			port = p
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return Rule{}, fmt.Errorf("egress rule %q: %q in brackets is not an IPv6 address", in, host)
		}
	case strings.Count(s, ":") > 1:
		// A bare IPv6 literal: the whole string is the address.
		host = s
	case strings.Contains(s, ":"):
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return Rule{}, fmt.Errorf("egress rule %q: %w", in, err)
		}
		pn, err := parsePort(p)
		if err != nil {
			return Rule{}, fmt.Errorf("egress rule %q: %w", in, err)
		}
		host, port = h, pn
	}
	h, err := normalizeHost(host, true)
	if err != nil {
		return Rule{}, fmt.Errorf("egress rule %q: %w", in, err)
	}
	return Rule{Host: h, Port: port}, nil
}

// parsePort parses a decimal port from 1 to 65535.
func parsePort(p string) (int, error) {
	if p == "" {
		return 0, errors.New("empty port after ':'")
	}
	if len(p) > 5 || strings.TrimLeft(p, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return n, nil
}

// normalizeHost checks a host name, wildcard (if wild) or IP literal and
// returns its canonical form.
func normalizeHost(h string, wild bool) (string, error) {
	if h == "" {
		return "", errors.New("empty host")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("IPv6 zone in %q: zones name a local interface and are not allowed", h)
		}
		return a.Unmap().String(), nil
	}
	if strings.Contains(h, ":") {
		return "", fmt.Errorf("%q is not a valid IPv6 address", h)
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	name := h
	if strings.HasPrefix(h, "*.") {
		if !wild {
			return "", fmt.Errorf("wildcard %q is not a destination", h)
		}
		name = h[2:]
		if _, err := netip.ParseAddr(name); err == nil {
			return "", fmt.Errorf("wildcard %q names an IP address; wildcards take host names", h)
		}
	}
	if err := checkName(name); err != nil {
		return "", err
	}
	return h, nil
}

// checkName checks a lower-case DNS host name: labels of letters, digits,
// hyphens and underscores, at most 63 bytes each, 253 in all.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty host name")
	}
	if len(name) > maxHostLen {
		return fmt.Errorf("host name of %d bytes is longer than %d", len(name), maxHostLen)
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return fmt.Errorf("host %q has an empty label", name)
		}
		if len(label) > 63 {
			return fmt.Errorf("host %q has a label longer than 63 bytes", name)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("host %q has a label that starts or ends with '-'", name)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !nameByte(c) {
				return fmt.Errorf("host %q has the character %q, which host names do not contain", name, c)
			}
		}
	}
	return nil
}

// String returns the rule in the form ParseRule reads: HOST, HOST:PORT,
// [IPV6] or [IPV6]:PORT.
func (r Rule) String() string {
	h := r.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if r.Port == 0 {
		return h
	}
	return h + ":" + strconv.Itoa(r.Port)
}

// ports returns the ports the rule allows.
func (r Rule) ports() []int {
	if r.Port == 0 {
		return []int{80, 443}
	}
	return []int{r.Port}
}

// portMatch reports whether the rule allows port.
func (r Rule) portMatch(port int) bool {
	if r.Port == 0 {
		return port == 80 || port == 443
	}
	return port == r.Port
}

// hostMatch reports whether the rule covers host, which is normalised (see
// normalizeHost) and is never a wildcard.
func (r Rule) hostMatch(host string) bool {
	if suffix, ok := strings.CutPrefix(r.Host, "*"); ok {
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
	}
	return host == r.Host
}

// Allows reports whether the rule allows host at port. Host is compared in
// its normalised form (lower case, no trailing dot, canonical IP literal); an
// IP literal matches only a rule naming the same address, never a name.
func (r Rule) Allows(host string, port int) bool {
	h, err := normalizeHost(host, false)
	if err != nil {
		return false
	}
	return r.portMatch(port) && r.hostMatch(h)
}

// covers reports whether every destination of want is also one of r's, for
// one port of want.
func (r Rule) covers(want Rule, port int) bool {
	if !r.portMatch(port) {
		return false
	}
	if want.Host == r.Host {
		return true
	}
	if strings.HasPrefix(want.Host, "*.") {
		// A wildcard is covered only by a wildcard of itself or of one
		// of its parents.
		suffix, ok := strings.CutPrefix(r.Host, "*")
		return ok && strings.HasSuffix(want.Host[1:], suffix)
	}
	return r.hostMatch(want.Host)
}

// Capped returns the rules of want that cap allows, and the rules it does not.
// Cap is gate-control's limit (`serve --egress-allow`) and want a request's
// allow-list; the cap wins. A wanted wildcard is allowed only under a wildcard
// of the cap that covers all of it. A wanted rule with port 0 (80 and 443) of
// which the cap allows one port is returned in ok for that port and in refused
// for the other. An empty cap refuses everything. Both results are in want's
// order, without duplicates.
func Capped(want, cap []Rule) (ok, refused []Rule) {
	add := func(list []Rule, r Rule) []Rule {
		if slices.Contains(list, r) {
			return list
		}
		return append(list, r)
	}
	for _, w := range want {
		var yes, no []int
		for _, port := range w.ports() {
			if slices.ContainsFunc(cap, func(c Rule) bool { return c.covers(w, port) }) {
				yes = append(yes, port)
			} else {
				no = append(no, port)
			}
		}
		switch {
		case len(no) == 0:
			ok = add(ok, w)
		case len(yes) == 0:
			refused = add(refused, w)
		default:
			ok = add(ok, Rule{Host: w.Host, Port: yes[0]})
			refused = add(refused, Rule{Host: w.Host, Port: no[0]})
		}
	}
	return ok, refused
}

// nameByte reports whether c may appear in a lower-case host name label.
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
