// Package migrate is the library behind `codegenie migrate`: it gathers a
// repository's static facts, runs the recipe on the judged image, proves
// the rewrite with the gates in the sandbox, and applies it atomically.
package migrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/gates"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// SchemaVersion versions Migration's JSON.
const SchemaVersion = "1"

// Options configure Run.
type Options struct {
	// Gather gathers the static facts the recipe works from; its Sandbox
	// is not used (the recipe needs no trace: the gates are the proof).
	Gather gather.Options
	nodenpm.RewriteOptions
	// Sandbox runs the gates; NoGates skips them (the result is then
	// unproven).
	Sandbox sandbox.Client
	NoGates bool
	// BootFor, RegistryMirrors, ProbePaths and Timeout are the gate
	// spawns'.
	BootFor         time.Duration
	RegistryMirrors map[string]string
	ProbePaths      []string
	Timeout         time.Duration
	// Scratch is where the rewritten workspace is made; empty is the
	// system's temporary directory.
	Scratch string
}

// Migration is one migrate run.
type Migration struct {
	SchemaVersion string         `json:"schema_version"`
	Repo          string         `json:"repo"`
	Image         probe.ImageRef `json:"image"`
	// Before is the verdict the rewrite starts from.
	Before probe.Verdict  `json:"verdict_before"`
	Result *recipe.Result `json:"rewrite"`
	// Gates is nil when they did not run (refused, or NoGates).
	Gates *gates.Report `json:"gates,omitempty"`
	// Proven is true when every gate passed; Migrated when the rewrite
	// changes something, nothing is refused, and it is proven.
	Proven   bool    `json:"proven"`
	Migrated bool    `json:"migrated"`
	Written  bool    `json:"written"`
	Timings  Timings `json:"timings"`
}

// Timings split a migrate run's wall time.
type Timings struct {
	GatherMS float64 `json:"gather_ms"`
	RecipeMS float64 `json:"recipe_ms"`
	GatesMS  float64 `json:"gates_ms"`
	// OriginalMS is the share of GatesMS the original image's build and
	// boot took (for same_behaviour).
	OriginalMS float64 `json:"original_ms"`
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// Run gathers the repository at dir, rewrites the judged image's
// Dockerfile to distroless and, unless NoGates, proves the rewrite with the
// gates in the sandbox. It writes nothing into dir (see Write).
func Run(ctx context.Context, dir string, o Options) (*Migration, error) {
	start := time.Now()
	gopts := o.Gather
	gopts.Sandbox = nil
	out, err := gather.Run(ctx, dir, gopts)
	if err != nil {
		return nil, err
	}
	m := &Migration{SchemaVersion: SchemaVersion, Repo: out.Context.Repo, Timings: Timings{GatherMS: msSince(start)}}
	if out.Context.Image != nil {
		m.Image = *out.Context.Image
	}
	m.Before = out.Context.Assessments[readiness.Name].Verdict
	start = time.Now()
	if m.Result, err = nodenpm.Rewrite(ctx, dir, out.Context.Probes, o.RewriteOptions); err != nil {
		return nil, err
	}
	m.Timings.RecipeMS = msSince(start)
	if m.Result.Refused() || o.NoGates {
		return m, nil
	}
	if o.Sandbox == nil {
		return nil, errors.New("the gates need a sandbox: configure a gate-control (--gate-control), run as root, or pass --no-gates")
	}
	start = time.Now()
	work, cleanup, err := workspace(dir, o.Scratch, m.Result)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	newFile := m.Result.Dockerfile
	src, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(newFile)))
	if err != nil {
		return nil, err
	}
	parsed, err := dockerfile.Parse(newFile, src)
	if err != nil {
		return nil, fmt.Errorf("the rewritten Dockerfile does not parse: %w", err)
	}
	spec := gates.Spec{Migrated: work, Original: out.Context.Repo, Dockerfile: newFile, Target: m.Result.StageTarget, OriginalTarget: m.Result.OriginalTarget,
		BootFor: o.BootFor, RegistryMirrors: o.RegistryMirrors, ProbePaths: probePaths(o.ProbePaths, m.Result.ProbePaths), Timeout: o.Timeout}
	m.Gates, err = gates.Run(ctx, o.Sandbox, spec, parsed, m.Result.Stage)
	if err != nil {
		return nil, err
	}
	m.Timings.GatesMS = msSince(start)
	m.Timings.OriginalMS = float64(m.Gates.OriginalMS)
	m.Proven = m.Gates.Passed
	m.Migrated = m.Proven && len(m.Result.Files) > 0
	return m, nil
}

