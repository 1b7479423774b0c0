package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/fleet/fleettest"
	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
	"github.com/codegenie/codegenie/internal/testbin"
)

// hiddenFrom runs argv in a mount namespace of its own in which each of
// hide is an empty tmpfs: a worker "host" that cannot see the client's
// folders. It skips, saying why, where mount namespaces are not allowed.
func hiddenFrom(t *testing.T, hide []string, argv ...string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is not installed: the workers need mount namespaces")
	}
	if out, err := exec.Command("unshare", "--mount", "--propagation", "private", "--", "mount", "-t", "tmpfs", "tmpfs", t.TempDir()).CombinedOutput(); err != nil {
		t.Skipf("no mount namespace with a tmpfs here (needs CAP_SYS_ADMIN): %v: %s", err, out)
	}
	script := `set -e; n=$1; shift; i=0; while [ $i -lt $n ]; do mount -t tmpfs -o ro,size=4k tmpfs "$1"; shift; i=$((i+1)); done; exec "$@"`
	args := append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", fmt.Sprint(len(hide))}, hide...)
	return exec.Command("unshare", append(args, argv...)...)
}

// lockedBuffer is a process's output, read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pushAll makes each generated checkout under src a git repository whose
// origin is its bare repository on srv, pushed and fetched back, as a
// clone is.
func pushAll(t *testing.T, srv *fleettest.GitServer, src string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		dir := filepath.Join(src, e.Name())
		if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
			t.Fatal(err)
		}
		bare := filepath.Join(srv.Base, e.Name()+".git")
		fleettest.Git(t, srv.Base, "init", "-q", "--bare", "--template=", bare)
		fleettest.Git(t, dir, "init", "-q", "-b", "main", "--template=")
		// Ignored files too: a fixture's node_modules is part of its tree.
		fleettest.Git(t, dir, "add", "-A", "-f")
		fleettest.Git(t, dir, "commit", "-q", "-m", "service")
		fleettest.Git(t, dir, "push", "-q", bare, "main")
		fleettest.Git(t, dir, "remote", "add", "origin", srv.URL(e.Name()))
		fleettest.Git(t, dir, "fetch", "-q", "origin")
	}
}

