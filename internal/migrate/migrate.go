// Package migrate is the library behind `codegenie migrate`: it gathers a
// repository's static facts, runs the recipe on the judged image, proves
// the rewrite with the gates in the sandbox, and applies it atomically.
package migrate

import (
	"github.com/codegenie/codegenie/internal/buildnet"

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
	// BootFor, Settle, StepTimeout, RegistryMirrors, ProbePaths and
	// Timeout are the gate spawns'.
	BootFor         time.Duration
	Settle          time.Duration
	StepTimeout     time.Duration
	RegistryMirrors map[string]string
	ProbePaths      []string
	Timeout         time.Duration
	// BuildNet is the gate builds' network; nil is offline.
	BuildNet *buildnet.Settings
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
	c, err := openCheckout(dir)
	if err != nil {
		return nil, err
	}
	_, err = c.places(m.Result.Files)
	c.close()
	if err != nil {
		return nil, err
	}
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
		BootFor: o.BootFor, Settle: o.Settle, StepTimeout: o.StepTimeout, RegistryMirrors: o.RegistryMirrors, ProbePaths: probePaths(o.ProbePaths, m.Result.ProbePaths), Timeout: o.Timeout, BuildNet: o.BuildNet}
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
// are new files at their resolved places, written through an os.Root on
// the copy, so neither dir nor anything a link in it leads to is changed.
func workspace(dir, scratch string, res *recipe.Result) (string, func(), error) {
	c, err := openCheckout(dir)
	if err != nil {
		return "", nil, err
	}
	defer c.close()
	places, err := c.places(res.Files)
	if err != nil {
		return "", nil, err
	}
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
			return os.Symlink(c.relink(rel, l), dst)
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
		err = rewrite(work, places, res.Files)
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("making the rewritten workspace: %w", err)
	}
	return work, cleanup, nil
}

// rewrite writes each file's new bytes at its place in the workspace,
// after removing what is there (a hard link to the checkout's file).
func rewrite(work string, places []string, files []recipe.File) error {
	root, err := os.OpenRoot(work)
	if err != nil {
		return err
	}
	defer root.Close()
	for i, f := range files {
		if err := root.Remove(places[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := root.WriteFile(places[i], f.New, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// ErrChanged is a file that changed on disk since the rewrite read it.
var ErrChanged = errors.New("changed since the rewrite read it")

// Write applies the rewrite to dir atomically, through an os.Root on it:
// every file is written to a temporary file beside its resolved place
// first, then all are renamed into place; a failed rename puts back the
// files already renamed. A file whose place resolves outside dir is an
// *EscapeError; a symlinked file is written through its target, which
// keeps its mode and owner. A file that changed since the rewrite read it
// (or a generated file that now exists) stops the write before anything
// is replaced.
func (m *Migration) Write(dir string) error {
	c, err := openCheckout(dir)
	if err != nil {
		return err
	}
	defer c.close()
	places, err := c.places(m.Result.Files)
	if err != nil {
		return err
	}
	var staged []string
	fail := func(err error) error {
		for _, tmp := range staged {
			_ = c.root.Remove(tmp)
		}
		return err
	}
	for i, f := range m.Result.Files {
		cur, err := c.root.ReadFile(places[i])
		switch {
		case f.Generated && err == nil && !bytes.Equal(cur, f.New):
			return fail(fmt.Errorf("%s: %w (it exists now; move it away, or delete it, and run migrate again)", f.Path, ErrChanged))
		case !f.Generated && err != nil:
			return fail(fmt.Errorf("%s: %w", f.Path, err))
		case !f.Generated && !bytes.Equal(cur, f.Old):
			return fail(fmt.Errorf("%s: %w; run migrate again", f.Path, ErrChanged))
		}
		tmp, err := c.stage(places[i], f.New, f.Mode)
		if err != nil {
			return fail(fmt.Errorf("writing %s: %w", f.Path, err))
		}
		staged = append(staged, tmp)
	}
	for i, tmp := range staged {
		if err := c.root.Rename(tmp, places[i]); err != nil {
			for j, f := range m.Result.Files[:i] {
				if f.Generated {
					_ = c.root.Remove(places[j])
				} else {
					_ = c.root.WriteFile(places[j], f.Old, f.Mode)
				}
			}
			for _, r := range staged[i:] {
				_ = c.root.Remove(r)
			}
			return fmt.Errorf("writing %s: %w (the files written before it were put back)", m.Result.Files[i].Path, err)
		}
	}
	m.Written = true
	return nil
}
