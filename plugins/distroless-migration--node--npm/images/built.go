package images

import (
	"context"
	"encoding/json"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// BuildPatterns find the files that say which images the repository
// builds under which names, for declared inputs: CI workflows, Makefiles
// and shell scripts (compose files are ComposePatterns).
var BuildPatterns = []string{
	".github/workflows/*.yml", ".github/workflows/*.yaml", "**/Makefile", "**/*.mk", "**/*.sh",
	"package.json", "*/package.json", "*/*/package.json",
}

// BuiltImage is an image the repository builds from one of its own
// Dockerfiles and tags with a name, so that another Dockerfile's FROM or
// COPY --from of that name is read through it.
type BuiltImage struct {
	// Name is the image's repository, without tag or digest
	// (dockerfile.ImageRepo), and Ref its name:tag (tagged).
	Name string `json:"name"`
	Ref  string `json:"ref"`
	// Dockerfile and Context are repository-relative.
	Dockerfile string `json:"dockerfile"`
	Context    string `json:"context"`
	Target     string `json:"target,omitempty"`
	// Source is the file and line that build it.
	Source string `json:"source"`
}

// Build returns the Dockerfile among parsed that builds bi, as built for
// its target; nil when it is not there or did not parse.
func (bi BuiltImage) Build(parsed []Parsed) *dockerfile.File {
	var f *dockerfile.File
	for _, pf := range parsed {
		if pf.Path == bi.Dockerfile && pf.File != nil {
			f = pf.File
		}
	}
	if f == nil {
		return nil
	}
	i, ok := f.StageRef(bi.Target)
	if !ok {
		i = f.Final
	}
	return f.AsTarget(i)
}

// BuiltImages are the images the repository builds, by name, and by name
// and tag. A name that two different builds give is left out of ByName,
// and a name and tag two builds give out of ByTag: which one a FROM means
// is not known.
type BuiltImages struct {
	ByName map[string]BuiltImage
	// ByTag holds each build by name:tag (latest when the tag names
	// none), for a name whose tags different builds give (dockge tags its
	// base louislam/dockge:base and its app louislam/dockge:1).
	ByTag map[string]BuiltImage
}

// Lookup returns the build of the image ref names: the one that gives its
// tag, else the one that gives its name, whatever the tag.
func (b *BuiltImages) Lookup(ref string) (BuiltImage, bool) {
	if b == nil || ref == "" || strings.Contains(ref, "$") {
		return BuiltImage{}, false
	}
	if bi, ok := b.ByTag[tagged(ref)]; ok {
		return bi, true
	}
	bi, ok := b.ByName[dockerfile.ImageRepo(ref)]
	return bi, ok
}

// tagged is ref as name:tag, the tag latest when ref gives none.
func tagged(ref string) string {
	return dockerfile.ImageRepo(ref) + ":" + dockerfile.ImageTag(ref)
}

// Built is the derived fact of the images the repository builds and the
// names it gives them: a compose service's image beside its build, a CI
// workflow's docker/build-push-action step (file, context, target, tags),
// and the docker build, podman build and buildah bud commands of workflow
// run steps, Makefile recipes and shell scripts.
var Built = &probe.Analyzer[*BuiltImages]{
	Name: "built_images",
	Run: func(ctx context.Context, repo *probe.Repo, _ *probe.Context) (*BuiltImages, error) {
		parsed, err := ParseAll(ctx, repo)
		if err != nil {
			return nil, err
		}
		dockerfiles := map[string]bool{}
		for _, pf := range parsed {
			dockerfiles[pf.Path] = true
		}
		comp, err := Compose.Of(ctx, repo, nil)
		if err != nil {
			return nil, err
		}
		var found []BuiltImage
		for _, cb := range comp.Builds {
			if cb.Image != "" && !strings.Contains(cb.Image, "$") && dockerfiles[cb.Dockerfile] {
				found = append(found, BuiltImage{Name: dockerfile.ImageRepo(cb.Image), Ref: tagged(cb.Image), Dockerfile: cb.Dockerfile,
					Context: cb.Context, Target: cb.Target, Source: cb.File + ":" + strconv.Itoa(cb.Line)})
			}
		}
		err = eachFile(ctx, repo, BuildPatterns, func(m string, data []byte, err error) {
			if err != nil {
				return // unreadable (a symlink out, a FIFO): it names no build here
			}
			var runs []runText
			switch {
			case strings.HasPrefix(m, ".github/workflows/"):
				var steps []BuiltImage
				steps, runs = workflowBuilds(m, data)
				for _, s := range steps {
					if dockerfiles[s.Dockerfile] {
						found = append(found, s)
					}
				}
			case path.Base(m) == "Makefile" || strings.HasSuffix(m, ".mk"):
				runs = makeRecipes(m, string(data))
			case path.Base(m) == "package.json":
				if strings.Contains(m, "node_modules/") {
					return
				}
				runs = packageScripts(m, data)
			default:
				runs = []runText{{file: m, line: 1, dir: path.Dir(m), src: string(data)}}
			}
			for _, r := range runs {
				found = append(found, r.builds(dockerfiles)...)
			}
		})
		if err != nil {
			return nil, err
		}
		return collect(found), nil
	},
}

// collect indexes builds by name; a name two different builds give is
// dropped.
func collect(found []BuiltImage) *BuiltImages {
	out := &BuiltImages{ByName: map[string]BuiltImage{}, ByTag: map[string]BuiltImage{}}
	index := func(by map[string]BuiltImage, clash map[string]bool, key string, b BuiltImage) {
		if key == "" || clash[key] {
			return
		}
		prev, ok := by[key]
		switch {
		case !ok:
			by[key] = b
		case prev.Dockerfile != b.Dockerfile || prev.Context != b.Context || prev.Target != b.Target:
			delete(by, key)
			clash[key] = true
		}
	}
	nameClash, tagClash := map[string]bool{}, map[string]bool{}
	for _, b := range found {
		index(out.ByName, nameClash, b.Name, b)
		index(out.ByTag, tagClash, b.Ref, b)
	}
	return out
}

// runText is shell text that runs in dir (repository-relative), from
// file's line.
type runText struct {
	file string
	line int
	dir  string
	src  string
	env  map[string]string
}

// builds are the image builds of r that name a Dockerfile of the
// repository. A relative path is read from r's directory, else from the
// repository root (a script run from the root, as CI runs most).
func (r runText) builds(dockerfiles map[string]bool) []BuiltImage {
	var out []BuiltImage
	for _, ib := range shellcmd.DockerBuilds(r.src, r.env) {
		for _, dir := range []string{r.dir, "."} {
			bctx := path.Clean(path.Join(dir, ib.Context))
			df := path.Join(bctx, "Dockerfile")
			if ib.Dockerfile != "" {
				df = path.Clean(path.Join(dir, ib.Dockerfile))
			}
			if !dockerfiles[df] || strings.HasPrefix(bctx, "..") || path.IsAbs(bctx) {
				continue
			}
			for _, tag := range ib.Tags {
				out = append(out, BuiltImage{Name: dockerfile.ImageRepo(tag), Ref: tagged(tag), Dockerfile: df, Context: bctx,
					Target: ib.Target, Source: r.file + ":" + strconv.Itoa(r.line+ib.Line-1)})
			}
			break
		}
	}
	return out
}

// packageScripts are a package.json's scripts, each a line npm runs with
// sh in the package's folder ("build:docker-base": "docker buildx build
// -t louislam/dockge:base -f ./docker/Base.Dockerfile ."), with the line
// of its name.
func packageScripts(file string, data []byte) []runText {
	var pj struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(data, &pj) != nil {
		return nil
	}
	names := make([]string, 0, len(pj.Scripts))
	for name := range pj.Scripts {
		names = append(names, name)
	}
	slices.Sort(names)
	text := string(data)
	var out []runText
	for _, name := range names {
		line := 1
		if i := strings.Index(text, strconv.Quote(name)+":"); i >= 0 {
			line += strings.Count(text[:i], "\n")
		} else if i := strings.Index(text, strconv.Quote(name)); i >= 0 {
			line += strings.Count(text[:i], "\n")
		}
		out = append(out, runText{file: file, line: line, dir: path.Dir(file), src: pj.Scripts[name]})
	}
	return out
}

// makeRecipes are a Makefile's recipe lines (those that start with a
// tab), joined where a backslash continues them, with make's own prefixes
// (@, -, +) taken off. A make variable ($(NAME)) is a command substitution
// to the shell, so a word that uses one is unknown.
func makeRecipes(file, src string) []runText {
	var out []runText
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "\t") {
			continue
		}
		start := i
		text := strings.TrimLeft(strings.TrimSpace(lines[i]), "@-+")
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(lines[i])
		}
		out = append(out, runText{file: file, line: start + 1, dir: path.Dir(file), src: strings.ReplaceAll(text, "$$", "$")})
	}
	return out
}

