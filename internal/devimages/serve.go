package devimages

import (
	"bytes"
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

// ServeSets starts an in-process registry on addr (for example
// "127.0.0.1:0") and pushes the images of each set to it as its Set.Tags.
// The registry serves the images' blobs from where they are (the cache's
// files, or memory), not from copies. Close stops it.
func ServeSets(ctx context.Context, addr string, sets []Set) (*Registry, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("registry address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("registry address %q: the stand-in registry listens on loopback only", addr)
	}
	blobs := &imageBlobs{known: map[v1.Hash]blobSource{}, other: registry.NewInMemoryBlobHandler()}
	for _, set := range sets {
		for _, p := range set.images() {
			if err := blobs.add(p.img); err != nil {
				return nil, err
			}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("starting the registry: %w", err)
	}
	r := &Registry{
		Host:    ln.Addr().String(),
		Digests: map[string]string{},
		srv: &http.Server{
			Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)),
				registry.WithBlobHandler(blobs)),
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
		for _, p := range set.images() {
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

// imageBlobs serves the blobs of known images from the images themselves;
// other blobs (none, unless someone pushes) go to memory.
type imageBlobs struct {
	known map[v1.Hash]blobSource
	other registry.BlobHandler
}

type blobSource struct {
	size int64
	open func() (io.ReadCloser, error)
}

func (b *imageBlobs) add(img v1.Image) error {
	raw, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cd, err := img.ConfigName()
	if err != nil {
		return err
	}
	b.known[cd] = blobSource{size: int64(len(raw)), open: func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		size, err := l.Size()
		if err != nil {
			return err
		}
		b.known[d] = blobSource{size: size, open: l.Compressed}
	}
	return nil
}

func (b *imageBlobs) Stat(ctx context.Context, repo string, h v1.Hash) (int64, error) {
	if s, ok := b.known[h]; ok {
		return s.size, nil
	}
	return b.other.(registry.BlobStatHandler).Stat(ctx, repo, h)
}

func (b *imageBlobs) Get(ctx context.Context, repo string, h v1.Hash) (io.ReadCloser, error) {
	if s, ok := b.known[h]; ok {
		return s.open()
	}
	return b.other.Get(ctx, repo, h)
}

func (b *imageBlobs) Put(ctx context.Context, repo string, h v1.Hash, rc io.ReadCloser) error {
	return b.other.(registry.BlobPutHandler).Put(ctx, repo, h, rc)
}
