package dockerfile

import (
	"path"
	"strings"
)

// Known base images whose entrypoint and cmd codegenie knows without
// pulling their config. These are facts from DOMAIN.md rows 3 and 15: the
// official node images boot through docker-entrypoint.sh (a #!/bin/sh
// script), and the distroless node images run /nodejs/bin/node.
const (
	NodeEntrypoint       = "docker-entrypoint.sh"
	DistrolessEntrypoint = "/nodejs/bin/node"
)

// BaseKind classifies a base image reference.
type BaseKind string

// The base kinds.
const (
	BaseOfficialNode BaseKind = "official_node" // node:*, docker.io/library/node:*
	BaseDistroless   BaseKind = "distroless_node"
	BaseOther        BaseKind = "other"
)

// ClassifyBase tells which known family a base image reference is.
func ClassifyBase(ref string) BaseKind {
	repo := ref
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	switch strings.TrimPrefix(strings.TrimPrefix(repo, "docker.io/"), "index.docker.io/") {
	case "node", "library/node":
		return BaseOfficialNode
	}
	if strings.HasPrefix(repo, "gcr.io/distroless/nodejs") || strings.HasPrefix(path.Base(repo), "distroless-nodejs") {
		return BaseDistroless
	}
	return BaseOther
}

// StartCommand is what a stage's container runs at start, as far as the
// Dockerfile and the known base images tell.
type StartCommand struct {
	// Argv is ENTRYPOINT then CMD, with shell forms as /bin/sh -c.
	Argv []string `json:"argv,omitempty"`
	// Entrypoint and Cmd are the instructions that set them; nil when
	// inherited from the base image.
	Entrypoint *Instruction `json:"entrypoint,omitempty"`
	Cmd        *Instruction `json:"cmd,omitempty"`
	// FromBase is set when part of Argv comes from a known base image.
	FromBase BaseKind `json:"from_base,omitempty"`
	// Known is false when part of the command is an unknown base image's.
	Known bool `json:"known"`
}

// Start returns stage i's start command.
func (f *File) Start(i int) StartCommand {
	var sc StartCommand
	sc.Known = true
	base := ClassifyBase(f.RootBase(i))
	ent, hasEnt := f.Effective(i, "entrypoint")
	cmd, hasCmd := f.Effective(i, "cmd")
	var entArgv, cmdArgv []string
	switch {
	case hasEnt:
		sc.Entrypoint = &ent
		entArgv = argvOf(ent)
	case base == BaseOfficialNode:
		entArgv, sc.FromBase = []string{NodeEntrypoint}, base
	case base == BaseDistroless:
		entArgv, sc.FromBase = []string{DistrolessEntrypoint}, base
	case NoBaseEntrypoint(f.RootBase(i)):
		// FROM alpine + RUN apk add nodejs + CMD ["node", …]: the CMD is
		// the whole start.
	default:
		sc.Known = false
	}
	// A shell-form ENTRYPOINT ignores CMD.
	if hasEnt && ent.Form == FormShell {
		sc.Argv = entArgv
		return sc
	}
	switch {
	case hasCmd:
		sc.Cmd = &cmd
		cmdArgv = argvOf(cmd)
	case hasEnt:
		// An ENTRYPOINT set in the Dockerfile resets the base's CMD.
	case base == BaseOfficialNode:
		cmdArgv, sc.FromBase = []string{"node"}, base
	case base == BaseDistroless:
	default:
		sc.Known = false
	}
	sc.Argv = append(append([]string{}, entArgv...), cmdArgv...)
	return sc
}

func argvOf(in Instruction) []string {
	if in.Form == FormShell {
		return []string{"/bin/sh", "-c", strings.Join(in.Args, " ")}
	}
	return in.Args
}

// Init wrappers run a command as their child: they forward signals to it
// and reap orphaned processes (tini, dumb-init, docker run --init's
// docker-init, catatonit), or switch user first (su-exec, gosu). The
// command they wrap is the service's start.
var initWrappers = map[string]bool{"tini": true, "tini-static": true, "dumb-init": true, "docker-init": true, "catatonit": true}

// userWrappers take a user before the command: gosu USER CMD...
var userWrappers = map[string]bool{"su-exec": true, "gosu": true}

// SplitInit splits argv into an init wrapper with its options and the
// command it runs. init is nil when argv[0] is no init wrapper. A wrapper
// with nothing after its options has an empty cmd.
func SplitInit(argv []string) (init, cmd []string) {
	if len(argv) == 0 {
		return nil, argv
	}
	name := path.Base(argv[0])
	switch {
	case userWrappers[name]:
		i := 1
		for i < len(argv) && strings.HasPrefix(argv[i], "-") {
			i++
		}
		if i < len(argv) {
			i++ // the user
		}
		return argv[:i], argv[i:]
	case initWrappers[name]:
		for i := 1; i < len(argv); i++ {
			if argv[i] == "--" {
				return argv[:i+1], argv[i+1:]
			}
			if !strings.HasPrefix(argv[i], "-") {
				return argv[:i], argv[i:]
			}
			if initValueFlag[name+" "+argv[i]] {
				i++
			}
		}
		return argv, nil
	}
	return nil, argv
}

// IsUserWrapper reports whether an init wrapper's name switches user.
func IsUserWrapper(word string) bool { return userWrappers[path.Base(word)] }

// initValueFlag are wrapper options that take a separate value.
var initValueFlag = map[string]bool{"tini -p": true, "tini -e": true, "tini-static -p": true, "tini-static -e": true,
	"dumb-init -r": true, "dumb-init --rewrite": true}

// IsInit reports whether word names an init wrapper that forwards signals
// and reaps (tini, dumb-init), not one that only switches user.
func IsInit(word string) bool { return initWrappers[path.Base(word)] }
