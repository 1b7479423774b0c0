package noderuntime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
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

// TestNodeMajor: an official node image's tag names its major by number
// or by LTS codename; a digest does not hide the tag.
func TestNodeMajor(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]int{
		"node:22-alpine":             22,
		"node:22.11.0-bookworm-slim": 22,
		"docker.io/library/node:krypton-alpine@sha256:d32cdf619f63fe0471182d08996dd516c6275bb5fd31ae06e55a570bd9e1ad43": 24,
		"node:jod":                          22,
		"node:iron-slim":                    20,
		"node:20@sha256:0123456789abcdef":   20,
		"node:lts-alpine":                   0,
		"node":                              0,
		"registry.local:5000/node:hydrogen": 18,
	} {
		if got := NodeMajor(ref); got != want {
			t.Errorf("NodeMajor(%q) = %d, want %d", ref, got, want)
		}
	}
}

// A lockfile install mounts every package the lockfile pins, at any depth
// and for every platform: the ones npm installs on linux x64 with a
// binding.gyp or a compiled addon outside prebuilds/ are native code; a
// package with only per-libc prebuilds, one for another platform, and
// one without native code are not.
func TestNativeInstalledPackages(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pkg := func(name, pj string, files ...string) probe.Mount {
		dir := filepath.Join(t.TempDir(), "pkg")
		listed := append([]string{"package.json"}, files...)
		for _, f := range listed {
			body := ""
			if f == "package.json" {
				body = pj
			}
			p := filepath.Join(dir, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return probe.Mount{Path: "service/node_modules/" + name, Dir: dir, Files: listed}
	}
	repo, err := probe.OpenRepo(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.AddMounts(
		pkg("@atproto/pds", `{"name":"@atproto/pds"}`, "dist/index.js"),
		pkg("@atproto/pds/node_modules/better-sqlite3", `{"name":"better-sqlite3"}`, "binding.gyp", "lib/index.js"),
		pkg("@ngrok/ngrok-linux-x64-musl", `{"os":["linux"],"cpu":["x64"],"libc":["musl"]}`, "ngrok.linux-x64-musl.node"),
		pkg("@ngrok/ngrok-darwin-arm64", `{"os":["darwin"],"cpu":["arm64"]}`, "ngrok.darwin-arm64.node"),
		pkg("fsevents", `{"os":["darwin"]}`, "fsevents.node"),
		pkg("@img/sharp-linux-arm64", `{"os":["linux"],"cpu":["arm64"]}`, "lib/sharp-linux-arm64.node"),
		pkg("bufferutil", `{"name":"bufferutil"}`, "prebuilds/linux-x64/bufferutil.glibc.node", "prebuilds/linux-x64/bufferutil.musl.node"),
		pkg("not-windows", `{"os":["!win32"]}`, "build/Release/x.node"),
	); err != nil {
		t.Fatal(err)
	}
	facts := &Facts{}
	nativeInstalled(repo, "service", facts)
	var got []string
	for _, n := range facts.Native {
		got = append(got, n.Package+":"+n.How+":"+n.File)
	}
	want := []string{
		"better-sqlite3:binding.gyp:service/node_modules/@atproto/pds/node_modules/better-sqlite3/binding.gyp",
		"@ngrok/ngrok-linux-x64-musl:compiled_addon:service/node_modules/@ngrok/ngrok-linux-x64-musl/ngrok.linux-x64-musl.node",
		"not-windows:compiled_addon:service/node_modules/not-windows/build/Release/x.node",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("native (-want +got):\n%s", diff)
	}
	// The app folder is another one: nothing of service/ is its.
	other := &Facts{}
	nativeInstalled(repo, ".", other)
	if len(other.Native) != 0 {
		t.Errorf("native of the root folder = %+v, want none", other.Native)
	}
}
