package egress

import (
	"net/netip"
	"slices"
)

// Policy is what a Proxy lets a build reach.
type Policy struct {
	// Allow lists the destinations. A destination that no rule allows is
	// refused before any name is resolved.
	Allow []Rule
	// AllowPrivate lets a destination resolve to a loopback, private
	// (RFC 1918, CGNAT 100.64.0.0/10, ULA fc00::/7), link-local (which
	// holds the 169.254.169.254 metadata service, and fe80::/10),
	// unspecified, multicast or reserved address. Without it such a
	// destination is refused even when a rule names it.
	AllowPrivate bool
}

// Allows reports whether a rule of the policy allows host at port. It does
// not look at addresses: see AllowPrivate.
func (p Policy) Allows(host string, port int) bool {
	h, err := normalizeHost(host, false)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(p.Allow, func(r Rule) bool { return r.portMatch(port) && r.hostMatch(h) })
}

// addrRange is a range of addresses a build may not reach by default.
type addrRange struct {
	prefix netip.Prefix
	class  string
}

// refusedRanges are the ranges refused unless Policy.AllowPrivate is set.
// IPv4-mapped IPv6 addresses are unmapped before they are checked, and the
// IPv4 address inside a NAT64 or 6to4 address is checked as well.
var refusedRanges = []addrRange{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private (ULA)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	ipv4Any = netip.MustParsePrefix("::/96") // IPv4-compatible, deprecated
)

// refusedClass returns the class of a refused address ("loopback", ...), or
// "" for an address a build may reach.
func refusedClass(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	if a.Zone() != "" {
		return "zoned"
	}
	a = a.Unmap()
	for _, r := range refusedRanges {
		if r.prefix.Contains(a) {
			return r.class
		}
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a), ipv4Any.Contains(a):
			if c := refusedClass(netip.AddrFrom4([4]byte(b[12:16]))); c != "" {
				return c + " (embedded in IPv6)"
			}
		case sixTo4.Contains(a):
			if c := refusedClass(netip.AddrFrom4([4]byte(b[2:6]))); c != "" {
				return c + " (embedded in 6to4)"
			}
		}
	}
	return ""
}
