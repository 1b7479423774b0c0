package runsc

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/sandbox"
)

func TestImageBasesAndPin(t *testing.T) {
	t.Parallel()
	df := "ARG V=22\nFROM --platform=linux/amd64 node:22 AS builder\nRUN true\nFROM builder AS test\nFROM node:${V}\nFROM scratch\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=builder /a /a\nFROM node:22\n"
	stages, err := parseStages([]byte(df))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range imageBases(stages) {
		got = append(got, b.ref)
	}
	if diff := cmp.Diff([]string{"node:22", "gcr.io/distroless/nodejs22-debian13"}, got); diff != "" {
		t.Errorf("bases (-want +got):\n%s", diff)
	}
	id := strings.Repeat("a", 64)
	pinned := string(pinBases([]byte(df), stages, map[int]string{0: id, 5: id}))
	want := "ARG V=22\nFROM --platform=linux/amd64 " + id + " AS builder\nRUN true\nFROM builder AS test\nFROM node:${V}\nFROM scratch\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=builder /a /a\nFROM " + id + "\n"
	if diff := cmp.Diff(want, pinned); diff != "" {
		t.Errorf("pinned Dockerfile (-want +got):\n%s", diff)
	}
	for in, want := range map[string]int64{"146 MB": 146e6, "1.5 GB": 15e8, "12 kB": 12e3, "7 B": 7, "x": 0} {
		if got := parseSize(in); got != want {
			t.Errorf("parseSize(%q) = %d, want %d", in, got, want)
		}
	}
	if r := registryOf("node:22"); r != "docker.io" {
		t.Errorf("registry of node:22 = %s", r)
	}
	if r := registryOf("gcr.io/distroless/x"); r != "gcr.io" {
		t.Errorf("registry of gcr.io/distroless/x = %s", r)
	}
}

// TestBaseStore: concurrent builds on an empty shared store both succeed
// and leave the base once; a base no registry has is image_unavailable
// naming what was tried; Prune empties the store.
func TestBaseStore(t *testing.T) {
	store := t.TempDir()
	b := newBackend(t, Config{BaseStore: store})
	m := mirrors(t)
	ws := workspace(t, map[string]string{"Dockerfile": "FROM node:22-slim\nRUN true\nCMD [\"node\", \"-e\", \"1\"]\n"})
	var wg sync.WaitGroup
	results := make([]sandbox.Result, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() {
			req := buildRequest(ws, m, "")
			req.Build.Boot = false
			results[i], errs[i] = b.Spawn(t.Context(), req)
		})
	}
	wg.Wait()
	for i, res := range results {
		logResult(t, res)
		if errs[i] != nil || res.ExitCode != 0 || !res.TraceComplete {
			t.Fatalf("build %d: %v, exit %d, complete %v, phases %+v", i, errs[i], res.ExitCode, res.TraceComplete, res.Phases)
		}
	}
	st := &baseStore{dir: store}
	if imgs := st.list(); len(imgs) != 1 || imgs[0].bytes <= 0 {
		t.Errorf("store records %+v, want node:22-slim once, with its size", imgs)
	}

	// Both pulled under the reference's pull lock; the second found the
	// digest the first stored, and ran no buildah pull.
	if n := b.pulls.Load(); n != 1 {
		t.Errorf("%d buildah pulls for one base, want 1", n)
	}

	ws2 := workspace(t, map[string]string{"Dockerfile": "FROM node:99\nCMD [\"node\"]\n"})
	res, err := b.Spawn(t.Context(), buildRequest(ws2, m, ""))
	logResult(t, res)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pull:node:99"}, phaseNames(res.Phases)); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	p := phase(res.Phases, "pull:node:99")
	wantTried := "image unavailable: node:99 could not be pulled; tried " + m["docker.io"] + " (mirror of docker.io), then docker.io"
	if !p.Failed || res.ExitCode == 0 || !strings.Contains(p.OutputTail, wantTried) {
		t.Errorf("pull phase %+v, exit %d; want Failed with %q", p, res.ExitCode, wantTried)
	}

	ps, err := Prune(t.Context(), Config{StateDir: b.cfg.StateDir, BaseStore: store}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Removed != 1 || ps.Kept != 0 || len(st.list()) != 0 {
		t.Errorf("prune %+v, records left %+v; want the one image removed", ps, st.list())
	}
}

func TestPlanRequests(t *testing.T) {
	t.Parallel()
	cfg := imageConfig{
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "53/udp": {}},
		Healthcheck:  []string{"CMD-SHELL", "curl -f http://localhost:3000/healthz || exit 1"},
	}
	got := planRequests(cfg, []string{"/api", "/"})
	want := requestPlan{Ports: []int{3000, 8080}, Paths: []string{"/", "/healthz", "/api"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}
