package images

import (
	"context"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/codegenie/codegenie/internal/probe"
)

// ComposePatterns find compose files, for declared inputs.
var ComposePatterns = []string{
	"**/docker-compose*.yml", "**/docker-compose*.yaml", "**/compose*.yml", "**/compose*.yaml",
}

// ComposeBuild is one compose service's build section.
type ComposeBuild struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Service string `json:"service"`
	// Context and Dockerfile are repository-relative.
	Context    string `json:"context"`
	Dockerfile string `json:"dockerfile"`
	Target     string `json:"target,omitempty"`
	// Image is the name compose tags the built image with.
	Image string `json:"image,omitempty"`
	// Healthcheck is the service's healthcheck test as compose gives it
	// (["CMD", ...], ["CMD-SHELL", "..."], or one string run by a shell),
	// with its line; it overrides the image's HEALTHCHECK.
	Healthcheck     []string `json:"healthcheck,omitempty"`
	HealthcheckLine int      `json:"healthcheck_line,omitempty"`
	// Command and Entrypoint override the image's CMD and ENTRYPOINT; a
	// string is one word list split as compose splits it (no shell).
	Command        []string `json:"command,omitempty"`
	CommandLine    int      `json:"command_line,omitempty"`
	Entrypoint     []string `json:"entrypoint,omitempty"`
	EntrypointLine int      `json:"entrypoint_line,omitempty"`
	// Published is set for a service that builds nothing and runs an
	// image the repository builds and names (Built): the file and line of
	// that build. Context, Dockerfile and Target are then that build's.
	Published string `json:"published,omitempty"`
}

// ComposeFile is what the compose files say about builds; Errors names the
// files that could not be read as YAML (they are skipped, not fatal).
type ComposeFile struct {
	Builds []ComposeBuild
	// Runs are the services that build nothing and run an image by name
	// with a command, entrypoint or healthcheck of their own: Image, the
	// overrides and their lines are set, Context and Dockerfile are not.
	Runs   []ComposeBuild
	Errors []string
	// Unread are the compose files that were not read through the
	// repository's own doing (a symlink out of it, a FIFO): what they say
	// about builds is unknown.
	Unread []Unread
}

// Unread is a file that was not read, and why.
type Unread struct {
	Path   string
	Reason probe.Reason
	// Detail says what the file is, without quoting it.
	Detail string
}

// Compose is the derived fact of every compose file's build sections.
var Compose = &probe.Analyzer[*ComposeFile]{
	Name: "compose_builds",
	Run: func(ctx context.Context, repo *probe.Repo, _ *probe.Context) (*ComposeFile, error) {
		out := &ComposeFile{}
		err := eachFile(ctx, repo, ComposePatterns, func(m string, data []byte, err error) {
			if why := probe.UnreadReason(err); why != "" {
				out.Unread = append(out.Unread, Unread{Path: m, Reason: why, Detail: probe.DescribeReadError(err)})
				return
			}
			if err != nil {
				out.Errors = append(out.Errors, m+": "+probe.DescribeReadError(err))
				return
			}
			bs, runs, err := parseCompose(m, data)
			if err != nil {
				out.Errors = append(out.Errors, m+": "+err.Error())
				return
			}
			out.Builds = append(out.Builds, bs...)
			out.Runs = append(out.Runs, runs...)
		})
		if err != nil {
			return nil, err
		}
		SortCompose(out.Builds)
		SortCompose(out.Runs)
		return out, nil
	},
}

// SortCompose orders services by file, then line.
func SortCompose(cs []ComposeBuild) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
}

// eachFile calls visit once with each file that patterns match, with its
// bytes or the error reading it; it stops at a bad pattern or when ctx
// is done.
func eachFile(ctx context.Context, repo *probe.Repo, patterns []string, visit func(path string, data []byte, err error)) error {
	seen := map[string]bool{}
	for _, pat := range patterns {
		ms, err := repo.Glob(pat)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if seen[m] {
				continue
			}
			seen[m] = true
			if err := ctx.Err(); err != nil {
				return err
			}
			data, err := repo.ReadFile(m)
			visit(m, data, err)
		}
	}
	return nil
}