// TestTemporalPortfolioWorkersFetch runs a portfolio whose checkouts the
// two workers cannot see: each worker runs in a mount namespace in which
// the client's folders are empty, with a cache of its own, and fetches
// the code from a git daemon on loopback. Its records equal a local
// run's.
func TestTemporalPortfolioWorkersFetch(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	srv := fleettest.Start(t, work)
	git := fleettest.StartGit(t, filepath.Join(work, "git"))
	client := filepath.Join(work, "client")
	src := filepath.Join(client, "src")
	portfoliotest.Generate(t, src, 10)
	pushAll(t, git, src)
	store := filepath.Join(work, "store")
	bin := testbin.Path(t)

	ctx, cancel := context.WithCancel(t.Context())
	var workers sync.WaitGroup
	outs := make([]lockedBuffer, 2)
	for i := range 2 {
		host := filepath.Join(work, fmt.Sprintf("host%d", i))
		cmd := hiddenFrom(t, []string{client}, bin, "--cache-dir", filepath.Join(host, "cache"), "worker", "--tier", "static",
			"--temporal", srv.Addr, "--store", store, "--checkout-cache", filepath.Join(host, "checkouts"))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers.Go(func() {
			<-ctx.Done()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	defer func() {
		cancel()
		workers.Wait()
		if t.Failed() {
			for i := range outs {
				t.Logf("worker %d:\n%s", i, outs[i].String())
			}
		}
	}()

	localOut, remoteOut := filepath.Join(client, "local"), filepath.Join(client, "remote")
	common := []string{"portfolio", "--no-sandbox", "--temporal", ""}
	local := execute(t, t.Context(), append(append([]string{"--cache-dir", filepath.Join(client, "lcache")}, common...), "--out", localOut, src)...)
	remote := execute(t, t.Context(), append(append([]string{"--cache-dir", filepath.Join(client, "ccache")}, common...),
		"--temporal", srv.Addr, "--store", store, "--workers-fetch", "--static-heartbeat", waitLimit.String(), "--out", remoteOut, src)...)
	if local.code != remote.code || local.code != ExitNotReady {
		t.Fatalf("exit codes: local %d, temporal %d; want both %d\nlocal: %s\ntemporal: %s", local.code, remote.code, ExitNotReady, local.stderr, remote.stderr)
	}
	l, r := readDocument(t, localOut), readDocument(t, remoteOut)
	if len(l.Services) != len(r.Services) || len(l.Services) < 10 {
		t.Fatalf("%d services locally, %d on Temporal", len(l.Services), len(r.Services))
	}
	for i := range l.Services {
		a, b := l.Services[i], r.Services[i]
		a.Timings, b.Timings = portfolio.Timings{}, portfolio.Timings{}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s differs (-local +temporal):\n%s", a.ID, diff)
		}
	}
	// Both hosts fetched into their own caches, and neither reached the
	// client's folders: each saw them empty.
	fetched := 0
	for i := range 2 {
		ents, _ := os.ReadDir(filepath.Join(work, fmt.Sprintf("host%d", i), "checkouts"))
		fetched += len(ents)
		if strings.Contains(outs[i].String(), client) {
			t.Errorf("worker %d names a path of the client's:\n%s", i, outs[i].String())
		}
	}
	if fetched < 10 {
		t.Errorf("the workers' caches hold %d checkouts of 10 repositories", fetched)
	}

	// The control: the same workers told the client's paths (with
	// --migrate, so that no result is reused) cannot read them.
	shared := execute(t, t.Context(), append(append([]string{"--cache-dir", filepath.Join(client, "scache")}, common...),
		"--migrate", "--temporal", srv.Addr, "--store", store, "--static-heartbeat", waitLimit.String(), "--out", filepath.Join(client, "shared"), src)...)
	if sh := readDocument(t, filepath.Join(client, "shared")); cmp.Equal(sh.Totals, l.Totals) {
		t.Errorf("workers that were given the client's paths judged them as a local run does (exit %d): the client's folders are not hidden from them", shared.code)
	}

	// A dirty checkout is refused, and with --allow-dirty goes as a snapshot.
	if err := os.WriteFile(filepath.Join(src, "repo-0000", "local-change.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirty := execute(t, t.Context(), append(append([]string{"--cache-dir", filepath.Join(client, "ccache")}, common...),
		"--temporal", srv.Addr, "--store", store, "--workers-fetch", "--out", filepath.Join(client, "dirty"), src)...)
	if dirty.code != ExitUsage || !strings.Contains(dirty.stderr, "--allow-dirty") || !strings.Contains(dirty.stderr, "local-change.txt") {
		t.Errorf("a dirty checkout: exit %d, want %d naming the file and --allow-dirty:\n%s", dirty.code, ExitUsage, dirty.stderr)
	}
	snap := execute(t, t.Context(), append(append([]string{"--cache-dir", filepath.Join(client, "ccache")}, common...),
		"--temporal", srv.Addr, "--store", store, "--workers-fetch", "--allow-dirty", "--static-heartbeat", waitLimit.String(), "--out", filepath.Join(client, "snap"), src)...)
	if snap.code != ExitNotReady {
		t.Errorf("--allow-dirty: exit %d, want %d:\n%s", snap.code, ExitNotReady, snap.stderr)
	}
	snapped := 0
	for i := range 2 {
		ents, _ := os.ReadDir(filepath.Join(work, fmt.Sprintf("host%d", i), "checkouts"))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "snap-") {
				snapped++
			}
		}
	}
	if snapped != 1 {
		t.Errorf("%d snapshot checkouts on the workers, want 1 (repo-0000's)", snapped)
	}
}

// TestWorkersFetchFlagsNeedTemporal: the flags that name checkouts to
// workers are refused in a local run, which has no workers.
func TestWorkersFetchFlagsNeedTemporal(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	for _, flag := range []string{"--workers-fetch", "--allow-dirty", "--submodules"} {
		r := execute(t, t.Context(), "--cache-dir", t.TempDir(), "portfolio", "--no-sandbox", "--temporal", "", flag, "--out", t.TempDir(), src)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "need --temporal") {
			t.Errorf("%s without --temporal: exit %d, want %d saying it needs --temporal:\n%s", flag, r.code, ExitUsage, r.stderr)
		}
	}
}
