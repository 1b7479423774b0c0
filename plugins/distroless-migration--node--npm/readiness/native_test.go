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
	for _, s := range NativeStages(d, true) {
		roots = append(roots, s.Root)
	}
	if diff := cmp.Diff([]int{0, 3}, roots); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}
	roots = nil
	for _, s := range NativeStages(d, false) {
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
	got := NativeStages(d, true)
	if len(got) != 1 || got[0].Root != 0 {
		t.Errorf("NativeStages = %+v, want the builder (0)", got)
	}
}