// parseCompose reads the services of one compose file: those with a
// build section, short (build: ./dir) or long (context, dockerfile,
// target), and those that run an image by name with overrides of their
// own (runs).
func parseCompose(file string, data []byte) (builds, runs []ComposeBuild, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	if len(doc.Content) == 0 {
		return nil, nil, nil
	}
	services := mapValue(doc.Content[0], "services")
	if services == nil || services.Kind != yaml.MappingNode {
		return nil, nil, nil
	}
	dir := path.Dir(file)
	for i := 0; i+1 < len(services.Content); i += 2 {
		name, svc := services.Content[i].Value, services.Content[i+1]
		b := mapValue(svc, "build")
		if b == nil {
			if img := mapValue(svc, "image"); img != nil && img.Kind == yaml.ScalarNode && img.Value != "" {
				r := ComposeBuild{File: file, Line: img.Line, Service: name, Image: img.Value}
				overrides(&r, svc)
				if len(r.Command) > 0 || len(r.Entrypoint) > 0 || len(r.Healthcheck) > 0 {
					runs = append(runs, r)
				}
			}
			continue
		}
		cb := ComposeBuild{File: file, Line: b.Line, Service: name, Context: ".", Dockerfile: "Dockerfile"}
		switch b.Kind {
		case yaml.ScalarNode:
			cb.Context = b.Value
		case yaml.MappingNode:
			if v := mapValue(b, "context"); v != nil && v.Kind == yaml.ScalarNode {
				cb.Context = v.Value
			}
			if v := mapValue(b, "dockerfile"); v != nil && v.Kind == yaml.ScalarNode {
				cb.Dockerfile = v.Value
			}
			if v := mapValue(b, "target"); v != nil && v.Kind == yaml.ScalarNode {
				cb.Target = v.Value
			}
		case yaml.DocumentNode, yaml.SequenceNode, yaml.AliasNode:
			continue
		}
		if v := mapValue(svc, "image"); v != nil && v.Kind == yaml.ScalarNode {
			cb.Image = v.Value
		}
		overrides(&cb, svc)
		if strings.Contains(cb.Context, "://") || strings.HasPrefix(cb.Context, "/") {
			continue // a remote or absolute context is not this repository
		}
		cb.Context = path.Clean(path.Join(dir, cb.Context))
		cb.Dockerfile = path.Clean(path.Join(cb.Context, cb.Dockerfile))
		if strings.HasPrefix(cb.Context, "..") || strings.HasPrefix(cb.Dockerfile, "..") {
			continue
		}
		builds = append(builds, cb)
	}
	return builds, runs, nil
}

// overrides reads a service's healthcheck test, command and entrypoint.
func overrides(cb *ComposeBuild, svc *yaml.Node) {
	if hc := mapValue(mapValue(svc, "healthcheck"), "test"); hc != nil {
		cb.HealthcheckLine = hc.Line
		switch hc.Kind {
		case yaml.ScalarNode:
			cb.Healthcheck = []string{"CMD-SHELL", hc.Value}
		case yaml.SequenceNode:
			for _, n := range hc.Content {
				cb.Healthcheck = append(cb.Healthcheck, n.Value)
			}
		case yaml.DocumentNode, yaml.MappingNode, yaml.AliasNode:
		}
	}
	cb.Command, cb.CommandLine = words(mapValue(svc, "command"))
	cb.Entrypoint, cb.EntrypointLine = words(mapValue(svc, "entrypoint"))
}

// words reads a compose command: a list, or a string split on white space
// with quotes kept together, as compose does (it runs no shell).
func words(n *yaml.Node) ([]string, int) {
	if n == nil {
		return nil, 0
	}
	switch n.Kind {
	case yaml.SequenceNode:
		var out []string
		for _, c := range n.Content {
			out = append(out, c.Value)
		}
		return out, n.Line
	case yaml.ScalarNode:
		return splitWords(n.Value), n.Line
	case yaml.DocumentNode, yaml.MappingNode, yaml.AliasNode:
	}
	return nil, 0
}

func splitWords(s string) []string {
	var out []string
	var cur strings.Builder
	quote := rune(0)
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
