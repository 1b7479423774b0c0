package images

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/probe/probetest"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// TestBuilt: the images a repository builds from its own Dockerfiles are
// found by the names its compose files, CI workflows, Makefiles and
// scripts give them.
func TestBuilt(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile":            "FROM acme/base\n",
		"Dockerfile.base":       "FROM node:22\n",
		"docker/api.Dockerfile": "FROM node:22\n",
		"tools/Dockerfile":      "FROM node:22\n",
		"web/Dockerfile":        "FROM node:22 AS build\nFROM node:22-slim AS prod\n",
		"clash/Dockerfile":      "FROM node:22\n",
		".github/workflows/docker.yml": `name: docker
env:
  BASE_IMAGE_NAME: acme/base
jobs:
  build:
    env:
      REG: ghcr.io/acme
    steps:
      - uses: actions/checkout@v4
      - name: base
        uses: docker/build-push-action@v6
        with:
          context: .
          file: Dockerfile.base
          tags: ${{ env.BASE_IMAGE_NAME }}
      - name: api
        uses: docker/build-push-action@v6
        with:
          file: docker/api.Dockerfile
          tags: |
            ${{ env.REG }}/api:latest
            ${{ steps.meta.outputs.tags }}
      - name: from an output
        uses: docker/build-push-action@v6
        with:
          file: ${{ steps.x.outputs.file }}
          tags: acme/unknown
      - run: |
          echo building
          docker build -f tools/Dockerfile -t "$REG/tools:${{ github.sha }}" -t $REG/tools .
`,
		"Makefile":               "IMG ?= x\nweb:\n\t@docker build \\\n\t  --target prod -t acme/web ./web\nother:\n\tdocker build -t $(IMG) .\n",
		"scripts/clash.sh":       "#!/bin/sh\ndocker build -t acme/clash clash\ndocker build -t acme/clash -f Dockerfile.base .\n",
		"compose.yaml":           "services:\n  api:\n    build:\n      context: .\n      dockerfile: docker/api.Dockerfile\n    image: ghcr.io/acme/api:dev\n",
		"scripts/missing.sh":     "docker build -t acme/gone -f nowhere/Dockerfile .\n",
		"scripts/not-docker.sh":  "podman run -t acme/base build .\n",
		"docker/Base.Dockerfile": "FROM node:22-bookworm-slim\n",
		"package.json": "{\n  \"name\": \"dockge\",\n  \"scripts\": {\n    \"start\": \"tsx ./backend/index.ts\",\n" +
			"    \"build:docker-base\": \"docker buildx build --platform linux/amd64 -t louislam/dockge:base -f ./docker/Base.Dockerfile . --push\",\n" +
			"    \"build:docker\": \"docker buildx build -t louislam/dockge:1 --target release -f ./docker/Dockerfile . --push\"\n  }\n}\n",
		"docker/Dockerfile":           "FROM louislam/dockge:base AS release\n",
		"node_modules/x/package.json": `{"name":"x","scripts":{"b":"docker build -t acme/x -f Dockerfile ."}}`,
	})
	got, err := Built.Of(t.Context(), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]BuiltImage{
		"acme/base":          {Name: "acme/base", Dockerfile: "Dockerfile.base", Context: ".", Source: ".github/workflows/docker.yml:15"},
		"ghcr.io/acme/api":   {Name: "ghcr.io/acme/api", Dockerfile: "docker/api.Dockerfile", Context: ".", Source: "compose.yaml:4"},
		"ghcr.io/acme/tools": {Name: "ghcr.io/acme/tools", Dockerfile: "tools/Dockerfile", Context: ".", Source: ".github/workflows/docker.yml:30"},
		"acme/web":           {Name: "acme/web", Dockerfile: "web/Dockerfile", Context: "web", Target: "prod", Source: "Makefile:3"},
	}
	if diff := cmp.Diff(want, got.ByName, cmpopts.IgnoreFields(BuiltImage{}, "Ref")); diff != "" {
		t.Errorf("built images (-want +got):\n%s", diff)
	}
	// One name, two builds told apart by their tags (dockge's base and
	// app): each tag finds its own, the name alone neither.
	if bi, ok := got.Lookup("louislam/dockge:base"); !ok || bi.Dockerfile != "docker/Base.Dockerfile" || bi.Source != "package.json:5" {
		t.Errorf("Lookup(louislam/dockge:base) = %+v, %v; want docker/Base.Dockerfile from package.json:5", bi, ok)
	}
	if bi, ok := got.Lookup("louislam/dockge:1"); !ok || bi.Target != "release" {
		t.Errorf("Lookup(louislam/dockge:1) = %+v, %v; want docker/Dockerfile's release", bi, ok)
	}
	if bi, ok := got.Lookup("louislam/dockge:nightly"); ok {
		t.Errorf("Lookup(louislam/dockge:nightly) = %+v; two builds give the name, and neither that tag", bi)
	}
	if bi, ok := got.Lookup("ghcr.io/acme/base:1"); ok {
		t.Errorf("Lookup(ghcr.io/acme/base:1) = %+v; the workflow builds Docker Hub's acme/base, another image", bi)
	}
	if _, ok := got.Lookup("docker.io/acme/base:2.1@sha256:abc"); !ok {
		t.Error("Lookup(docker.io/acme/base:2.1@sha256:abc) found nothing: the registry spelled out, a tag and a digest do not change which build made it")
	}
}

