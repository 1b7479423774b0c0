package noderuntime

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe/probetest"
)

func runOn(t *testing.T, files map[string]string) (*Facts, []string) {
	t.Helper()
	out := probetest.Run(t, New(), probetest.Repo(t, files))
	return out.Facts.(*Facts), probetest.WarningIDs(out)
}

func TestAlpineBuilderWithNativeAddon(t *testing.T) {
	t.Parallel()
	facts, ids := runOn(t, map[string]string{
		"Dockerfile":                          "FROM node:20-alpine AS builder\nRUN npm ci\nFROM node:22-slim\nCOPY --from=builder /app /app\nCMD [\"node\", \"/app/server.js\"]\n",
		"package.json":                        `{"dependencies": {"bcrypt": "^5"}}`,
		"node_modules/bcrypt/binding.gyp":     "{}",
		"node_modules/@img/sharp/prebuilds/x": "",
	})
	want := []string{WarnMajorMismatch, WarnMuslGlibc, WarnUnsupportedMajor, WarnNativeAddon, WarnNativeAddon, WarnNativeAddon}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	img := facts.Images[0]
	if img.Builder == nil || img.Builder.NodeMajor != 20 || img.Builder.Libc != "musl" || img.Runtime.NodeMajor != 22 || img.Runtime.Libc != "glibc" {
		t.Errorf("images = %+v / %+v", img.Builder, img.Runtime)
	}
	var natives []string
	for _, n := range facts.Native {
		natives = append(natives, n.Package+":"+n.How)
	}
	if diff := cmp.Diff([]string{"@img/sharp:prebuilds", "bcrypt:binding.gyp", "bcrypt:known_package"}, natives); diff != "" {
		t.Errorf("native (-want +got):\n%s", diff)
	}
}

func TestOSPackagesAndBinaries(t *testing.T) {
	t.Parallel()
	facts, ids := runOn(t, map[string]string{
		"Dockerfile": `FROM node:22 AS build
RUN apt-get update && apt-get install -y python3 make g++
FROM node:22-slim
RUN apt-get update && apt-get install -y --no-install-recommends tini curl=7.88 && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["tini", "--"]
HEALTHCHECK CMD curl -fsS http://localhost:8080/ || exit 1
CMD ["node", "server.js"]
`,
	})
	var pkgs []string
	for _, p := range facts.OSPackages {
		pkgs = append(pkgs, p.Name)
	}
	if diff := cmp.Diff([]string{"tini", "curl"}, pkgs); diff != "" {
		t.Errorf("final-stage packages (-want +got):\n%s", diff)
	}
	var bins []string
	for _, b := range facts.Binaries {
		bins = append(bins, b.Origin+":"+b.Binary)
	}
	if diff := cmp.Diff([]string{"entrypoint:tini", "healthcheck:curl"}, bins); diff != "" {
		t.Errorf("binaries (-want +got):\n%s", diff)
	}
	want := []string{WarnOSPackage, WarnOSPackage, WarnMissingBinary, WarnMissingBinary}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestDistrolessRuntime(t *testing.T) {
	t.Parallel()
	facts, ids := runOn(t, map[string]string{
		"Dockerfile": "FROM node:24 AS builder\nRUN npm ci\nFROM gcr.io/distroless/nodejs24-debian13\nCOPY --from=builder /app /app\nCMD [\"/app/server.js\"]\n",
	})
	if len(ids) != 0 {
		t.Errorf("warnings %v on a clean distroless Dockerfile", ids)
	}
	if rt := facts.Images[0].Runtime; rt.NodeMajor != 24 || rt.Kind != "distroless_node" {
		t.Errorf("runtime = %+v", rt)
	}
}
