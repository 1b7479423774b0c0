package runsc

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

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

// TestStoreLock: a pull waits for the builds that read the store, a build
// that comes while a pull waits reads only after it, and every wait gives
// up when its context ends, with the spawn's cause.
func TestStoreLock(t *testing.T) {
	t.Parallel()
	st := &baseStore{dir: t.TempDir()}
	ctx := t.Context()
	r1, err := st.reading(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A pull cannot write while a build reads; it gives up with its
	// context's cause.
	short, cancel := context.WithTimeoutCause(ctx, 300*time.Millisecond, errors.New("the spawn's 3m0s timeout"))
	defer cancel()
	if _, err := st.writing(short); err == nil || !strings.Contains(err.Error(), "the builds that read the shared store: the spawn's 3m0s timeout") {
		t.Fatalf("writing while a build reads: %v", err)
	}
	order := make(chan string, 3)
	wrote := make(chan struct{})
	go func() {
		release, err := st.writing(ctx)
		if err != nil {
			t.Error(err)
			close(wrote)
			return
		}
		order <- "pull"
		release()
		close(wrote)
	}()
	// The pull now holds gate.lock and waits for r1: a new build waits
	// behind it. Wait for the pull to be queued (its gate lock held).
	waitHeld(t, st.path(gateLockName))
	read2 := make(chan struct{})
	go func() {
		release, err := st.reading(ctx)
		if err != nil {
			t.Error(err)
			close(read2)
			return
		}
		order <- "build 2"
		release()
		close(read2)
	}()
	r1()
	<-wrote
	<-read2
	close(order)
	var got []string
	for s := range order {
		got = append(got, s)
	}
	if diff := cmp.Diff([]string{"pull", "build 2"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// waitHeld waits, for minutes at most, until someone holds file's flock.
func waitHeld(t *testing.T, file string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("nobody took %s within 3 minutes", file)
}
