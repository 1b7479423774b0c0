package runsc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// egressFixture is the plugin's Express service (testdata/deps/express):
// npm ci installs express and its 60-odd dependencies from the npm
// registry.
const egressFixture = "../../../plugins/distroless-migration--node--npm/testdata/deps/express"

// hostCABundle is the host's trust store: this machine's HTTPS presents a
// CA that only it holds (ENVIRONMENT.md).
const hostCABundle = "/etc/ssl/certs/ca-certificates.crt"

// BenchmarkBuildEgress measures a build that installs real dependencies
// two ways, alternating within each iteration:
//
//   - traced+egress: Backend.Spawn with CaptureTrace and the egress proxy
//     (the npm registry allowed, the host's CA bundle passed), every RUN
//     step in gVisor, as the trace probe builds;
//   - host: buildah bud with runc and --network=host, untraced, the same
//     private store layout; npm trusts the host's CA bundle through a
//     mounted ~/.npmrc.
//
// Both build the two-stage Express service with their base images already
// pulled (the traced build's in the shared base store, the host build's in
// its private one), and both download the packages from the npm registry. It reports the medians in milliseconds
// and their ratio (issue 20's goal: at most 1.3):
//
//	go test -run '^$' -bench BuildEgress -benchtime 3x ./internal/sandbox/runsc/
func BenchmarkBuildEgress(b *testing.B) {
	ca, err := os.ReadFile(hostCABundle)
	if err != nil {
		b.Skipf("no host CA bundle: %v", err)
	}
	be := newBackend(b, Config{})
	tools, err := be.buildTools()
	if err != nil {
		b.Fatal(err)
	}
	m := mirrors(b)
	ws, err := filepath.Abs(egressFixture)
	if err != nil {
		b.Fatal(err)
	}
	traced := func() time.Duration {
		req := buildRequest(ws, m, "")
		req.Build.Boot = false
		req.Build.Egress = sandbox.Egress{Allow: []string{"registry.npmjs.org"}, CA: ca}
		start := time.Now()
		res, err := be.Spawn(b.Context(), req)
		d := time.Since(start)
		if err != nil || res.ExitCode != 0 || !res.TraceComplete {
			b.Fatalf("Spawn: %v, exit %d, trace complete %v, phases %+v", err, res.ExitCode, res.TraceComplete, res.Phases)
		}
		return d
	}
	host := func() time.Duration {
		dir, err := os.MkdirTemp(be.cfg.StateDir, "host")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.Mkdir(filepath.Join(dir, "b"), 0o700); err != nil {
			b.Fatal(err)
		}
		bh, err := newBuildah(tools, filepath.Join(dir, "b"), m)
		if err != nil {
			b.Fatal(err)
		}
		npmrc := filepath.Join(dir, "npmrc")
		if err := os.WriteFile(npmrc, []byte("cafile=/tmp/host-ca.pem\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		args := []string{"bud", "--signature-policy", bh.path("policy.json"), "--isolation=oci", "--runtime=runc",
			"--network=host", "--layers=false", "--format=docker",
			"-v", hostCABundle + ":/tmp/host-ca.pem:ro", "-v", npmrc + ":/root/.npmrc:ro",
			fmt.Sprintf("--ulimit=nofile=%d:%d", nofileSoft, nofileHard)}
		// The traced build's bases come from the shared base store: pull
		// these before the clock starts, so that both measure the build.
		for _, ref := range []string{"docker.io/library/node:22", "docker.io/library/node:22-slim"} {
			if out, err := bh.command("pull", "--signature-policy", bh.path("policy.json"), "--quiet", ref).CombinedOutput(); err != nil {
				b.Fatalf("buildah pull %s: %v\n%s", ref, err, out)
			}
		}
		args = append(args, "--pull=false", "-f", filepath.Join(ws, "Dockerfile"), "-t", "localhost/host-bench", ws)
		cmd := bh.command(args...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("buildah bud with runc and the host network: %v\n%s", err, out)
		}
		return d
	}
	var tr, hs []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			tr, hs = append(tr, traced()), append(hs, host())
		} else {
			hs, tr = append(hs, host()), append(tr, traced())
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(median(tr)), "traced+egress-p50-ms")
	b.ReportMetric(ms(median(hs)), "host-p50-ms")
	b.ReportMetric(float64(median(tr))/float64(median(hs)), "traced/host")
	b.Logf("traced+egress %v; host %v", durations(tr, func(d time.Duration) time.Duration { return d }), durations(hs, func(d time.Duration) time.Duration { return d }))
	b.ReportMetric(0, "ns/op")
}
