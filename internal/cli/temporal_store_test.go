package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codegenie/codegenie/internal/fleet/fleettest"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
)

// TestTemporalPortfolioWithAnS3Store runs a portfolio on Temporal with two
// static workers and the client sharing no directory: the results go to a
// real S3 server. The outputs equal a local run's totals, status reads the
// run back from the bucket, and cache prune --all empties it.
func TestTemporalPortfolioWithAnS3Store(t *testing.T) {
	work := t.TempDir()
	srv := fleettest.Start(t, work)
	s3 := fleettest.StartS3(t, filepath.Join(work, "s3"))
	s3.SetEnv(t)
	store := s3.URL("fleet/results")
	src := filepath.Join(work, "src")
	portfoliotest.GenerateFrom(t, src, 6, []string{"npm-start-plain", "already-distroless", "broken-dockerfile"})
	ctx, cancel := context.WithCancel(t.Context())
	var workers sync.WaitGroup
	logs := make([]result, 2)
	for i := range 2 {
		workers.Go(func() {
			logs[i] = execute(t, ctx, "--cache-dir", filepath.Join(work, fmt.Sprintf("wcache%d", i)), "worker", "--tier", "static",
				"--temporal", srv.Addr, "--store", store)
		})
	}
	stopWorkers := func() {
		cancel()
		workers.Wait()
		for i, r := range logs {
			if r.code != 0 {
				t.Errorf("worker %d: exit %d: %s", i, r.code, r.stderr)
			}
		}
	}
	defer func() {
		if ctx.Err() == nil {
			stopWorkers()
		}
	}()
	local := execute(t, t.Context(), "--cache-dir", filepath.Join(work, "lcache"), "portfolio", "--no-sandbox", "--out", filepath.Join(work, "local"), src)
	remote := execute(t, t.Context(), "--cache-dir", filepath.Join(work, "ccache"), "portfolio", "--no-sandbox", "--temporal", srv.Addr,
		"--store", store, "--static-heartbeat", waitLimit.String(), "--out", filepath.Join(work, "remote"), src)
	if local.code != remote.code {
		t.Fatalf("exit codes: local %d, temporal %d\nlocal: %s\ntemporal: %s", local.code, remote.code, local.stderr, remote.stderr)
	}
	l, r := readDocument(t, filepath.Join(work, "local")), readDocument(t, filepath.Join(work, "remote"))
	if l.Totals.Services != 6 || l.Totals.Services != r.Totals.Services || l.Totals.ByVerdict["ready"] != r.Totals.ByVerdict["ready"] {
		t.Errorf("totals: local %+v, temporal %+v", l.Totals, r.Totals)
	}
	m := runLine.FindStringSubmatch(remote.stderr)
	if m == nil {
		t.Fatalf("the client printed no workflow ID:\n%s", remote.stderr)
	}
	id := m[1]
	var st struct {
		Status string `json:"status"`
		Total  int    `json:"total"`
	}
	status := execute(t, t.Context(), "portfolio", "status", "--temporal", srv.Addr, "--store", store, id)
	if err := json.Unmarshal([]byte(status.stdout), &st); err != nil || st.Status != "completed" || st.Total != 6 {
		t.Errorf("status: %s (%v)\n%s", status.stdout, err, status.stderr)
	}
	stopWorkers()
	for i, w := range logs {
		if !strings.Contains(w.stderr, `store="`+strings.Split(store, "?")[0]) {
			t.Errorf("worker %d does not say its store:\n%s", i, w.stderr)
		}
	}
	pr := execute(t, t.Context(), "--cache-dir", filepath.Join(work, "ccache"), "cache", "prune", "--all", "--store", store, "--base-store", filepath.Join(work, "none"))
	if pr.code != 0 || !strings.Contains(pr.stdout, "results: removed") || strings.Contains(pr.stdout, "results: removed 0 ") {
		t.Errorf("cache prune --all --store %s: exit %d\n%s%s", store, pr.code, pr.stdout, pr.stderr)
	}
}

// TestTemporalStoreRefusesUnsupportedSchemes: a gs:// store is a usage
// error that says what to use instead.
func TestTemporalStoreRefusesUnsupportedSchemes(t *testing.T) {
	t.Parallel()
	r := execute(t, t.Context(), "portfolio", "status", "--temporal", "127.0.0.1:1", "--store", "gs://bucket/x", "some-id")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "gs:// result stores are not supported") || !strings.Contains(r.stderr, "s3://") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// TestTemporalPortfolioOverTLS runs a worker and a portfolio through a TLS
// terminator of the test's own in front of the dev server, which takes
// only clients with a certificate from the test's CA; an API key in the
// environment is never printed. Without the client certificate the
// portfolio command fails and says how to connect.
func TestTemporalPortfolioOverTLS(t *testing.T) {
	work := t.TempDir()
	srv := fleettest.Start(t, work)
	pki := fleettest.NewPKI(t, work)
	proxy := fleettest.StartTLSProxy(t, pki, srv.Addr)
	const key = "cg-cli-api-key-93b2"
	t.Setenv(apiKeyEnv, key)
	tlsArgs := []string{"--temporal", proxy.Addr, "--temporal-tls-ca", pki.CAFile, "--temporal-tls-cert", pki.ClientCertFile, "--temporal-tls-key", pki.ClientKeyFile}
	store := filepath.Join(work, "results")
	src := filepath.Join(work, "src")
	portfoliotest.GenerateFrom(t, src, 2, []string{"npm-start-plain"})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var w result
	wg.Go(func() {
		w = execute(t, ctx, append([]string{"--cache-dir", filepath.Join(work, "wcache"), "worker", "--tier", "static", "--store", store}, tlsArgs...)...)
	})
	run := execute(t, t.Context(), append(append([]string{"--cache-dir", filepath.Join(work, "ccache"), "portfolio", "--no-sandbox", "--store", store,
		"--static-heartbeat", waitLimit.String(), "--out", filepath.Join(work, "out")}, tlsArgs...), src)...)
	cancel()
	wg.Wait()
	if run.code != 0 && run.code != ExitNotReady {
		t.Fatalf("portfolio over TLS: exit %d\n%s", run.code, run.stderr)
	}
	if doc := readDocument(t, filepath.Join(work, "out")); doc.Totals.Services != 2 {
		t.Errorf("%d services, want 2", doc.Totals.Services)
	}
	if w.code != 0 || !strings.Contains(w.stderr, "msg=done") {
		t.Errorf("the worker: exit %d\n%s", w.code, w.stderr)
	}
	noCert := execute(t, t.Context(), "portfolio", "status", "--temporal", proxy.Addr, "--temporal-tls-ca", pki.CAFile, "--store", store, "any-id")
	if noCert.code == 0 || !strings.Contains(noCert.stderr, "TLS") {
		t.Errorf("without a client certificate: exit %d\n%s", noCert.code, noCert.stderr)
	}
	half := execute(t, t.Context(), "portfolio", "status", "--temporal", proxy.Addr, "--temporal-tls-cert", pki.ClientCertFile, "--store", store, "any-id")
	if half.code != ExitUsage || !strings.Contains(half.stderr, "--temporal-tls-key") {
		t.Errorf("a certificate without its key: exit %d\n%s", half.code, half.stderr)
	}
	for name, r := range map[string]result{"worker": w, "portfolio": run, "no certificate": noCert, "half": half} {
		if strings.Contains(r.stdout+r.stderr, key) {
			t.Errorf("%s printed the API key", name)
		}
	}
	if proxy.Relayed.Load() == 0 {
		t.Error("the terminator relayed no connection")
	}
}
