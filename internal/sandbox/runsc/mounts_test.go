package runsc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/sandbox"
)

func TestAbsMountTargets(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{
			name: "docker init's template",
			in: "FROM node:22-slim AS base\nWORKDIR /usr/src/app\nRUN --mount=type=bind,source=package.json,target=package.json \\\n" +
				"    --mount=type=bind,source=package-lock.json,target=package-lock.json \\\n    --mount=type=cache,target=/root/.npm \\\n    npm ci --omit=dev\n",
			want: "FROM node:22-slim AS base\nWORKDIR /usr/src/app\nRUN --mount=type=bind,source=package.json,target=/usr/src/app/package.json \\\n" +
				"    --mount=type=bind,source=package-lock.json,target=/usr/src/app/package-lock.json \\\n    --mount=type=cache,target=/root/.npm \\\n    npm ci --omit=dev\n",
		},
		{
			name: "a stage inherits its base stage's WORKDIR; dst= too",
			in:   "FROM node:22 AS b\nWORKDIR /app\nFROM b\nRUN --mount=type=secret,id=x,dst=token cat token\n",
			want: "FROM node:22 AS b\nWORKDIR /app\nFROM b\nRUN --mount=type=secret,id=x,dst=/app/token cat token\n",
		},
		{
			name: "an unknown WORKDIR leaves it",
			in:   "FROM node:22\nRUN --mount=type=bind,target=package.json npm ci\n",
			want: "FROM node:22\nRUN --mount=type=bind,target=package.json npm ci\n",
		},
		{
			name: "a WORKDIR through a variable leaves it",
			in:   "FROM node:22\nWORKDIR $APP\nRUN --mount=type=bind,target=package.json npm ci\n",
			want: "FROM node:22\nWORKDIR $APP\nRUN --mount=type=bind,target=package.json npm ci\n",
		},
		{
			name: "a relative WORKDIR, and a word that only looks like a mount",
			in:   "FROM node:22\nWORKDIR /srv\nWORKDIR app\nRUN echo target=x && npm ci\n",
			want: "FROM node:22\nWORKDIR /srv\nWORKDIR app\nRUN echo target=x && npm ci\n",
		},
	} {
		if got := string(absMountTargets([]byte(tc.in))); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestBuildRelativeMountTarget builds `docker init`'s shape, a bind mount
// with a relative target under a WORKDIR, which buildah 1.28 refuses as
// written ("invalid container path").
func TestBuildRelativeMountTarget(t *testing.T) {
	b := newBackend(t, Config{})
	ws := workspace(t, map[string]string{
		"package.json": `{"name":"mounted"}`,
		"Dockerfile":   "FROM node:22-slim\nWORKDIR /usr/src/app\nRUN --mount=type=bind,source=package.json,target=package.json \\\n    cat package.json\n",
	})
	req := buildRequest(ws, mirrors(t), "")
	req.Build.Boot = false
	res, err := b.Spawn(t.Context(), req)
	logResult(t, res)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Spawn: %v, exit %d; want the build to pass", err, res.ExitCode)
	}
	if p := phase(res.Phases, "build:0:step 3"); !strings.Contains(p.OutputTail, `{"name":"mounted"}`) {
		t.Errorf("the step's output %q; want the mounted file", p.OutputTail)
	}
}

// TestBuildCacheMount: RUN --mount=type=cache, which buildah mounts with
// "shared" propagation, runs under runsc through the runtime shim, which
// drops the option runsc refuses (a real service's npm cache mount failed
// with 'mount option "shared" is not supported'). The CA bundle puts the
// build on the shim without a network.
func TestBuildCacheMount(t *testing.T) {
	b := newBackend(t, Config{})
	ws := workspace(t, map[string]string{
		"Dockerfile": "FROM node:22-slim\nRUN --mount=type=cache,target=/root/.npm \\\n    echo cached > /root/.npm/x && cat /root/.npm/x\n",
	})
	req := buildRequest(ws, mirrors(t), "")
	req.Build.Boot = false
	req.Build.Egress = sandbox.Egress{CA: []byte("-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n")}
	res, err := b.Spawn(t.Context(), req)
	logResult(t, res)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Spawn: %v, exit %d; want the build to pass", err, res.ExitCode)
	}
	if p := phase(res.Phases, "build:0:step 2"); !strings.Contains(p.OutputTail, "cached") {
		t.Errorf("the step's output %q; want it to have written the cache", p.OutputTail)
	}
}

// TestEditBundleDropsSharedPropagation: the shim removes only "shared"
// and "rshared" from a mount's options, and leaves a config with no
// mounts without any.
func TestEditBundleDropsSharedPropagation(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	write := func(s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"process":{"env":["A=1"]},"mounts":[{"destination":"/root/.npm","type":"bind","source":"/c","options":["rbind","shared","rw"]},{"destination":"/x","options":["ro"]}],"x-kept":true}`)
	if err := editBundle(p, shimConf{Runsc: "/r"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), `"options":["rbind","rw"]`) || !strings.Contains(string(b), `"options":["ro"]`) || !strings.Contains(string(b), `"x-kept":true`) || strings.Contains(string(b), "shared") {
		t.Errorf("edited config %s", b)
	}
	write(`{"process":{"env":[]}}`)
	if err := editBundle(p, shimConf{Runsc: "/r"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); strings.Contains(string(b), "mounts") {
		t.Errorf("a config without mounts got some: %s", b)
	}
}