// probePaths are the paths both gate boots request: the user's, then the
// ones the original's checks named, at most sandbox.MaxProbePaths.
func probePaths(user, checks []string) []string {
	var out []string
	for _, p := range append(append([]string{}, user...), checks...) {
		if !slices.Contains(out, p) && len(out) < sandbox.MaxProbePaths {
			out = append(out, p)
		}
	}
	return out
}

// workspace makes a scratch copy of dir with the rewrite applied: files
// are hard links where the filesystem allows (the sandbox reads the
// workspace and never writes it), and the rewritten and generated files
// are new files, so dir itself is never changed.
func workspace(dir, scratch string, res *recipe.Result) (string, func(), error) {
	work, err := os.MkdirTemp(scratch, "codegenie-migrate-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(work) }
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(work, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, dst)
		case d.IsDir():
			if rel == "." {
				return nil
			}
			return os.Mkdir(dst, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		if os.Link(p, dst) == nil {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, info.Mode().Perm())
	})
	if err == nil {
		for _, f := range res.Files {
			p := filepath.Join(work, filepath.FromSlash(f.Path))
			if err = os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err = os.WriteFile(p, f.New, f.Mode); err != nil {
				break
			}
		}
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("making the rewritten workspace: %w", err)
	}
	return work, cleanup, nil
}

// ErrChanged is a file that changed on disk since the rewrite read it.
var ErrChanged = errors.New("changed since the rewrite read it")

// Write applies the rewrite to dir atomically: every file is written to a
// temporary file beside it first, then all are renamed into place; a
// failed rename puts back the files already renamed. A file that changed
// since the rewrite read it (or a generated file that now exists) stops
// the write before anything is replaced.
func (m *Migration) Write(dir string) error {
	type pending struct{ path, tmp string }
	var done []pending
	var staged []pending
	fail := func(err error) error {
		for _, p := range staged {
			_ = os.Remove(p.tmp)
		}
		return err
	}
	for _, f := range m.Result.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		cur, err := os.ReadFile(p)
		switch {
		case f.Generated && err == nil && !bytes.Equal(cur, f.New):
			return fail(fmt.Errorf("%s: %w (it exists now; move it away, or delete it, and run migrate again)", f.Path, ErrChanged))
		case !f.Generated && err != nil:
			return fail(fmt.Errorf("%s: %w", f.Path, err))
		case !f.Generated && !bytes.Equal(cur, f.Old):
			return fail(fmt.Errorf("%s: %w; run migrate again", f.Path, ErrChanged))
		}
		tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".codegenie-*")
		if err != nil {
			return fail(err)
		}
		staged = append(staged, pending{p, tmp.Name()})
		_, err = tmp.Write(f.New)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), f.Mode)
		}
		if err != nil {
			return fail(err)
		}
	}
	for i, s := range staged {
		if err := os.Rename(s.tmp, s.path); err != nil {
			for j, d := range done {
				f := m.Result.Files[j]
				if f.Generated {
					_ = os.Remove(d.path)
				} else {
					_ = os.WriteFile(d.path, f.Old, f.Mode)
				}
			}
			for _, r := range staged[i:] {
				_ = os.Remove(r.tmp)
			}
			return fmt.Errorf("writing %s: %w (the files written before it were put back)", s.path, err)
		}
		done = append(done, s)
	}
	m.Written = true
	return nil
}
