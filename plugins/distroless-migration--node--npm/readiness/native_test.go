package readiness

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// TestNativeStages: every stage whose native code ships is named, once,
// by the first stage of its FROM chain; a stage that ships only built
// JavaScript is not, nor the runtime's chain, which installs nothing.
func TestNativeStages(t *testing.T) {
	t.Parallel()
	src := `FROM node:22-alpine AS base
WORKDIR /app

FROM base AS deps
COPY package.json ./
RUN yarn --frozen-lockfile

FROM node:22-alpine AS build
WORKDIR /app
COPY . .
RUN npm ci && npm run build

FROM alpine:3.20 AS ext
RUN gcc -shared -o /out/vec0.so vec.c

FROM gcr.io/distroless/nodejs22-debian13
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=ext /out/vec0.so /app/ext/
CMD ["dist/main.js"]
`
	d, err := dockerfile.Parse("Dockerfile", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var roots []int
	for _, s := range NativeStages(d, true, nil) {
		roots = append(roots, s.Root)
	}
	if diff := cmp.Diff([]int{0, 3}, roots); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}
	roots = nil
	for _, s := range NativeStages(d, false, nil) {
		roots = append(roots, s.Root)
	}
	if diff := cmp.Diff([]int{3}, roots); diff != "" {
		t.Errorf("roots without addons (-want +got):\n%s", diff)
	}
}

// TestNativeStagesCommittedModules: a builder that only copies the build
// context, with its committed node_modules, ships them: its chain is
// listed though it installs nothing.
func TestNativeStagesCommittedModules(t *testing.T) {
	t.Parallel()
	d, err := dockerfile.Parse("Dockerfile", []byte("FROM node:22-alpine AS builder\nWORKDIR /app\nCOPY . .\n\nFROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY --from=builder /app /app\nCMD [\"server.js\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := NativeStages(d, true, nil)
	if len(got) != 1 || got[0].Root != 0 {
		t.Errorf("NativeStages = %+v, want the builder (0)", got)
	}
}

// TestNativeStagesOfStage: with no addon of the app's own, the chains
// whose stages hold one (a build project's, a package a RUN installs by
// name) are listed when what ships holds their node_modules: a Nitro
// .output, a node_modules copy. A chain with an addon whose node_modules
// stay behind (icons' sharp) is not, nor one without an addon.
func TestNativeStagesOfStage(t *testing.T) {
	t.Parallel()
	src := `FROM node:22-alpine AS build
WORKDIR /app
COPY web/package.json ./
RUN npm install
COPY web ./
RUN npm run build

FROM node:22-alpine AS sqlite
WORKDIR /app
RUN npm install --no-save libsql

FROM node:22-alpine AS icons
WORKDIR /tools
RUN npm install sharp && node make-icons.js

FROM node:22-alpine AS plain
WORKDIR /app
RUN npm install left-pad

FROM node:22-alpine
WORKDIR /app
COPY --from=build /app/.output /app
COPY --from=sqlite /app/node_modules /app/server/node_modules
COPY --from=icons /tools/out /app/public/icons
COPY --from=plain /app/node_modules /app/vendor/node_modules
CMD ["node", "server/index.mjs"]
`
	d, err := dockerfile.Parse("Dockerfile", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var roots []int
	for _, s := range NativeStages(d, false, map[int]bool{0: true, 1: true, 2: true}) {
		roots = append(roots, s.Root)
	}
	if diff := cmp.Diff([]int{0, 1}, roots); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}
}

// TestBuildsAddons: a project's install builds addons; a named install
// does when it names a known native package, or runs beside a project's
// install; one that only adds pure JavaScript packages does not.
func TestBuildsAddons(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]bool{
		"npm ci --omit=dev":              true,
		"yarn --frozen-lockfile":         true,
		"pnpm install --prod":            true,
		"npm install --no-save libsql":   true,
		"npm ci && npm install left-pad": true,
		"mkdir -p /tmp/fix && cd /tmp/fix && npm install undici@6.27.0 && cp -r node_modules/undici /usr/lib/node_modules/npm/node_modules/": false,
		"npm install -g pm2":   false,
		"npx node-gyp rebuild": true,
		"echo done":            false,
	} {
		if got := buildsAddons(line); got != want {
			t.Errorf("buildsAddons(%q) = %v, want %v", line, got, want)
		}
	}
}
