// Package nodenpm is the distroless-migration plugin for Node.js services
// built with npm, yarn or pnpm. It contributes probes (under probes/) that
// gather evidence on whether a service can run on a distroless image, and
// the distroless_readiness assessor that turns the evidence into a verdict.
//
// Probes here may do privileged work only through the sandbox.Client in
// their probe.Context; they never start processes themselves.
package nodenpm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/entrypoints"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// Task is the task this plugin serves.
const Task = "distroless-migration"

// Register adds the plugin's probes, warnings and assessor to reg.
func Register(reg *probe.Registry) {
	w := reg.Warnings()
	w.MustRegister(nodeproject.Warnings...)
	w.MustRegister(dockerfileprobe.Warnings...)
	w.MustRegister(npmscripts.Warnings...)
	w.MustRegister(entrypoints.Warnings...)
	w.MustRegister(noderuntime.Warnings...)
	w.MustRegister(childprocess.Warnings...)
	w.MustRegister(shelltrace.Warnings...)
	w.MustRegister(readiness.Warnings...)
	reg.MustRegister(
		nodeproject.New(),
		dockerfileprobe.New(),
		npmscripts.New(),
		entrypoints.New(),
		noderuntime.New(),
		childprocess.New(),
		shelltrace.New(),
	)
	if err := reg.RegisterAssessor(readiness.New(Task)); err != nil {
		panic(err)
	}
	if err := reg.RegisterImageSelector(Task, images.Selector{}); err != nil {
		panic(err)
	}
}

// RewriteOptions tune Rewrite.
type RewriteOptions struct {
	// TargetImage is a --target-image reference; empty picks the default
	// distroless image for the service's Node major.
	TargetImage string
	// Digest resolves the target's reference to its manifest digest, to pin
	// it, and the builder image's when the Dockerfile pins a base by
	// digest; nil, or an error, leaves the tag unpinned (and the change
	// list says a pin must be refreshed).
	Digest func(ctx context.Context, ref string) (string, error)
	// MirroredBy names the registry mirrors Digest asks first for ref
	// ("" for none): a pin read from one is the mirror's digest.
	MirroredBy func(ref string) string
}

// Rewrite runs the migrate recipe on the gathered probe results of the
// repository at dir (one image's): the readiness plan, then the rewrite of
// its Dockerfile to the target image.
func Rewrite(ctx context.Context, dir string, results []probe.Result, o RewriteOptions) (*recipe.Result, error) {
	repo, err := probe.OpenRepo(dir)
	if err != nil {
		return nil, err
	}
	plan, err := readiness.New(Task).Plan(results)
	if err != nil {
		return nil, err
	}
	in, err := recipe.Prepare(results, plan, repo.ReadFile)
	if err != nil {
		return nil, err
	}
	major, _ := recipe.Major(in.Runtime)
	t := recipe.DefaultTarget(major)
	if o.TargetImage != "" {
		if t, err = recipe.LookupTarget(o.TargetImage, major); err != nil {
			return nil, &TargetError{Err: err}
		}
	}
	if t.Digest == "" && o.Digest != nil {
		if d, err := o.Digest(ctx, t.Ref); err == nil {
			t.Digest = d
		}
	}
	in.Target, in.TargetChosen = &t, o.TargetImage != ""
	// The root variant the rewrite picks for a service that needs root
	// (recipe.DecideUser) is pinned like the target.
	if rv, ok := recipe.RootVariant(t); ok && o.Digest != nil && !in.TargetChosen && recipe.DecideUser(plan.NonRoot, t, false, "").Root != nil {
		if d, err := o.Digest(ctx, rv.Ref); err == nil {
			in.Pins = map[string]string{rv.Ref: d}
		}
	}
	// A stage pinned by digest that moves to the builder image stays
	// pinned, when its digest resolves.
	if o.Digest != nil && slices.ContainsFunc(in.File.Stages, func(s dockerfile.Stage) bool { return strings.Contains(s.Base, "@") }) {
		ref := recipe.BuilderRef(t.Major)
		if d, err := o.Digest(ctx, ref); err == nil {
			if in.Pins == nil {
				in.Pins = map[string]string{}
			}
			in.Pins[ref] = d
		}
	}
	res, err := recipe.Rewrite(in)
	if err != nil || res == nil || o.MirroredBy == nil {
		return res, err
	}
	// A pull-through mirror serves the registry's own digests; a stand-in
	// (codegenie dev images serve) or a rebuilt copy does not, and the pin
	// would name an image the real registry lacks.
	pinned := map[string]string{}
	if t.Digest != "" {
		pinned[t.Ref] = t.Digest
	}
	maps.Copy(pinned, in.Pins)
	for _, ref := range slices.Sorted(maps.Keys(pinned)) {
		if m := o.MirroredBy(ref); m != "" && !strings.Contains(ref, "@") {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s is pinned to %s, the digest the registry mirror %s serves: a pull-through mirror serves the registry's own, a stand-in or rebuilt image does not; check it against the registry before merging", ref, pinned[ref], m))
		}
	}
	return res, nil
}

// TargetError is a --target-image the table does not know.
type TargetError struct{ Err error }

func (e *TargetError) Error() string { return e.Err.Error() }
func (e *TargetError) Unwrap() error { return e.Err }
