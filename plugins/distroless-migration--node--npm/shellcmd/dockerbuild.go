package shellcmd

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ImageBuild is one image build a shell command line runs: `docker build`,
// `docker buildx build`, `docker image build`, `podman build` or
// `buildah bud`, with what its options say. Paths are as written, relative
// to the directory the command runs in; Dockerfile is empty when the
// command names none (the context's Dockerfile).
type ImageBuild struct {
	Dockerfile string
	Context    string
	Target     string
	// Tags are the names it gives the image (-t), those whose words
	// expand to a known value only.
	Tags []string
	// Line is the line of src the command starts on, from 1.
	Line int
}

// buildValued are the long options of docker build, buildx build, podman
// build and buildah bud that take a value: an option not named here is
// read as a flag, so that its next word stays the context.
var buildValued = map[string]bool{
	"file": true, "tag": true, "target": true, "build-arg": true, "build-context": true, "builder": true,
	"cache-from": true, "cache-to": true, "label": true, "platform": true, "output": true, "secret": true,
	"ssh": true, "network": true, "progress": true, "iidfile": true, "metadata-file": true, "add-host": true,
	"allow": true, "annotation": true, "attest": true, "call": true, "cgroup-parent": true, "shm-size": true,
	"ulimit": true, "provenance": true, "sbom": true, "no-cache-filter": true, "memory": true, "cpu-shares": true,
	"cpuset-cpus": true, "isolation": true, "arch": true, "os": true, "variant": true, "format": true,
	"authfile": true, "creds": true, "volume": true, "security-opt": true, "ignorefile": true,
	"jobs": true, "manifest": true, "userns": true, "env": true, "unsetenv": true,
}

// DockerBuilds finds the image builds in src, a shell script or a CI
// step's run lines. A word built from variables takes its value from env
// (a variable's default when env has none); one that cannot be known (a
// command substitution, a variable with no value) leaves its option
// unknown: a tag is left out, and a build whose Dockerfile or context is
// unknown is not returned. A script that does not parse has none.
func DockerBuilds(src string, env map[string]string) []ImageBuild {
	var out []ImageBuild
	eachCall(src, 2, func(call *syntax.CallExpr) {
		words := make([]string, len(call.Args))
		known := make([]bool, len(call.Args))
		for i, w := range call.Args {
			words[i], known[i] = expandWord(w, env)
		}
		start := buildStart(words, known)
		if start < 0 {
			return
		}
		if b, ok := readBuild(words[start:], known[start:]); ok {
			b.Line = int(call.Pos().Line())
			out = append(out, b)
		}
	})
	return out
}

// eachCall calls visit with each simple command of the bash text src that
// has at least minArgs words; a text that does not parse has none.
func eachCall(src string, minArgs int, visit func(*syntax.CallExpr)) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) >= minArgs {
			visit(call)
		}
		return true
	})
}

// buildStart returns the index of the first argument after the words
// that name an image build (docker build, docker buildx build, docker
// image build, podman build, buildah bud), or -1.
func buildStart(words []string, known []bool) int {
	if !known[0] {
		return -1
	}
	prog := path.Base(words[0])
	var want [][]string
	switch prog {
	case "docker":
		want = [][]string{{"build"}, {"buildx", "build"}, {"image", "build"}, {"buildx", "b"}}
	case "podman":
		want = [][]string{{"build"}, {"image", "build"}}
	case "buildah":
		want = [][]string{{"bud"}, {"build"}, {"build-using-dockerfile"}}
	default:
		return -1
	}
	for _, w := range want {
		if len(words) > len(w) && slices.Equal(words[1:1+len(w)], w) {
			return 1 + len(w)
		}
	}
	return -1
}

// readBuild reads a build command's options and its context operand.
func readBuild(args []string, known []bool) (ImageBuild, bool) {
	var b ImageBuild
	var operands []int
	fileKnown, targetKnown := true, true
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !known[i] {
			operands = append(operands, -1)
			continue
		}
		name, val, hasVal := "", "", false
		switch {
		case a == "--":
			for j := i + 1; j < len(args); j++ {
				operands = append(operands, j)
			}
			i = len(args)
			continue
		case strings.HasPrefix(a, "--"):
			name, val, hasVal = strings.Cut(a[2:], "=")
			if !hasVal && !buildValued[name] {
				continue // a flag
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			name = a[1:2]
			switch name {
			case "f":
				name = "file"
			case "t":
				name = "tag"
			case "o":
				name = "output"
			default:
				continue // -q, --pull=..., and the like: flags
			}
			if len(a) > 2 {
				val, hasVal = strings.TrimPrefix(a[2:], "="), true
			}
		default:
			operands = append(operands, i)
			continue
		}
		valKnown := true
		if !hasVal {
			if i+1 >= len(args) {
				break
			}
			i++
			val, valKnown = args[i], known[i]
		}
		switch name {
		case "file":
			b.Dockerfile, fileKnown = val, valKnown
		case "target":
			b.Target, targetKnown = val, valKnown
		case "tag":
			if valKnown && val != "" {
				b.Tags = append(b.Tags, val)
			}
		}
	}
	if len(operands) != 1 || operands[0] < 0 || !fileKnown || !targetKnown || b.Dockerfile == "-" {
		return ImageBuild{}, false
	}
	b.Context = args[operands[0]]
	if strings.Contains(b.Context, "://") || b.Context == "-" {
		return ImageBuild{}, false // a remote or piped context is not this checkout
	}
	return b, true
}

// expandWord is w's value with env's variables; ok is false when part of
// it cannot be known.
func expandWord(w *syntax.Word, env map[string]string) (string, bool) {
	if lit := w.Lit(); lit != "" && !strings.ContainsAny(lit, `\$"'`) {
		return lit, true
	}
	parts, _ := envWord(w)
	if parts == nil {
		return "", false
	}
	return resolveParts(parts, env)
}
