// Package egress provides the controlled network exit of a sandboxed build:
// an HTTP forward proxy that lets a build reach only the hosts of an
// allow-list, a network namespace holding only loopback in which that proxy
// listens, and readers of the allow-list's defaults (the registries a
// repository's own configuration names, the mirrors a base image's own
// package sources name).
//
// The Proxy serves CONNECT (tunnelled as is: TLS is never intercepted) and
// plain HTTP requests in absolute form. It checks the destination's name and
// port against the Policy, resolves the name itself, once, refuses it if any
// address it resolved to is loopback, private, link-local (the metadata
// service), unspecified or multicast (unless Policy.AllowPrivate), and then
// dials exactly the addresses it checked, so that a second answer from DNS
// cannot change where it connects. Every attempt, allowed or not, is kept as
// a Conn.
//
// netns.New (internal/egress/netns) makes the namespace a build runs in: its only interface is lo,
// and the proxy's listener is the only thing listening there. The proxy's
// goroutines accept in the namespace and dial from the caller's (the
// host's). The build has no other route and no DNS. See ADR-0012.
//
// The package does not start builds, set their environment, or decide a
// request's allow-list: gate-control does, with Capped applying its cap.
package egress
