package shellcmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDockerBuilds(t *testing.T) {
	t.Parallel()
	env := map[string]string{"BASE": "acme/app-base", "DF": "docker/base.Dockerfile"}
	for _, tc := range []struct {
		name, src string
		want      []ImageBuild
	}{
		{"docker build -f -t", "docker build -f Dockerfile.base -t acme/base:1 .",
			[]ImageBuild{{Dockerfile: "Dockerfile.base", Context: ".", Tags: []string{"acme/base:1"}, Line: 1}}},
		{"long options with = and flags between", "set -e\ndocker buildx build --pull --file=docker/Dockerfile --platform linux/amd64 --tag a/b --tag a/b:2 --target prod --push ./app",
			[]ImageBuild{{Dockerfile: "docker/Dockerfile", Context: "./app", Target: "prod", Tags: []string{"a/b", "a/b:2"}, Line: 2}}},
		{"variables from the environment, and defaults", `docker build -f "$DF" -t "${BASE}:latest" -t ${MISSING}/x -t ${REG:-ghcr.io}/y .`,
			[]ImageBuild{{Dockerfile: "docker/base.Dockerfile", Context: ".", Tags: []string{"acme/app-base:latest", "ghcr.io/y"}, Line: 1}}},
		{"in a chain, continued", "cd . && \\\n  podman build \\\n  -t base \\\n  -f Containerfile.base .",
			[]ImageBuild{{Dockerfile: "Containerfile.base", Context: ".", Tags: []string{"base"}, Line: 2}}},
		{"buildah bud, no -f", "buildah bud -t x ctx",
			[]ImageBuild{{Context: "ctx", Tags: []string{"x"}, Line: 1}}},
		{"an unknown Dockerfile is no build", `docker build -f "$(pick)" -t x .`, nil},
		{"an unknown context is no build", `docker build -t x "$CTX"`, nil},
		{"a remote context is no build", `docker build -t x https://github.com/a/b.git`, nil},
		{"docker run is no build", `docker run --rm -t x node build .`, nil},
		{"does not parse", "docker build -t x . (", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, DockerBuilds(tc.src, env)); diff != "" {
				t.Errorf("DockerBuilds(%q) (-want +got):\n%s", tc.src, diff)
			}
		})
	}
}
