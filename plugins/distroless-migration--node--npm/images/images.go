// Package images knows which images a repository builds and which one a
// run judges. Each Dockerfile is an image of its own; the stage that ships
// is the one --target names, else the one a compose file's build.target
// names for that Dockerfile, else the last stage. It also derives, once per
// judged image, the view of its Dockerfile as built for that target and the
// set of repository files the final image holds.
//
// It reads files only; it never builds anything.
package images

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// Selector is the plugin's probe.ImageSelector.
type Selector struct{}

var _ probe.ImageSelector = Selector{}

// Images lists every Dockerfile with its default target.
func (Selector) Images(ctx context.Context, repo *probe.Repo) ([]probe.ImageRef, error) {
	files, err := ParseAll(ctx, repo)
	if err != nil {
		return nil, err
	}
	comp, err := Compose.Of(ctx, repo, nil)
	if err != nil {
		return nil, err
	}
	out := make([]probe.ImageRef, 0, len(files))
	for _, pf := range files {
		ref, err := pick(pf, comp, "", "")
		if err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, nil
}

// KeepsDevDependencies reports whether the image ref ships the
// development packages its install installs: a stage that feeds it
// installs from a lockfile, and nothing leaves them out (no --omit=dev,
// --production, prune or NODE_ENV=production; FileSet).
func (Selector) KeepsDevDependencies(ctx context.Context, repo *probe.Repo, ref probe.ImageRef) (bool, error) {
	set, err := Files.Of(ctx, repo, &probe.Context{Image: ref})
	if err != nil || set == nil {
		return false, err
	}
	return set.InstallsDependencies && !set.OmitsDevDependencies, nil
}

// Select picks the image to judge.
func (Selector) Select(ctx context.Context, repo *probe.Repo, file, target string) (probe.ImageRef, error) {
	files, err := ParseAll(ctx, repo)
	if err != nil {
		return probe.ImageRef{}, err
	}
	comp, err := Compose.Of(ctx, repo, nil)
	if err != nil {
		return probe.ImageRef{}, err
	}
	var paths []string
	for _, pf := range files {
		paths = append(paths, pf.Path)
	}
	var why string
	var chosen *Parsed
	switch {
	case file != "":
		want := path.Clean(strings.TrimPrefix(filepathToSlash(file), "./"))
		for i := range files {
			if files[i].Path == want {
				chosen = &files[i]
			}
		}
		if chosen == nil {
			return probe.ImageRef{}, &probe.SelectionError{Msg: fmt.Sprintf("--dockerfile %s: no such Dockerfile in the repository", file), Choices: paths}
		}
		why = "--dockerfile " + file
	case len(files) == 0:
		if target != "" {
			return probe.ImageRef{}, &probe.SelectionError{Msg: "--target " + target + ": the repository has no Dockerfile"}
		}
		return probe.ImageRef{}, nil
	default:
		for i := range files {
			if files[i].Path == "Dockerfile" {
				chosen, why = &files[i], "the Dockerfile at the repository root"
			}
		}
		if chosen == nil && len(files) == 1 {
			chosen, why = &files[0], "the repository's only Dockerfile"
		}
		if chosen == nil {
			return probe.ImageRef{}, &probe.SelectionError{
				Msg:     "the repository has several Dockerfiles and none at its root; pick one with --dockerfile, or judge each with --all-images",
				Choices: paths}
		}
	}
	ref, err := pick(*chosen, comp, target, why)
	if err != nil {
		return probe.ImageRef{}, err
	}
	return ref, nil
}

func filepathToSlash(p string) string { return strings.ReplaceAll(p, `\`, "/") }

// pick chooses the target of one Dockerfile and says why.
func pick(pf Parsed, comp *ComposeFile, target, why string) (probe.ImageRef, error) {
	ref := probe.ImageRef{Dockerfile: pf.Path}
	add := func(s string) {
		if why == "" {
			why = s
		} else {
			why += "; " + s
		}
	}
	cb, hasCompose := composeFor(comp, pf)
	f := pf.File
	switch {
	case f == nil:
		ref.Target = target
		add("the Dockerfile could not be read, so no stage can be judged")
	case target != "":
		i, ok := f.StageRef(target)
		if !ok {
			var names []string
			for j := range f.Stages {
				names = append(names, f.StageName(j))
			}
			return probe.ImageRef{}, &probe.SelectionError{Msg: fmt.Sprintf("--target %s: %s has no such stage", target, pf.Path), Choices: names}
		}
		ref.Target = f.StageName(i)
		add("target " + ref.Target + " from --target")
	case hasCompose && cb.Target != "" && IsDevCompose(cb.File):
		// A development compose file says what a developer runs, never
		// what ships.
		ref.Target = f.StageName(f.Final)
		add(fmt.Sprintf("the last stage (%s); %s:%d names target %s, but a development compose file does not choose the judged target", ref.Target, cb.File, cb.Line, cb.Target))
	case hasCompose && cb.Target != "":
		if i, ok := f.StageRef(cb.Target); ok {
			ref.Target = f.StageName(i)
			add(fmt.Sprintf("target %s named by %s:%d (service %s, build.target)", ref.Target, cb.File, cb.Line, cb.Service))
			break
		}
		ref.Target = f.StageName(f.Final)
		add(fmt.Sprintf("%s:%d names target %s, which %s lacks; the last stage (%s) instead", cb.File, cb.Line, cb.Target, pf.Path, ref.Target))
	default:
		ref.Target = f.StageName(f.Final)
		add("the last stage (" + ref.Target + ")")
	}
	ref.Why = why
	return ref, nil
}

// composeFor finds the compose build that says how a Dockerfile ships:
// a main compose file's before another's, development files' last; among
// builds of one rank, the one that builds the latest stage (no target is
// the last stage), so a main file that builds both a dev and a prod stage
// names prod; then file order.
func composeFor(comp *ComposeFile, pf Parsed) (ComposeBuild, bool) {
	var best ComposeBuild
	bestRank, bestStage := -1, -1
	for _, b := range comp.Builds {
		if b.Dockerfile != pf.Path {
			continue
		}
		stage := -1
		if pf.File != nil {
			stage = pf.File.Final
			if b.Target != "" {
				if i, ok := pf.File.StageRef(b.Target); ok {
					stage = i
				}
			}
		}
		rank := composeRank(b.File)
		if rank > bestRank || rank == bestRank && stage > bestStage {
			best, bestRank, bestStage = b, rank, stage
		}
	}
	return best, bestRank >= 0
}

// composeRank ranks a compose file: the main one (docker-compose.yml,
// compose.yaml, a .prod one) above others, development files last.
func composeRank(file string) int {
	if IsDevCompose(file) {
		return 0
	}
	switch strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(path.Base(file)), ".yml"), ".yaml") {
	case "docker-compose", "compose":
		return 2
	}
	return 1
}

// devComposeWords mark a compose file name as a development one
// (docker-compose.dev.yml, compose.override.yaml, docker-compose-test.yml).
var devComposeWords = []string{"override", "dev", "development", "test", "tests", "local", "debug", "e2e", "ci"}

// devComposeDirs are folders whose compose files run tests, not the
// service that ships.
var devComposeDirs = map[string]bool{"test": true, "tests": true, "e2e": true, "__tests__": true, "integration-tests": true}

// IsDevCompose reports whether a compose file is a development one: named
// as an override, dev, test, local, debug, e2e or ci file, or kept under a
// test or e2e folder. Such a file never chooses the judged target, and its
// services' command, entrypoint and healthcheck are not the shipped
// image's.
func IsDevCompose(file string) bool {
	base := strings.ToLower(path.Base(file))
	for _, w := range devComposeWords {
		if strings.Contains(base, "."+w+".") || strings.Contains(base, "-"+w+".") || strings.Contains(base, "_"+w+".") {
			return true
		}
	}
	for _, seg := range strings.Split(strings.ToLower(path.Dir(file)), "/") {
		if devComposeDirs[seg] {
			return true
		}
	}
	return false
}

// ServiceFor returns the compose build whose service runs the judged
// image: one that builds the same Dockerfile (f, at dockerfilePath) and the
// same stage (a build.target that names it, or none when it is the last
// stage), from a compose file that is not a development one; a main
// compose file's first. Its command, entrypoint and healthcheck are the
// judged image's as compose runs it; another service's are another
// image's.
func ServiceFor(builds []ComposeBuild, f *dockerfile.File, dockerfilePath string, stage int) (ComposeBuild, bool) {
	var best ComposeBuild
	bestRank := 0
	for _, b := range builds {
		if b.Dockerfile != dockerfilePath || f == nil {
			continue
		}
		built := f.Final
		if b.Target != "" {
			i, ok := f.StageRef(b.Target)
			if !ok {
				continue // the build fails: it runs nothing
			}
			built = i
		}
		if built != stage {
			continue
		}
		// A service that builds the image wins over one of the same rank
		// that runs it by its published name.
		r := 2 * composeRank(b.File)
		if b.Published == "" {
			r++
		}
		if r > bestRank {
			best, bestRank = b, r
		}
	}
	return best, bestRank > 1
}

// PublishedRuns are the compose services of runs whose image the
// repository builds and names (built.Lookup; a variable tag, as in
// svhd/logto:${TAG-latest}, is looked up by name), each with that
// build's Dockerfile, context and target and Published set.
func PublishedRuns(runs []ComposeBuild, built *BuiltImages) []ComposeBuild {
	var out []ComposeBuild
	for _, r := range runs {
		bi, ok := built.Lookup(r.Image)
		if !ok && built != nil {
			if name := dockerfile.ImageRepo(r.Image); !strings.Contains(name, "$") {
				bi, ok = built.ByName[name]
			}
		}
		if !ok {
			continue
		}
		r.Context, r.Dockerfile, r.Target, r.Published = bi.Context, bi.Dockerfile, bi.Target, bi.Source
		out = append(out, r)
	}
	return out
}

// Judged is the judged image: its Dockerfile as built for the target.
type Judged struct {
	Ref probe.ImageRef
	// Parsed is the Dockerfile; Parsed.File is nil when it did not parse.
	Parsed Parsed
	// File is the Dockerfile as built for the target (dockerfile.File.AsTarget);
	// nil when it did not parse.
	File *dockerfile.File
	// Context is the build context, repository-relative ("." for the root):
	// a compose file's build.context, else the Dockerfile's folder.
	Context string
	// ContextWhy says where Context comes from.
	ContextWhy string
}

// Image is the derived fact of the judged image (nil when the repository
// has no Dockerfile).
var Image = &probe.Analyzer[*Judged]{
	Name:     "judged_image",
	PerImage: true,
	Run: func(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (*Judged, error) {
		ref := probe.ImageRef{}
		if pctx != nil {
			ref = pctx.Image
		}
		if ref.IsZero() {
			// No selection from the driver (a probe run on its own): the
			// default one.
			var err error
			if ref, err = (Selector{}).Select(ctx, repo, "", ""); err != nil || ref.IsZero() {
				return nil, err
			}
		}
		files, err := ParseAll(ctx, repo)
		if err != nil {
			return nil, err
		}
		comp, err := Compose.Of(ctx, repo, nil)
		if err != nil {
			return nil, err
		}
		for _, pf := range files {
			if pf.Path != ref.Dockerfile {
				continue
			}
			j := &Judged{Ref: ref, Parsed: pf}
			if cb, ok := composeFor(comp, pf); ok {
				j.Context, j.ContextWhy = cb.Context, fmt.Sprintf("build.context of %s:%d", cb.File, cb.Line)
			} else {
				j.Context, j.ContextWhy = guessContext(repo, pf)
			}
			if pf.File != nil {
				i, ok := pf.File.StageRef(ref.Target)
				if !ok {
					i = pf.File.Final
				}
				j.File = pf.File.AsTarget(i)
			}
			return j, nil
		}
		return nil, fmt.Errorf("judged image %s is not among the repository's Dockerfiles", ref.Dockerfile)
	},
}

// Inputs are the declared inputs any probe that reads the judged image
// needs: the Dockerfiles, the compose files, the files that name the
// images the repository builds (Built) and the .dockerignore files the
// image's file set is read through.
func Inputs() []string {
	out := append(append(append([]string{}, dockerfile.Patterns...), ComposePatterns...), BuildPatterns...)
	return append(out, "**/.dockerignore", "**/*.dockerignore")
}

// guessContext picks the build context of a Dockerfile no compose file
// builds: its own folder, unless more of the files its COPY instructions
// name are only at the repository root than only beside it
// (docker/Dockerfile built with `docker build -f docker/Dockerfile .`; a
// monorepo's apps/web/Dockerfile that copies package.json, which both
// folders have, and turbo.json, which only the root has).
func guessContext(repo *probe.Repo, pf Parsed) (string, string) {
	dir := path.Dir(pf.Path)
	if dir == "." || pf.File == nil {
		return dir, contextGuessWhy
	}
	here, root := 0, 0
	for _, st := range pf.File.Stages {
		for _, in := range st.Instructions {
			if (in.Command != "copy" && in.Command != "add") || in.From != "" || len(in.Args) < 2 {
				continue
			}
			for _, src := range in.Args[:len(in.Args)-1] {
				src = path.Clean(strings.TrimPrefix(src, "./"))
				if src == "." || strings.ContainsAny(src, "*?[$") || strings.Contains(src, "://") {
					continue
				}
				// A source in both places (a package.json of the app's
				// folder and of the workspace root) tells nothing.
				switch inDir, inRoot := exists(repo, path.Join(dir, src)), exists(repo, src); {
				case inDir && !inRoot:
					here++
				case inRoot && !inDir:
					root++
				}
			}
		}
	}
	if root > here {
		return ".", "the repository root: the files its COPY instructions name are there, not beside it"
	}
	return dir, contextGuessWhy
}

// contextGuessWhy says a build context was taken to be the Dockerfile's
// folder for want of a compose file naming it.
const contextGuessWhy = "the Dockerfile's folder"

func exists(repo *probe.Repo, rel string) bool {
	if repo.Exists(rel) {
		return true
	}
	fs, err := repo.Glob(rel + "/**")
	return err == nil && len(fs) > 0
}

// Selected returns the judged Dockerfile as the one-element list the
// probes iterate over, its File the view for the target; empty when the
// repository has no Dockerfile.
func Selected(ctx context.Context, repo *probe.Repo, pctx *probe.Context) ([]Parsed, error) {
	j, err := Image.Of(ctx, repo, pctx)
	if err != nil || j == nil {
		return nil, err
	}
	pf := j.Parsed
	pf.File = j.File
	return []Parsed{pf}, nil
}
