package recipe

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// Builder stages (rules glibc_builder, same_major_builder and bump_node):
// the stages whose node_modules ship move to glibc and the runtime's Node
// major.

// BuilderRef is the glibc builder image of a Node major: builder stages
// move to it (Input.Pins may hold its digest).
func BuilderRef(major int) string {
	return fmt.Sprintf("node:%d-bookworm-slim", major)
}

// builderRef is the glibc builder image of the service's major.
func (r *rewriter) builderRef() string { return BuilderRef(r.target.Major) }

// builderVariants are the official node image variants (the tag after the
// version) a glibc builder keeps when it moves to another major.
var builderVariants = map[string]bool{"": true, "slim": true, "bookworm": true, "bookworm-slim": true, "trixie": true, "trixie-slim": true}

// builderRefFor is the image a builder stage on base moves to: on an
// official glibc node image, the target major in base's own variant
// (node:18-bookworm becomes node:22-bookworm, so the compilers a full
// image has stay for native builds); else builderRef.
//
// A base that names a version of the target's major (node:24.14.0-alpine
// for Node 24) keeps that version, and the repository as written
// (docker.io/node): the author pinned it, so the rewrite moves off musl
// without moving the version (docker.io/node:24.14.0-bookworm-slim).
func (r *rewriter) builderRefFor(base string) string {
	if dockerfile.ClassifyBase(base) != dockerfile.BaseOfficialNode {
		return r.builderRef()
	}
	ref, _, _ := strings.Cut(base, "@")
	repo, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	if tag == "" || tag[0] < '0' || tag[0] > '9' {
		return r.builderRef() // latest, lts, current: no version to keep beside
	}
	version, variant, _ := strings.Cut(tag, "-")
	sameMajor := version == strconv.Itoa(r.target.Major) || strings.HasPrefix(version, strconv.Itoa(r.target.Major)+".")
	if strings.Contains(variant, "alpine") {
		if sameMajor && version != strconv.Itoa(r.target.Major) {
			return repo + ":" + version + "-bookworm-slim"
		}
		return r.builderRef()
	}
	if !builderVariants[variant] {
		return r.builderRef()
	}
	if variant != "" {
		variant = "-" + variant
	}
	if sameMajor {
		return repo + ":" + version + variant
	}
	return fmt.Sprintf("node:%d%s", r.target.Major, variant)
}

// builders moves builder stages to glibc and the runtime's Node major, as
// the native-ABI and version rules ask.
func (r *rewriter) builders() error {
	if !r.has(readiness.RuleGlibcBuilder) && !r.has(readiness.RuleSameMajor) && !r.has(readiness.RuleBumpNode) {
		return nil
	}
	// The stages to move are the roots (built from an image) of the
	// builder's chain and, when it is built from a stage, of the runtime
	// stage's chain.
	roots := map[int]bool{}
	for _, img := range r.in.Runtime.Images {
		if img.Builder != nil && img.Dockerfile == r.in.Dockerfile && img.Builder.Stage != r.t {
			roots[r.root(img.Builder.Stage)] = true
		}
	}
	if r.d.Stages[r.t].BaseStage >= 0 {
		roots[r.root(r.t)] = true
	}
	// Every stage whose musl-built native code ships (readiness.NativeStages):
	// a deps stage the runtime copies node_modules from, an alpine stage
	// whose shared object it copies; not only the builder node_runtime names.
	for _, a := range r.byRule[readiness.RuleGlibcBuilder] {
		for _, st := range a.Edit.Stages {
			if st >= 0 && st < len(r.d.Stages) && st != r.t {
				roots[r.root(st)] = true
			}
		}
	}
	done := map[int]bool{}
	var refs []string
	for i := range r.d.Stages {
		if !roots[i] {
			continue
		}
		st := r.d.Stages[i]
		musl := strings.Contains(st.ResolvedBase, "alpine")
		if !musl && noderuntime.NodeMajor(st.ResolvedBase) == r.target.Major && dockerfile.ClassifyBase(st.ResolvedBase) == dockerfile.BaseOfficialNode {
			continue
		}
		if dockerfile.ClassifyBase(st.ResolvedBase) != dockerfile.BaseOfficialNode && !musl {
			continue // not a node image: its Node comes from elsewhere
		}
		done[i] = true
		rule := readiness.RuleBumpNode
		for _, ru := range []string{readiness.RuleSameMajor, readiness.RuleGlibcBuilder} {
			if r.has(ru) {
				rule = ru
			}
		}
		ref := r.builderRefFor(st.ResolvedBase)
		if !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
		r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: from(st.Platform, r.baseRef(i, ref, rule), r.name(i))})
		if musl {
			for j := range r.d.Stages {
				if r.root(j) == i && j != r.t {
					if err := r.apkToApt(j); err != nil {
						return err
					}
				}
			}
		}
	}
	if len(done) > 0 {
		what := fmt.Sprintf("the builder runs on %s (glibc, Node %d), so native addons match the runtime", strings.Join(refs, " and "), r.target.Major)
		for _, rule := range []string{readiness.RuleGlibcBuilder, readiness.RuleSameMajor} {
			if r.has(rule) {
				r.change(rule, what)
			}
		}
	}
	if r.has(readiness.RuleBumpNode) {
		r.change(readiness.RuleBumpNode, fmt.Sprintf("Node moves to %d, the nearest major with a distroless image", r.target.Major))
	}
	return nil
}
