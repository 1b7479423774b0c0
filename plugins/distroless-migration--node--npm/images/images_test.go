package images

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/probe/probetest"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

func TestSelect(t *testing.T) {
	t.Parallel()
	twoStage := "FROM node:22 AS build\nRUN true\nFROM gcr.io/distroless/nodejs22-debian13 AS runtime\nCMD [\"a.js\"]\nFROM runtime AS debug\n"
	tests := []struct {
		name            string
		files           map[string]string
		dockerfile, tgt string
		want            string // Key, or "error"
		choices         []string
	}{
		{"root Dockerfile wins", map[string]string{"Dockerfile": twoStage, "Dockerfile.cypress": "FROM node:22\n"}, "", "", "Dockerfile#debug", nil},
		{"the only one", map[string]string{"svc/api.Dockerfile": twoStage}, "", "", "svc/api.Dockerfile#debug", nil},
		{"several, none at the root", map[string]string{"a/Dockerfile": twoStage, "b/Dockerfile": twoStage}, "", "", "error", []string{"a/Dockerfile", "b/Dockerfile"}},
		{"--dockerfile", map[string]string{"Dockerfile": twoStage, "docker/prod.Dockerfile": "FROM node:22\n"}, "./docker/prod.Dockerfile", "", "docker/prod.Dockerfile#0", nil},
		{"--dockerfile missing", map[string]string{"Dockerfile": twoStage}, "nope", "", "error", []string{"Dockerfile"}},
		{"--target", map[string]string{"Dockerfile": twoStage}, "", "runtime", "Dockerfile#runtime", nil},
		{"--target by index", map[string]string{"Dockerfile": twoStage}, "", "0", "Dockerfile#build", nil},
		{"--target missing", map[string]string{"Dockerfile": twoStage}, "", "nope", "error", []string{"build", "runtime", "debug"}},
		{"compose target", map[string]string{"Dockerfile": twoStage, "docker-compose.yml": "services:\n  web:\n    build:\n      context: .\n      target: runtime\n"}, "", "", "Dockerfile#runtime", nil},
		{"compose short syntax, no target", map[string]string{"web/Dockerfile": twoStage, "compose.yaml": "services:\n  web:\n    build: ./web\n"}, "", "", "web/Dockerfile#debug", nil},
		{"compose names a missing stage", map[string]string{"Dockerfile": twoStage, "compose.yml": "services:\n  web:\n    build:\n      context: .\n      target: prod\n"}, "", "", "Dockerfile#debug", nil},
		{"a dev compose file does not choose the target", map[string]string{"Dockerfile": twoStage, "docker-compose.dev.yml": "services:\n  web:\n    build:\n      context: .\n      target: runtime\n"}, "", "", "Dockerfile#debug", nil},
		{"an override file does not choose the target", map[string]string{"Dockerfile": twoStage, "compose.override.yaml": "services:\n  web:\n    build:\n      context: .\n      target: build\n"}, "", "", "Dockerfile#debug", nil},
		{"a compose file under e2e/ does not choose the target", map[string]string{"Dockerfile": twoStage, "e2e/docker-compose.yml": "services:\n  web:\n    build:\n      context: ..\n      target: runtime\n"}, "", "", "Dockerfile#debug", nil},
		{"the main compose file beats a dev one", map[string]string{"Dockerfile": twoStage, "compose.dev.yaml": "services:\n  web:\n    build:\n      context: .\n      target: build\n", "compose.yaml": "services:\n  web:\n    build:\n      context: .\n      target: runtime\n"}, "", "", "Dockerfile#runtime", nil},
		{"a main file's later stage beats its dev stage", map[string]string{"Dockerfile": twoStage, "compose.yaml": "services:\n  dev:\n    build:\n      context: .\n      target: build\n  web:\n    build:\n      context: .\n      target: runtime\n"}, "", "", "Dockerfile#runtime", nil},
		{"--target beats compose", map[string]string{"Dockerfile": twoStage, "docker-compose.yml": "services:\n  web:\n    build:\n      context: .\n      target: runtime\n"}, "", "build", "Dockerfile#build", nil},
		{"no Dockerfile", map[string]string{"package.json": "{}"}, "", "", "#", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			repo := probetest.Repo(t, tt.files)
			ref, err := Selector{}.Select(t.Context(), repo, tt.dockerfile, tt.tgt)
			if tt.want == "error" {
				var se *probe.SelectionError
				if !errors.As(err, &se) {
					t.Fatalf("err = %v, want a SelectionError", err)
				}
				if diff := cmp.Diff(tt.choices, se.Choices); diff != "" {
					t.Errorf("choices (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ref.Key() != tt.want {
				t.Errorf("selected %s (%s), want %s", ref.Key(), ref.Why, tt.want)
			}
			if !ref.IsZero() && ref.Why == "" {
				t.Error("no reason given for the choice")
			}
		})
	}
}

func TestImagesListsEachDockerfile(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile":          "FROM node:22 AS dev\nFROM node:22 AS prod\n",
		"e2e/Dockerfile.test": "FROM node:22\n",
		"docker-compose.yml":  "services:\n  app:\n    build:\n      context: .\n      target: dev\n",
	})
	refs, err := Selector{}.Images(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refs {
		got = append(got, r.Key())
	}
	if diff := cmp.Diff([]string{"Dockerfile#dev", "e2e/Dockerfile.test#0"}, got); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}

