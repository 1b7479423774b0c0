package devimages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a loopback registry serving the stand-in images.
type Registry struct {
	// Host is "127.0.0.1:PORT", the mirror to configure for docker.io
	// and gcr.io.
	Host string
	// Digests maps each pushed "repo:tag" to its manifest digest.
	Digests map[string]string
	srv     *http.Server
	done    chan error
}

// Serve starts an in-process registry on addr (for example
// "127.0.0.1:0") and pushes the images to it. Close stops it.
func Serve(ctx context.Context, addr string, node, distroless, nonroot v1.Image) (*Registry, error) {
	return ServeSets(ctx, addr, []Set{{Major: 22, Node: node, Distroless: distroless, Nonroot: nonroot}})
}

// ServeSets is Serve for the images of several Node majors, each pushed as
// its Set.Tags.
func ServeSets(ctx context.Context, addr string, sets []Set) (*Registry, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("registry address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("registry address %q: the stand-in registry listens on loopback only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("starting the registry: %w", err)
	}
	r := &Registry{
		Host:    ln.Addr().String(),
		Digests: map[string]string{},
		srv: &http.Server{
			Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
			ReadHeaderTimeout: 10 * time.Second,
		},
		done: make(chan error, 1),
	}
	go func() { r.done <- r.srv.Serve(ln) }()
	push := func(img v1.Image, tags []string) error {
		for _, tag := range tags {
			ref, err := name.ParseReference(r.Host+"/"+tag, name.Insecure)
			if err != nil {
				return err
			}
			if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
				return fmt.Errorf("pushing %s: %w", tag, err)
			}
			d, err := img.Digest()
			if err != nil {
				return err
			}
			r.Digests[tag] = d.String()
		}
		return nil
	}
	for _, set := range sets {
		nt, dt, nrt := set.Tags()
		for _, p := range []struct {
			img  v1.Image
			tags []string
		}{{set.Node, nt}, {set.Distroless, dt}, {set.Nonroot, nrt}} {
			if err := push(p.img, p.tags); err != nil {
				_ = r.Close()
				return nil, err
			}
		}
	}
	return r, nil
}

// Mirrors is the --registry-mirror value that routes docker.io and gcr.io
// to this registry.
func (r *Registry) Mirrors() string {
	return "docker.io=" + r.Host + ",gcr.io=" + r.Host
}

// RegistriesConf is a containers registries.conf (for buildah) that
// mirrors docker.io and gcr.io to this registry over plain HTTP.
func (r *Registry) RegistriesConf() string {
	var b strings.Builder
	b.WriteString("unqualified-search-registries = [\"docker.io\"]\n")
	for _, reg := range []string{"docker.io", "gcr.io"} {
		fmt.Fprintf(&b, "\n[[registry]]\nlocation = %q\n\n[[registry.mirror]]\nlocation = %q\ninsecure = true\n", reg, r.Host)
	}
	return b.String()
}

// Close stops the registry.
func (r *Registry) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if serr := <-r.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
