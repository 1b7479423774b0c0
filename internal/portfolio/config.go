package portfolio

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ConfigFile is the per-repository override file, read at a checkout's
// root.
const ConfigFile = "codegenie-portfolio.yaml"

// Config is a parsed codegenie-portfolio.yaml:
//
//	version: 1
//	services:
//	  - dockerfile: services/api/Dockerfile   # which service (required)
//	    target: runtime                        # the stage that ships
//	    context: services/api                  # the build context
//	    probe_paths: [/healthz, /api/status]   # URL paths the traced boot requests
//	  - dockerfile: tools/Dockerfile
//	    exclude: true
//	    reason: build tooling, not a service
type Config struct {
	Services []Override
}

// Override changes how one Dockerfile is judged, or excludes it.
type Override struct {
	// Line is where the entry starts in the file.
	Line       int
	Dockerfile string
	Target     string
	Context    string
	Exclude    bool
	Reason     string
	// ProbePaths are URL paths the traced boot requests (gather
	// --probe-path).
	ProbePaths []string
}

// ConfigError is a codegenie-portfolio.yaml that does not validate.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ParseConfig reads a codegenie-portfolio.yaml strictly: unknown keys, a key
// given twice, wrong types, a missing dockerfile, paths that leave the
// repository and a Dockerfile named twice are errors with their line.
func ParseConfig(file string, data []byte) (*Config, error) {
	fail := func(n *yaml.Node, format string, args ...any) error {
		line := 0
		if n != nil {
			line = n.Line
		}
		return &ConfigError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &ConfigError{File: file, Msg: "not YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	cfg := &Config{}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fail(top, "want a mapping with version and services")
	}
	sawVersion := false
	err := eachKey(top, fail, []string{"version", "services"}, func(k string, v *yaml.Node) error {
		switch k {
		case "version":
			sawVersion = true
			if v.Kind != yaml.ScalarNode || v.Value != "1" {
				return fail(v, "version: want 1, got %q", v.Value)
			}
		case "services":
			if v.Kind != yaml.SequenceNode {
				return fail(v, "services: want a list of entries")
			}
			seen := map[string]int{}
			for _, e := range v.Content {
				o, err := parseOverride(e, fail)
				if err != nil {
					return err
				}
				if prev, ok := seen[o.Dockerfile]; ok {
					return fail(e, "dockerfile %s is already configured at line %d; merge the two entries", o.Dockerfile, prev)
				}
				seen[o.Dockerfile] = o.Line
				cfg.Services = append(cfg.Services, o)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !sawVersion {
		return nil, fail(top, "missing version: add 'version: 1'")
	}
	return cfg, nil
}

type failFunc func(n *yaml.Node, format string, args ...any) error

// eachKey calls f for each key of mapping m, refusing keys not in allowed
// and keys given twice.
func eachKey(m *yaml.Node, fail failFunc, allowed []string, f func(k string, v *yaml.Node) error) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, v := m.Content[i], m.Content[i+1]
		k := kn.Value
		if kn.Kind != yaml.ScalarNode || !contains(allowed, k) {
			return fail(kn, "unknown key %q; want one of: %s", k, strings.Join(allowed, ", "))
		}
		if seen[k] {
			return fail(kn, "key %q given twice", k)
		}
		seen[k] = true
		if err := f(k, v); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var overrideKeys = []string{"dockerfile", "target", "context", "exclude", "reason", "probe_paths"}

func parseOverride(e *yaml.Node, fail failFunc) (Override, error) {
	o := Override{Line: e.Line}
	if e.Kind != yaml.MappingNode {
		return o, fail(e, "a service entry must be a mapping with at least dockerfile")
	}
	str := func(k string, v *yaml.Node) (string, error) {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" || v.Value == "" {
			return "", fail(v, "%s: want a non-empty string", k)
		}
		return v.Value, nil
	}
	relPath := func(k string, v *yaml.Node) (string, error) {
		s, err := str(k, v)
		if err != nil {
			return "", err
		}
		p := path.Clean(strings.TrimPrefix(s, "./"))
		if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return "", fail(v, "%s %s: want a path inside the repository", k, s)
		}
		return p, nil
	}
	err := eachKey(e, fail, overrideKeys, func(k string, v *yaml.Node) error {
		var err error
		switch k {
		case "dockerfile":
			o.Dockerfile, err = relPath(k, v)
		case "context":
			o.Context, err = relPath(k, v)
		case "target":
			o.Target, err = str(k, v)
		case "reason":
			o.Reason, err = str(k, v)
		case "probe_paths":
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				return fail(v, "probe_paths: want a list of URL paths such as [/healthz]")
			}
			for _, p := range v.Content {
				s, err := str(k, p)
				if err != nil {
					return err
				}
				if !strings.HasPrefix(s, "/") || len(s) > 256 || strings.ContainsAny(s, " \t\n") {
					return fail(p, "probe_paths: %q is not an absolute URL path (such as /healthz)", s)
				}
				o.ProbePaths = append(o.ProbePaths, s)
			}
			if len(o.ProbePaths) > 16 {
				return fail(v, "probe_paths: at most 16 paths")
			}
		case "exclude":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
				return fail(v, "exclude: want true or false")
			}
			o.Exclude = v.Value == "true"
		}
		return err
	})
	if err != nil {
		return o, err
	}
	if o.Dockerfile == "" {
		return o, fail(e, "service entry without dockerfile: name the Dockerfile it configures")
	}
	if o.Exclude && (o.Target != "" || o.Context != "" || len(o.ProbePaths) > 0) {
		return o, fail(e, "an excluded service takes no target, context or probe_paths")
	}
	if o.Context != "" && o.Context != "." && !strings.HasPrefix(o.Dockerfile, o.Context+"/") {
		return o, fail(e, "dockerfile %s is outside its context %s: the pipeline judges the context as the repository", o.Dockerfile, o.Context)
	}
	return o, nil
}

// lookup returns the override for dockerfile.
func (c *Config) lookup(dockerfile string) (Override, bool) {
	if c == nil {
		return Override{}, false
	}
	for _, o := range c.Services {
		if o.Dockerfile == dockerfile {
			return o, true
		}
	}
	return Override{}, false
}

// dockerfiles lists the configured Dockerfiles, sorted.
func (c *Config) dockerfiles() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, o := range c.Services {
		out = append(out, o.Dockerfile)
	}
	sort.Strings(out)
	return out
}