// workflowBuilds reads a GitHub Actions workflow: its build-push-action
// steps, and its run steps as shell text. ${{ env.NAME }} expands from the
// workflow's, the job's and the step's env; any other expression is not
// known here.
func workflowBuilds(file string, data []byte) ([]BuiltImage, []runText) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	top := envOf(root, nil)
	jobs := mapValue(root, "jobs")
	if jobs == nil || jobs.Kind != yaml.MappingNode {
		return nil, nil
	}
	var steps []BuiltImage
	var runs []runText
	for i := 1; i < len(jobs.Content); i += 2 {
		job := jobs.Content[i]
		list := mapValue(job, "steps")
		if list == nil || list.Kind != yaml.SequenceNode {
			continue
		}
		for _, jenv := range matrixEnvs(job, envOf(job, top)) {
			s, r := jobBuilds(file, list, jenv)
			steps, runs = append(steps, s...), append(runs, r...)
		}
	}
	return steps, runs
}

// matrixEnvs is env once per entry of the job's strategy.matrix.include
// (its values as matrix.NAME, which ghExpand reads), or env alone.
func matrixEnvs(job *yaml.Node, env map[string]string) []map[string]string {
	inc := mapValue(mapValue(mapValue(job, "strategy"), "matrix"), "include")
	if inc == nil || inc.Kind != yaml.SequenceNode {
		return []map[string]string{env}
	}
	var out []map[string]string
	for _, entry := range inc.Content {
		if entry.Kind != yaml.MappingNode {
			continue
		}
		e := maps.Clone(env)
		for k := 0; k+1 < len(entry.Content); k += 2 {
			if v := entry.Content[k+1]; v.Kind == yaml.ScalarNode {
				e["matrix."+entry.Content[k].Value] = v.Value
			}
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return []map[string]string{env}
	}
	return out
}

// jobBuilds reads one job's steps (under one matrix entry's values): its
// build-push-action steps, named by their tags, by the images of the
// metadata-action step those tags come from, or by the name of an image
// output; and its run steps' text.
func jobBuilds(file string, list *yaml.Node, jenv map[string]string) ([]BuiltImage, []runText) {
	var steps []BuiltImage
	var runs []runText
	meta := map[string][]string{} // a metadata-action step's id: its images
	for _, st := range list.Content {
		env := envOf(st, jenv)
		if uses := scalar(mapValue(st, "uses")); strings.Contains(uses, "/metadata-action@") {
			if id := scalar(mapValue(st, "id")); id != "" {
				meta[id] = metadataImages(scalar(mapValue(mapValue(st, "with"), "images")), env)
			}
			continue
		}
		if uses := scalar(mapValue(st, "uses")); strings.Contains(uses, "/build-push-action@") {
			with := mapValue(st, "with")
			get := func(k string) (string, bool) {
				n := mapValue(with, k)
				if n == nil {
					return "", true
				}
				return ghExpand(scalar(n), env)
			}
			bctx, okC := get("context")
			df, okF := get("file")
			target, okT := get("target")
			tags := scalar(mapValue(with, "tags"))
			if !okC || !okF || !okT {
				continue
			}
			if bctx == "" {
				bctx = "."
			}
			bctx = path.Clean(bctx)
			if df == "" {
				df = path.Join(bctx, "Dockerfile")
			}
			line := st.Line
			if n := mapValue(with, "tags"); n != nil {
				line = n.Line
			}
			build := BuiltImage{Dockerfile: path.Clean(df), Context: bctx, Target: target, Source: file + ":" + strconv.Itoa(line)}
			for _, tag := range strings.FieldsFunc(tags, func(r rune) bool { return r == '\n' || r == ',' }) {
				if m := stepsOutput.FindStringSubmatch(tag); m != nil {
					// ${{ steps.meta.outputs.tags }}: the names the
					// metadata step gives, with tags it makes up.
					for _, name := range meta[m[1]] {
						build.Name, build.Ref = dockerfile.ImageRepo(name), ""
						steps = append(steps, build)
					}
					continue
				}
				tag, ok := ghExpand(strings.TrimSpace(tag), env)
				if !ok || tag == "" {
					continue
				}
				build.Name, build.Ref = dockerfile.ImageRepo(tag), tagged(tag)
				steps = append(steps, build)
			}
			if tags == "" {
				// outputs: type=image,name=NAME,push-by-digest=true
				if n := mapValue(with, "outputs"); n != nil {
					build.Source = file + ":" + strconv.Itoa(n.Line)
					for _, kv := range strings.Split(scalar(n), ",") {
						if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "name="); ok {
							if name, ok := ghExpand(v, env); ok && name != "" && !strings.Contains(name, "$") {
								build.Name = dockerfile.ImageRepo(name)
								steps = append(steps, build)
							}
						}
					}
				}
			}
			continue
		}
		run := mapValue(st, "run")
		if run == nil || run.Kind != yaml.ScalarNode {
			continue
		}
		dir := "."
		if wd, ok := ghExpand(scalar(mapValue(st, "working-directory")), env); ok && wd != "" {
			dir = path.Clean(wd)
		}
		src, _ := ghExpand(run.Value, env)
		line := run.Line
		if run.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			line++ // the text starts on the line after the | or >
		}
		runs = append(runs, runText{file: file, line: line, dir: dir, src: src, env: env})
	}
	return steps, runs
}