// TestFileSetThroughRepoBuiltBase: a stage FROM an image that another of
// the repository's Dockerfiles builds holds that Dockerfile's files, so
// the judged image's file set is complete (outline's Dockerfile.base,
// which its CI tags outlinewiki/outline-base).
func TestFileSetThroughRepoBuiltBase(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile": `ARG APP_PATH=/opt/app
ARG BASE_IMAGE=acme/app-base
FROM ${BASE_IMAGE} AS base
FROM node:22-slim
ARG APP_PATH
WORKDIR $APP_PATH
COPY --from=base $APP_PATH/build ./build
COPY --from=base $APP_PATH/server ./server
COPY --from=base $APP_PATH/node_modules ./node_modules
COPY --from=acme/app-base /opt/app/package.json ./
CMD ["node", "build/server/index.js"]
`,
		"Dockerfile.base": `ARG APP_PATH=/opt/app
FROM node:22 AS deps
ARG APP_PATH
WORKDIR $APP_PATH
COPY package.json yarn.lock ./
RUN yarn install --immutable
COPY . .
RUN yarn build
RUN yarn workspaces focus --production
`,
		".dockerignore":     "test\n",
		"package.json":      "{}",
		"yarn.lock":         "",
		"server/index.ts":   "",
		"server/util.ts":    "",
		"app/index.tsx":     "",
		"test/server.ts":    "",
		"scripts/deploy.sh": "",
	}
	t.Run("built by the repository", func(t *testing.T) {
		t.Parallel()
		withCI := map[string]string{"scripts/build-base.sh": "docker build -f Dockerfile.base -t acme/app-base:latest .\n"}
		for k, v := range files {
			withCI[k] = v
		}
		set, err := Files.Of(t.Context(), probetest.Repo(t, withCI), &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Unresolved) != 0 {
			t.Errorf("Unresolved = %q, want none: Dockerfile.base builds acme/app-base", set.Unresolved)
		}
		for rel, want := range map[string]string{"server/index.ts": "/opt/app/server/index.ts", "package.json": "/opt/app/package.json"} {
			if got, ok := set.ImagePath(rel); !ok || got != want {
				t.Errorf("ImagePath(%s) = %q, %v; want %q", rel, got, ok, want)
			}
		}
		if ships, known := set.Ships("scripts/deploy.sh"); ships || !known {
			t.Errorf("Ships(scripts/deploy.sh) = %v, %v; want false, true", ships, known)
		}
		if ships, known := set.Ships("test/server.ts"); ships || !known {
			t.Errorf("Ships(test/server.ts) = %v, %v; want false, true: .dockerignore leaves it out of the base's context", ships, known)
		}
		if !set.InstallsDependencies || !set.OmitsDevDependencies {
			t.Errorf("InstallsDependencies, OmitsDevDependencies = %v, %v; want both: the base's yarn install and its production focus",
				set.InstallsDependencies, set.OmitsDevDependencies)
		}
		if got := set.Compiled["app/index.tsx"]; !slices.Equal(got, []string{"/opt/app/build"}) {
			t.Errorf("Compiled[app/index.tsx] = %q, want [/opt/app/build]: the base's yarn build made it from the sources it held", got)
		}
	})
	t.Run("built elsewhere", func(t *testing.T) {
		t.Parallel()
		set, err := Files.Of(t.Context(), probetest.Repo(t, files), &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Unresolved) == 0 || !strings.Contains(strings.Join(set.Unresolved, "\n"), "acme/app-base") {
			t.Errorf("Unresolved = %q, want acme/app-base named: nothing in the repository says it builds that image", set.Unresolved)
		}
	})
	t.Run("an image built FROM itself is read once", func(t *testing.T) {
		t.Parallel()
		repo := probetest.Repo(t, map[string]string{
			"Dockerfile":   "FROM acme/a AS a\nFROM node:22-slim\nCOPY --from=a /x /x\n",
			"a/Dockerfile": "FROM acme/b\nCOPY x /x\n",
			"b/Dockerfile": "FROM acme/a\n",
			"a/x":          "",
			"build.sh":     "docker build -t acme/a a\ndocker build -t acme/b b\n",
		})
		set, err := Files.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := set.ImagePath("a/x"); !ok || got != "/x" {
			t.Errorf("ImagePath(a/x) = %q, %v; want /x", got, ok)
		}
	})
}

// TestBuiltPublished: a build-push-action step names its image through a
// metadata-action step's images (logto's release workflow), or, under a
// matrix, through an image output's name (Flowise's, one Dockerfile per
// matrix entry).
func TestBuiltPublished(t *testing.T) {
	t.Parallel()
	for _, fixture := range []struct {
		dir  string
		want map[string]string // image name: Dockerfile
	}{
		{"compose-published-image", map[string]string{"acme/app": "Dockerfile", "ghcr.io/acme/app": "Dockerfile"}},
		{"compose-published-other-image", map[string]string{"acme/app": "Dockerfile", "acme/app-worker": "worker/Dockerfile"}},
	} {
		repo, err := probe.OpenRepo(filepath.Join("..", "testdata", "fixtures", fixture.dir))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Built.Of(t.Context(), repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for name, bi := range got.ByName {
			names[name] = bi.Dockerfile
		}
		if diff := cmp.Diff(fixture.want, names); diff != "" {
			t.Errorf("%s: images built (-want +got):\n%s", fixture.dir, diff)
		}
		comp, err := Compose.Of(t.Context(), repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range PublishedRuns(comp.Runs, got) {
			if want := fixture.want[dockerfile.ImageRepo(r.Image)]; r.Dockerfile != want || r.Published == "" {
				t.Errorf("%s: the compose service %s runs %s of %s (%q), want %s", fixture.dir, r.Service, r.Image, r.Dockerfile, r.Published, want)
			}
		}
	}
}

// TestServiceForPrefersBuild: a compose service that builds the image
// wins over one of the same rank that runs it by its published name.
func TestServiceForPrefersBuild(t *testing.T) {
	t.Parallel()
	f, err := dockerfile.Parse("Dockerfile", []byte("FROM node:22\n"))
	if err != nil {
		t.Fatal(err)
	}
	builds := []ComposeBuild{
		{File: "compose.yaml", Service: "published", Dockerfile: "Dockerfile", Published: ".github/workflows/x.yml:9"},
		{File: "compose.yaml", Service: "built", Dockerfile: "Dockerfile"},
	}
	if got, ok := ServiceFor(builds, f, "Dockerfile", 0); !ok || got.Service != "built" {
		t.Errorf("ServiceFor = %q, %v; want built", got.Service, ok)
	}
	if got, ok := ServiceFor(builds[:1], f, "Dockerfile", 0); !ok || got.Service != "published" {
		t.Errorf("ServiceFor of the published run alone = %q, %v; want published", got.Service, ok)
	}
}
