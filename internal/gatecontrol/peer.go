package gatecontrol

import (
	"context"
	"net"
	"net/http"
)

// peerKey is the context key of the peer of a request's connection.
type peerKey struct{}

// withPeer is the http.Server's ConnContext: it names the peer of each
// connection once, when it is accepted. The name comes from the kernel,
// never from what the peer sends: "unix:uid=N" (the socket's peer
// credentials) or "tcp:IP" (the port is left out, so that one host is one
// peer).
func withPeer(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, peerName(c))
}

func peerName(c net.Conn) string {
	if uc, ok := c.(*net.UnixConn); ok {
		return unixPeer(uc)
	}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return "tcp:" + a.IP.String()
	}
	return c.RemoteAddr().Network()
}

// peerOf returns the peer name of r's connection, or "unknown" for a
// request that did not come through a Server's listener (such as a test's
// direct ServeHTTP call).
func peerOf(r *http.Request) string {
	if p, ok := r.Context().Value(peerKey{}).(string); ok {
		return p
	}
	return "unknown"
}