// stepsOutput is a tags value that is a metadata step's output.
var stepsOutput = regexp.MustCompile(`^\s*\$\{\{\s*steps\.([\w-]+)\.outputs\.tags\s*\}\}\s*$`)

// metadataImages reads docker/metadata-action's images input: one image
// per line or comma, each a name or name=NAME with attributes.
func metadataImages(s string, env map[string]string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "name=") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "name="), ",")
			line = name
			if name, ok := ghExpand(line, env); ok && name != "" {
				out = append(out, name)
			}
			continue
		}
		for _, name := range strings.Split(line, ",") {
			if name, ok := ghExpand(strings.TrimSpace(name), env); ok && name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}

// envOf is parent's env with n's env section on top.
func envOf(n *yaml.Node, parent map[string]string) map[string]string {
	out := make(map[string]string, len(parent))
	for k, v := range parent {
		out[k] = v
	}
	env := mapValue(n, "env")
	if env == nil || env.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(env.Content); i += 2 {
		if v := env.Content[i+1]; v.Kind == yaml.ScalarNode {
			if s, ok := ghExpand(v.Value, parent); ok {
				out[env.Content[i].Value] = s
				continue
			}
		}
		delete(out, env.Content[i].Value) // set, to a value not known here
	}
	return out
}

var ghExpr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// ghExpand replaces ${{ env.NAME }} with its value. ok is false when the
// text holds an expression that is not known here; the expression is then
// replaced with a command substitution, which leaves the shell word it
// stands in unknown.
func ghExpand(s string, env map[string]string) (string, bool) {
	ok := true
	out := ghExpr.ReplaceAllStringFunc(s, func(m string) string {
		expr := ghExpr.FindStringSubmatch(m)[1]
		name, isEnv := strings.CutPrefix(expr, "env.")
		if v, set := env[name]; isEnv && set {
			return v
		}
		if v, set := env[expr]; strings.HasPrefix(expr, "matrix.") && set {
			return v // a matrix entry's value (matrixEnvs)
		}
		ok = false
		return "$(unknown)"
	})
	return out, ok
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}
