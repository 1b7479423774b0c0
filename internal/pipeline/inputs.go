package pipeline

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/regfile"
)

// absent is the digest of a declared input that matches no file, so that
// creating the file later changes the key.
const absent = "absent"

// notRegular prefixes the digest of a declared input that is not a regular
// file (such as a FIFO), followed by its type.
const notRegular = "not-regular:"

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
		dgs, err := r.digests.files(ctx, matches)
		if err != nil {
			var fe *fileError
			if errors.As(err, &fe) {
				return nil, false, &InputError{Probe: d.Name, Path: fe.path, Err: fe.err}
			}
			return nil, false, err
		}
		for i, m := range matches {
			ins = append(ins, cache.Input{Path: m, Digest: dgs[i]})
		}
	}
	if l, ok := pr.(probe.ImageLister); ok {
		more, err := l.ImageInputs(ctx, r.repo, r.pctx)
		if err != nil {
			r.pctx.Logger.Warn("listing image inputs; running uncached", "probe", d.Name, "err", err)
			return nil, false, nil
		}
		images = append(images, more...)
	}
	if d.PerImage {
		ins = append(ins, cache.Input{Path: "setting:image=" + r.pctx.Image.Key(), Digest: "-"})
	}
	if k, ok := pr.(probe.Keyed); ok {
		for _, setting := range k.KeySettings(r.pctx) {
			ins = append(ins, cache.Input{Path: "setting:" + setting, Digest: "-"})
		}
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
// an input hash it once, and consults the cache's stat memo so that an
// unchanged file is not read again on a later run.
type digests struct {
	repo  *probe.Repo
	stat  *cache.StatMemo // nil without a cache
	mu    sync.Mutex
	m     map[string]*memo
	used  map[string]bool
	usedM sync.Mutex
}

type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// files returns the digests of paths, in order, hashing with a bounded
// number of workers.
func (d *digests) files(ctx context.Context, paths []string) ([]string, error) {
	out := make([]string, len(paths))
	if len(paths) == 1 {
		dg, err := d.file(paths[0])
		if err != nil {
			return nil, &fileError{paths[0], err}
		}
		out[0] = dg
		return out, nil
	}
	var (
		wg    sync.WaitGroup
		next  = make(chan int)
		errMu sync.Mutex
		first error
	)
	for range min(hashWorkers(), len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				dg, err := d.file(paths[i])
				if err != nil {
					errMu.Lock()
					if first == nil {
						first = &fileError{paths[i], err}
					}
					errMu.Unlock()
					continue
				}
				out[i] = dg
			}
		}()
	}
	for i := range paths {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, first
}

// save writes the stat memo, keeping the entries of the files this run
// used.
func (d *digests) save() error {
	if d.stat == nil {
		return nil
	}
	d.usedM.Lock()
	defer d.usedM.Unlock()
	return d.stat.Save(d.used)
}

type memo struct {
	once sync.Once
	v    string
	err  error
}

func newDigests(repo *probe.Repo, c *cache.Cache) *digests {
	d := &digests{repo: repo, m: make(map[string]*memo), used: make(map[string]bool)}
	if c != nil {
		d.stat = c.Memo(repo.Root)
	}
	return d
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
	if m, inside, ok := d.repo.MountOf(rel); ok && m.Key != "" {
		// A mounted folder with a key is content-addressed by it (a
		// dependency, verified against its integrity and kept read-only):
		// its files are keyed by the key and their path, unread.
		return "mount:" + m.Key + "/" + inside, nil
	}
	return d.get("file:"+rel, func() (string, error) {
		abs := d.repo.Abs(rel)
		// A symlink is keyed by where it points, never followed: one that
		// leads out of the repository (or loops) is not read.
		if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(abs)
			if err != nil {
				return "", err
			}
			return "symlink:" + target, nil
		}
		if d.stat != nil {
			d.usedM.Lock()
			d.used[rel] = true
			d.usedM.Unlock()
			if id, err := statFile(abs); err == nil {
				if dg, ok := d.stat.Lookup(rel, id); ok {
					return dg, nil
				}
			}
		}
		dg, id, err := hashFile(abs)
		if nr, ok := errors.AsType[*regfile.NotRegularError](err); ok {
			// A FIFO, socket or device is keyed by its type, never read:
			// the probe that meets it says so.
			return notRegular + nr.Type.String(), nil
		}
		if err != nil {
			return "", err
		}
		if d.stat != nil {
			d.stat.Record(rel, id, dg)
		}
		return dg, nil
	})
}

func (d *digests) image(ctx context.Context, res image.Resolver, ref string) (string, error) {
	return d.get("image:"+ref, func() (string, error) { return res.Digest(ctx, ref) })
}