func TestFileSet(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile": `FROM node:22 AS build
WORKDIR /src
COPY package*.json ./
COPY src/ ./src/
COPY tools/gen.js /opt/gen.js
RUN npm ci && npm run build

FROM gcr.io/distroless/nodejs22-debian13
WORKDIR /app
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/src ./src
COPY --from=build /src/dist ./dist
COPY static ./public
CMD ["dist/server.js"]
`,
		".dockerignore":           "**/*.test.js\nstatic/drafts\n!static/drafts/keep.html\n",
		"package.json":            "{}",
		"package-lock.json":       "{}",
		"src/server.ts":           "",
		"src/server.test.js":      "",
		"tools/gen.js":            "",
		"static/index.html":       "",
		"static/drafts/a.md":      "",
		"static/drafts/keep.html": "",
		"scripts/ci.sh":           "",
	})
	set, err := Files.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rel, ip := range set.Files {
		got = append(got, rel+" → "+ip)
	}
	sort.Strings(got)
	want := []string{
		"src/server.ts → /app/src/server.ts",
		"static/drafts/keep.html → /app/public/drafts/keep.html",
		"static/index.html → /app/public/index.html",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files in the final image (-want +got):\n%s", diff)
	}
	if !set.InstallsDependencies {
		t.Error("npm ci in the builder feeds node_modules, but InstallsDependencies is false")
	}
	if len(set.Generated) != 2 { // node_modules and dist come from RUN
		t.Errorf("generated %+v, want node_modules and dist", set.Generated)
	}
	// tools/gen.js was in the stage that generated dist/, so it may be
	// compiled into it: counted as shipped.
	for rel, want := range map[string]bool{"src/server.ts": true, "tools/gen.js": true, "scripts/ci.sh": false, "src/server.test.js": false, "node_modules/x/index.js": true} {
		if ships, known := set.Ships(rel); ships != want || !known {
			t.Errorf("Ships(%s) = %v, %v; want %v, true", rel, ships, known, want)
		}
	}
}

func TestFileSetUnresolvedCopy(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile": "FROM node:22\nARG DIR\nCOPY ${DIR} /app\n",
		"src/a.js":   "",
		"other.js":   "",
	})
	set, err := Files.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if ships, known := set.Ships("other.js"); known || !ships && len(set.Unresolved) == 0 {
		t.Errorf("Ships(other.js) = %v, %v with a COPY from an ARG without a default; want unknown", ships, known)
	}
	if len(set.Unresolved) != 1 || !strings.Contains(set.Unresolved[0], "DIR is an ARG without a default") {
		t.Errorf("Unresolved = %q, want one that says DIR has no default", set.Unresolved)
	}
}

// TestFileSetCopyFromUnreadableImage: what a COPY --from takes from an
// image codegenie cannot read (an organisation's own, directly or as a
// stage with no RUN) may be the app built elsewhere, so the file set is
// incomplete and says why; files from well-known images, and what a
// stage's RUN steps made, leave it complete.
func TestFileSetCopyFromUnreadableImage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dockerfile string
		unresolved       string
	}{
		{"a stage on an org image", "FROM someorg/prebuilt:1 AS base\nFROM node:22-slim\nCOPY --from=base /opt/app/dist ./dist\n", "COPY --from=base /opt/app/dist copies from someorg/prebuilt:1"},
		{"a chain of stages on it", "FROM ghcr.io/acme/app:7 AS a\nFROM a AS b\nWORKDIR /srv\nFROM node:22-slim\nCOPY --from=b /srv ./\n", "copies from ghcr.io/acme/app:7"},
		{"the image itself", "FROM node:22-slim\nCOPY --from=registry.example/team/api:2 /app /app\n", "COPY --from=registry.example/team/api:2 /app copies from registry.example/team/api:2"},
		{"an official image", "FROM node:22-slim\nCOPY --from=busybox:1 /bin/busybox /bin/\nCOPY --from=node:24 /usr/local/bin/node /usr/local/bin/\nCOPY server.js ./\n", ""},
		{"a stage whose RUN made it", "FROM acme/builder:1 AS b\nCOPY . .\nRUN make dist\nFROM node:22-slim\nCOPY --from=b /dist ./dist\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := probetest.Repo(t, map[string]string{"Dockerfile": tc.dockerfile, "server.js": "", "dist/index.js": ""})
			last := strconv.Itoa(strings.Count(tc.dockerfile, "FROM ") - 1)
			set, err := Files.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: last}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.unresolved == "" {
				if len(set.Unresolved) != 0 {
					t.Fatalf("Unresolved = %q, want none", set.Unresolved)
				}
				return
			}
			if len(set.Unresolved) != 1 || !strings.Contains(set.Unresolved[0], tc.unresolved) {
				t.Fatalf("Unresolved = %q, want one with %q", set.Unresolved, tc.unresolved)
			}
			if _, known := set.Ships("dist/index.js"); known {
				t.Error("dist/index.js is known not to ship, though the image may hold it")
			}
		})
	}
}

// TestFileSetExpandsArgs: COPY sources, COPY --from paths and WORKDIR
// expand ARG and ENV values as buildkit does, so a file set built through
// variables is complete.
func TestFileSetExpandsArgs(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile": `ARG APP_PATH=/srv/app
FROM node:22 AS base
ARG APP_PATH
ARG DIR=src
WORKDIR $APP_PATH
ENV LIB=lib
COPY ${DIR} ./src
COPY $LIB ${APP_PATH}/lib

FROM node:22-slim
ARG APP_PATH
WORKDIR ${APP_PATH:-/wrong}
COPY --from=base $APP_PATH/src ./src
COPY --from=base ${APP_PATH}/lib ./lib
`,
		"src/a.js": "",
		"lib/b.js": "",
		"other.js": "",
	})
	set, err := Files.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Unresolved) != 0 {
		t.Errorf("Unresolved = %q, want none", set.Unresolved)
	}
	for rel, want := range map[string]string{"src/a.js": "/srv/app/src/a.js", "lib/b.js": "/srv/app/lib/b.js"} {
		if got, ok := set.ImagePath(rel); !ok || got != want {
			t.Errorf("ImagePath(%s) = %q, %v; want %q", rel, got, ok, want)
		}
	}
	if ships, known := set.Ships("other.js"); ships || !known {
		t.Errorf("Ships(other.js) = %v, %v; want false, true", ships, known)
	}
	if len(set.Generated) != 0 {
		t.Errorf("Generated = %+v, want none: every --from path is the repository's", set.Generated)
	}
}

func TestGuessContext(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"docker/app.Dockerfile": "FROM node:22\nCOPY package.json ./\nCOPY src ./src\n",
		"package.json":          "{}",
		"src/index.js":          "",
	})
	j, err := Image.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "docker/app.Dockerfile", Target: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if j.Context != "." {
		t.Errorf("context %q (%s), want the repository root", j.Context, j.ContextWhy)
	}
}

// TestFileSetGlobMatchesDirectory: COPY lib* ./lib/ copies the contents of
// a matched directory, as Docker does.
func TestFileSetGlobMatchesDirectory(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile":   "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY lib* ./lib/\nCOPY *.js ./\n",
		"lib/git.js":   "",
		"lib/sub/x.js": "",
		"server.js":    "",
		"other/y.js":   "",
	})
	set, err := Files.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"lib/git.js": "/app/lib/git.js", "lib/sub/x.js": "/app/lib/sub/x.js", "server.js": "/app/server.js"} {
		if got, ok := set.ImagePath(rel); !ok || got != want {
			t.Errorf("%s → %q, %v; want %s", rel, got, ok, want)
		}
	}
	if ships, _ := set.Ships("other/y.js"); ships {
		t.Error("other/y.js ships, but no COPY brings it in")
	}
}

// TestNodeScript: a script path node is given resolves as node resolves it,
// to a file the image holds or a compiled one, and never when the path is
// itself a file of the image.
func TestNodeScript(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile": `FROM node:22 AS build
WORKDIR /app
COPY src ./src
RUN npx tsc

FROM node:22-slim
WORKDIR /app
COPY lib ./lib
COPY bin ./bin
COPY --from=build /app/dist ./dist
`,
		"lib/a.js":          "",
		"lib/a.json":        "",
		"lib/b.node":        "",
		"lib/c/index.js":    "",
		"lib/d.json":        "",
		"bin/run":           "",
		"src/main.ts":       "",
		"src/jobs/index.ts": "",
	})
	set, err := Files.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"/app/lib/a":     "/app/lib/a.js", // .js before .json
		"/app/lib/b":     "/app/lib/b.node",
		"/app/lib/c":     "/app/lib/c/index.js",
		"/app/lib/d":     "/app/lib/d.json",
		"/app/dist/main": "/app/dist/main.js",
		"/app/dist/jobs": "/app/dist/jobs/index.js",
		"/app/bin/run":   "", // a file of the image: it runs itself
		"/app/lib/none":  "",
		"/app/dist/none": "",
	} {
		got, ok := set.NodeScript(p)
		if got != want || ok != (want != "") {
			t.Errorf("NodeScript(%s) = %q, %v; want %q", p, got, ok, want)
		}
	}
}

// TestServiceFor: a compose service's command, entrypoint and healthcheck
// are the judged image's only when it builds the same Dockerfile and
// stage, from a compose file that is not a development one.
func TestServiceFor(t *testing.T) {
	t.Parallel()
	f, err := dockerfile.Parse("Dockerfile", []byte("FROM node:22 AS dev\nFROM node:22 AS prod\n"))
	if err != nil {
		t.Fatal(err)
	}
	builds := []ComposeBuild{
		{File: "compose.yaml", Service: "dev", Dockerfile: "Dockerfile", Target: "dev", Command: []string{"npm", "run", "dev"}},
		{File: "docker-compose.dev.yml", Service: "app", Dockerfile: "Dockerfile", Command: []string{"npm", "run", "watch"}},
		{File: "other/compose.yaml", Service: "x", Dockerfile: "other/Dockerfile"},
		{File: "compose.yaml", Service: "web", Dockerfile: "Dockerfile", Target: "prod", Command: []string{"node", "server.js"}},
	}
	for _, c := range []struct {
		stage int
		want  string
	}{{1, "web"}, {0, "dev"}} {
		got, ok := ServiceFor(builds, f, "Dockerfile", c.stage)
		if !ok || got.Service != c.want {
			t.Errorf("ServiceFor(stage %d) = %q, %v; want %q", c.stage, got.Service, ok, c.want)
		}
	}
	// Only a development file builds the last stage: no service runs it.
	if got, ok := ServiceFor(builds[1:2], f, "Dockerfile", 1); ok {
		t.Errorf("ServiceFor took %s of a development compose file", got.Service)
	}
}

func TestIsDevCompose(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]bool{
		"docker-compose.yml": false, "compose.yaml": false, "deploy/docker-compose.prod.yml": false,
		"docker-compose.dev.yml": true, "compose.dev.yaml": true, "docker-compose.override.yml": true,
		"docker-compose-test.yml": true, "test/docker-compose.yml": true, "e2e/compose.yaml": true, "packages/api/e2e/compose.yml": true,
	} {
		if got := IsDevCompose(file); got != want {
			t.Errorf("IsDevCompose(%s) = %v, want %v", file, got, want)
		}
	}
}

// addsPackages tells a step that installs packages by name, which a
// lockfile need not pin, from installs of what the lockfile pins and from
// global installs (outside any project's node_modules).
func TestAddsPackages(t *testing.T) {
	for cmd, want := range map[string]bool{
		"npm ci --omit=dev": false,
		"npm install":       false,
		"npm install --omit=dev && npm cache clean --force": false,
		"yarn install --frozen-lockfile":                    false,
		"pnpm install --frozen-lockfile":                    false,
		"npm install -g pnpm":                               false,
		"npm i --location=global pm2":                       false,
		"npm install bufferutil":                            true,
		"npm ci && npm i sharp@0.33":                        true,
		"yarn add left-pad":                                 true,
		"pnpm --allow-build='@prisma/engines' add prisma@7": true,
		"/usr/local/bin/npm install --no-save pg":           true,
	} {
		in := dockerfile.Instruction{Command: "run", Args: []string{cmd}}
		if got := addsPackages(in); got != want {
			t.Errorf("addsPackages(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// TestGuessContextSharedSource: a monorepo app's Dockerfile copies
// package.json, which its folder and the root both have, and turbo.json,
// which only the root has: the root is the context. A Dockerfile whose
// only other source is beside it keeps its folder.
func TestGuessContextSharedSource(t *testing.T) {
	t.Parallel()
	for df, want := range map[string]string{
		"apps/web/Dockerfile": ".",
		"apps/api/Dockerfile": "apps/api",
	} {
		repo := probetest.Repo(t, map[string]string{
			"apps/web/Dockerfile":   "FROM node:22 AS builder\nWORKDIR /app\nCOPY package.json .\nCOPY . .\nCOPY turbo.json turbo.json\n",
			"apps/web/package.json": "{}",
			"apps/api/Dockerfile":   "FROM node:22\nWORKDIR /app\nCOPY package.json .\nCOPY server.js .\n",
			"apps/api/package.json": "{}",
			"apps/api/server.js":    "",
			"package.json":          "{}",
			"turbo.json":            "{}",
		})
		j, err := Image.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: df, Target: "0"}})
		if err != nil {
			t.Fatal(err)
		}
		if j.Context != want {
			t.Errorf("%s: context %q (%s), want %q", df, j.Context, j.ContextWhy, want)
		}
	}
}

// TestFileSetRemoved: a builder's rm -rf of literal paths takes them out
// of what it hands on (logto deletes .scripts before the runtime copies
// the app); a glob, a path after a cd, and an rm without -r do not.
func TestFileSetRemoved(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile": "FROM node:22 AS builder\nWORKDIR /etc/app\nCOPY . .\nRUN pnpm i && pnpm build\n" +
			"RUN rm -rf .scripts pnpm-*.yaml packages/cloud && rm tools/a.js && cd docs && rm -rf guide\n" +
			"FROM node:22-alpine\nWORKDIR /etc/app\nCOPY --from=builder /etc/app .\nCMD [\"node\", \"packages/core/index.js\"]\n",
		"package.json":            "{}",
		"pnpm-workspace.yaml":     "",
		".scripts/publish.js":     "",
		"packages/cloud/index.js": "",
		"packages/core/index.js":  "",
		"tools/a.js":              "",
		"docs/guide/index.md":     "",
	})
	set, err := Files.Of(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{
		".scripts/publish.js": false, "packages/cloud/index.js": false, "packages/core/index.js": true,
		"pnpm-workspace.yaml": true, "tools/a.js": true, "docs/guide/index.md": true,
	} {
		if _, got := set.ImagePath(rel); got != want {
			t.Errorf("%s in the image: %v, want %v", rel, got, want)
		}
	}
}
