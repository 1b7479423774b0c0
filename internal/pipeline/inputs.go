package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/probe"
)

// absent is the digest of a declared input that matches no file, so that
// creating the file later changes the key.
const absent = "absent"

// inputs resolves d's declared inputs. complete is false when an image
// digest could not be resolved: the probe then runs uncached.
func (r *run) inputs(ctx context.Context, pr probe.Probe, d *probe.Desc) (ins []cache.Input, complete bool, err error) {
	var images []string
	for _, decl := range d.DeclaredInputs {
		if ref, ok := strings.CutPrefix(decl, probe.ImageInputPrefix); ok {
			images = append(images, ref)
			continue
		}
		matches, err := r.repo.Glob(decl)
		if err != nil {
			return nil, false, &InputError{Probe: d.Name, Path: decl, Err: err}
		}
		if len(matches) == 0 {
			ins = append(ins, cache.Input{Path: decl, Digest: absent})
			continue
		}
		for _, m := range matches {
			dg, err := r.digests.file(m)
			if err != nil {
				return nil, false, &InputError{Probe: d.Name, Path: m, Err: err}
			}
			ins = append(ins, cache.Input{Path: m, Digest: dg})
		}
	}
	if l, ok := pr.(probe.ImageLister); ok {
		more, err := l.ImageInputs(r.repo)
		if err != nil {
			r.pctx.Logger.Warn("listing image inputs; running uncached", "probe", d.Name, "err", err)
			return nil, false, nil
		}
		images = append(images, more...)
	}
	for _, ref := range images {
		if r.p.Images == nil {
			r.pctx.Logger.Debug("no image resolver; running uncached", "probe", d.Name, "image", ref)
			return nil, false, nil
		}
		dg, err := r.digests.image(ctx, r.p.Images, ref)
		if err != nil {
			r.pctx.Logger.Warn("resolving image digest; running uncached", "probe", d.Name, "image", ref, "err", err)
			return nil, false, nil
		}
		ins = append(ins, cache.Input{Path: probe.ImageInputPrefix + ref, Digest: dg})
	}
	return ins, true, nil
}

// digests memoises file and image digests for one run, so probes sharing
// an input hash it once.
type digests struct {
	repo *probe.Repo
	mu   sync.Mutex
	m    map[string]*memo
}

type memo struct {
	once sync.Once
	v    string
	err  error
}

func newDigests(repo *probe.Repo) *digests {
	return &digests{repo: repo, m: make(map[string]*memo)}
}

func (d *digests) get(key string, fn func() (string, error)) (string, error) {
	d.mu.Lock()
	e, ok := d.m[key]
	if !ok {
		e = new(memo)
		d.m[key] = e
	}
	d.mu.Unlock()
	e.once.Do(func() { e.v, e.err = fn() })
	return e.v, e.err
}

func (d *digests) file(rel string) (string, error) {
	return d.get("file:"+rel, func() (string, error) {
		f, err := os.Open(d.repo.Abs(rel))
		if err != nil {
			return "", err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return "", fmt.Errorf("hashing: %w", err)
		}
		return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
	})
}

func (d *digests) image(ctx context.Context, res image.Resolver, ref string) (string, error) {
	return d.get("image:"+ref, func() (string, error) { return res.Digest(ctx, ref) })
}
