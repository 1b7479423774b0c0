package recipe

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Target is a runtime image the recipe moves a service to. The table holds
// what each published image is documented to be; the recipe looks the
// image up and never guesses its entrypoint, node path or user.
type Target struct {
	// Family names the publisher's line: distroless, dhi or chainguard.
	Family string `json:"family"`
	// Ref is the image reference, without a digest.
	Ref string `json:"ref"`
	// Digest pins Ref when the registry resolved it.
	Digest string `json:"digest,omitempty"`
	// Major is the Node major the image runs.
	Major int `json:"node_major"`
	// Node is the absolute path of node in the image.
	Node string `json:"node"`
	// EntrypointNode is true when the image's ENTRYPOINT is node, so that
	// CMD holds node's arguments only.
	EntrypointNode bool `json:"entrypoint_node"`
	// User is the user the image runs as by default, and UID its
	// uid:gid when it is not root.
	User string `json:"user"`
	UID  string `json:"uid,omitempty"`
	// Shell is true when the image still has a shell (a :debug tag,
	// Chainguard's busybox): the rewrite cannot show "no shell" there, only
	// the trace can.
	Shell bool `json:"shell"`
	// Source says where the facts come from.
	Source string `json:"source"`
}

// Pinned is the reference the Dockerfile names: Ref@Digest when pinned.
func (t Target) Pinned() string {
	if t.Digest == "" {
		return t.Ref
	}
	return t.Ref + "@" + t.Digest
}

// family is one line of published runtime images.
type family struct {
	name string
	// repo is the repository; %d is the Node major.
	repo   string
	majors []int
	// tags maps a tag to its user and whether it has a shell; "" is the
	// tag the recipe picks by default.
	tags           map[string]tagFacts
	defaultTag     string
	node           string
	entrypointNode bool
	source         string
}

type tagFacts struct {
	user  string
	uid   string // uid:gid; empty for root
	shell bool
}

// families is the table of known runtime images.
var families = []family{
	{
		name: "distroless", repo: "gcr.io/distroless/nodejs%d-debian13", majors: []int{22, 24, 26},
		tags: map[string]tagFacts{
			"latest": {user: "root"}, "nonroot": {user: "nonroot (65532)", uid: "65532:65532"},
			"debug": {user: "root", shell: true}, "debug-nonroot": {user: "nonroot (65532)", uid: "65532:65532", shell: true},
		},
		defaultTag: "nonroot", node: "/nodejs/bin/node", entrypointNode: true,
		source: "GoogleContainerTools/distroless nodejs README: ENTRYPOINT /nodejs/bin/node; :debug tags add busybox",
	},
	{
		name: "dhi", repo: "dhi.io/node", majors: []int{22, 24},
		// Runtime tags are <major>-debian13; -dev tags are the build-time
		// variants, with a shell and apt.
		tags:       map[string]tagFacts{"%d-debian13": {user: "node (1000)", uid: "1000:1000"}, "%d-debian13-dev": {user: "root", shell: true}},
		defaultTag: "%d-debian13", node: "node", entrypointNode: false,
		source: "Docker Hardened Images node: runtime variants run as node with no shell or package manager; -dev variants have both",
	},
	{
		name: "chainguard", repo: "cgr.dev/chainguard/node", majors: []int{22, 24},
		tags:       map[string]tagFacts{"latest": {user: "node (65532)", uid: "65532:65532", shell: true}, "latest-dev": {user: "root", shell: true}},
		defaultTag: "latest", node: "/usr/bin/node", entrypointNode: true,
		source: "Chainguard node image: ENTRYPOINT /usr/bin/node; its :latest ships busybox",
	},
}

// DefaultTarget is gcr.io/distroless/nodejs<major>-debian13:nonroot.
func DefaultTarget(major int) Target {
	t, err := lookup(families[0], families[0].defaultTag, major)
	if err != nil {
		panic(err) // the default family publishes every supported major
	}
	return t
}

// LookupTarget finds ref (a --target-image value, with or without a tag
// or digest) in the table. The Node major comes from the reference when it
// names one, else major.
func LookupTarget(ref string, major int) (Target, error) {
	name, digest, _ := strings.Cut(ref, "@")
	repo, tag := name, ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		repo, tag = name[:i], name[i+1:]
	}
	for _, f := range families {
		m, ok := matchRepo(f.repo, repo)
		if !ok {
			continue
		}
		if m != 0 {
			major = m
		}
		pattern, tagMajor := f.defaultTag, 0
		if tag != "" {
			pattern, tagMajor = tagPattern(f, tag)
		}
		if pattern == "" {
			return Target{}, fmt.Errorf("%s: the tag %q is not one codegenie knows for %s (known: %s)", ref, tag, f.name, knownTags(f))
		}
		if tagMajor != 0 {
			major = tagMajor
		}
		t, err := lookup(f, pattern, major)
		if err != nil {
			return Target{}, fmt.Errorf("%s: %w", ref, err)
		}
		t.Digest = digest
		return t, nil
	}
	return Target{}, fmt.Errorf("%s is not a runtime image codegenie knows; use one of %s", ref, strings.Join(KnownRepos(), ", "))
}

// KnownRepos lists the table's repositories.
func KnownRepos() []string {
	var out []string
	for _, f := range families {
		out = append(out, strings.ReplaceAll(f.repo, "%d", "<major>"))
	}
	return out
}

func lookup(f family, pattern string, major int) (Target, error) {
	if !slices.Contains(f.majors, major) {
		return Target{}, fmt.Errorf("%s publishes no Node %d image (it has %s)", f.name, major, joinInts(f.majors))
	}
	facts := f.tags[pattern]
	tag := pattern
	if strings.Contains(tag, "%d") {
		tag = fmt.Sprintf(tag, major)
	}
	repo := f.repo
	if strings.Contains(repo, "%d") {
		repo = fmt.Sprintf(repo, major)
	}
	return Target{Family: f.name, Ref: repo + ":" + tag, Major: major, Node: f.node, EntrypointNode: f.entrypointNode,
		User: facts.user, UID: facts.uid, Shell: facts.shell, Source: f.source}, nil
}

// matchRepo matches repo against a pattern with an optional %d, and
// returns the major it names (0 when the pattern has none).
func matchRepo(pattern, repo string) (int, bool) {
	pre, post, has := strings.Cut(pattern, "%d")
	if !has {
		return 0, repo == pattern
	}
	if !strings.HasPrefix(repo, pre) || !strings.HasSuffix(repo, post) || len(repo) <= len(pre)+len(post) {
		return 0, false
	}
	m, err := strconv.Atoi(repo[len(pre) : len(repo)-len(post)])
	return m, err == nil
}

// tagPattern finds the table's tag pattern that tag matches.
func tagPattern(f family, tag string) (string, int) {
	for p := range f.tags {
		if m, ok := matchRepo(p, tag); ok {
			return p, m
		}
	}
	return "", 0
}

func knownTags(f family) string {
	var out []string
	for p := range f.tags {
		out = append(out, strings.ReplaceAll(p, "%d", "<major>"))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
