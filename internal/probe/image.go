package probe

import (
	"context"
	"fmt"
)

// ImageRef names the one image a run judges: a Dockerfile and the stage
// that ships from it. A repository holds as many images as it has
// Dockerfiles; each is judged on its own.
type ImageRef struct {
	// Dockerfile is repository-relative and slash-separated.
	Dockerfile string `json:"dockerfile"`
	// Target is the stage that ships: its name, else its index.
	Target string `json:"target"`
	// Why says how the Dockerfile and the target were chosen.
	Why string `json:"why"`
}

// Key is the image's identity in cache keys: the Dockerfile and target,
// without the explanation.
func (r ImageRef) Key() string { return r.Dockerfile + "#" + r.Target }

// IsZero reports whether r names no image (a repository with no
// Dockerfile).
func (r ImageRef) IsZero() bool { return r.Dockerfile == "" }

// ImageSelector finds the images of a repository and picks the one a run
// judges. It is a task's plugin's knowledge (it parses Dockerfiles and
// compose files); the gather driver only asks it.
type ImageSelector interface {
	// Images lists every image of the repository, each with the target
	// that ships by default, sorted by Dockerfile.
	Images(ctx context.Context, repo *Repo) ([]ImageRef, error)
	// Select picks the image to judge. dockerfile and target are what the
	// user asked for; empty means the default. A selection the repository
	// cannot satisfy is a *SelectionError. A repository with no Dockerfile
	// yields the zero ImageRef and no error.
	Select(ctx context.Context, repo *Repo, dockerfile, target string) (ImageRef, error)
}

// DevDependencyJudge is an ImageSelector that can tell whether an image
// it picked ships the development packages its install installs (a
// single-stage Dockerfile whose npm ci omits nothing). The gather driver
// asks it before it mounts the lockfile's packages, on a Repo of its own
// with no mounts, so that it mounts what that image holds.
type DevDependencyJudge interface {
	KeepsDevDependencies(ctx context.Context, repo *Repo, ref ImageRef) (bool, error)
}

// SelectionError is an image selection the repository cannot satisfy: a
// Dockerfile or a stage that does not exist, or several Dockerfiles and no
// default among them. Front ends report it as bad input.
type SelectionError struct {
	Msg string
	// Choices lists what the user may pick instead.
	Choices []string
}

func (e *SelectionError) Error() string {
	if len(e.Choices) == 0 {
		return e.Msg
	}
	return fmt.Sprintf("%s; choose one of: %v", e.Msg, e.Choices)
}
