package runsc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
)

// BenchmarkSpawnTrue measures the cost of the Backend against runsc alone:
// each iteration runs busybox true three ways, one after the other in a
// rotating order, so that the machine's noise hits all three alike:
//
//   - raw: runsc run on a bundle made once beforehand, with the same flags
//     and the same config.json as the Backend writes, in a root directory
//     reused across runs;
//   - backend: Backend.Spawn, which also validates, resolves the command,
//     makes and removes the spawn directory, bundle and runsc root, and
//     captures the output;
//   - backend+trace: the same with CaptureTrace (listener, pod-init-config,
//     collection, and the exec witness: runsc's strace log, counted);
//   - backend+trace-no-witness: the same without the witness, so that
//     witness-p50-ms, the median of the per-iteration differences, is
//     what the witness costs.
//
// It reports the medians in milliseconds, and the median of the
// per-iteration differences as overhead-p50-ms. Run it with a fixed count,
// for example -bench SpawnTrue -benchtime 20x.
func BenchmarkSpawnTrue(b *testing.B) {
	rootfs := sandboxtest.BusyboxRootfs(b)
	be := newBackend(b, Config{Rootfs: rootfs})
	ws := b.TempDir()

	// The raw bundle: what Spawn would write for the same request.
	rawDir, err := os.MkdirTemp("", "cgbench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(rawDir) })
	bundle, root := filepath.Join(rawDir, "bundle"), filepath.Join(rawDir, "root")
	for _, d := range []string{bundle, root} {
		if err := os.Mkdir(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	cgroupPath := ""
	if !be.cfg.NoCgroups {
		cgroupPath = "/" + be.idPrefix() + "bench"
	}
	spec := buildSpec(specInput{
		args: []string{"true"}, env: []string{defaultPath}, cwd: DefaultMount, rootfs: rootfs, hostname: be.cfg.Hostname,
		workspace: ws, mount: DefaultMount, platform: be.cfg.Platform, cgroupPath: cgroupPath,
		limits: be.cfg.Limits, enforce: be.enforce,
	})
	if err := writeSpec(bundle, spec); err != nil {
		b.Fatal(err)
	}
	raw := func(i int) time.Duration {
		args := append(be.globalFlags(root, false, ""), "--log="+filepath.Join(rawDir, "runsc.log"), "--log-format=json",
			"run", "--bundle", bundle, fmt.Sprintf("%sraw%d", be.idPrefix(), i))
		cmd := exec.Command(be.cfg.Runsc, args...)
		cmd.Env = runscEnv
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("raw runsc run: %v\n%s", err, out)
		}
		return d
	}
	noWitness := newBackend(b, Config{Rootfs: rootfs})
	noWitness.noWitness = true
	spawnNoWitness := func() time.Duration {
		start := time.Now()
		res, err := noWitness.Spawn(b.Context(), sandbox.SpawnRequest{
			Role: sandbox.RoleGate, Workspace: sandbox.Workspace{Dir: ws}, Command: []string{"true"}, CaptureTrace: true,
		})
		d := time.Since(start)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("Spawn without witness: %v, exit %d, stderr %q", err, res.ExitCode, res.Stderr)
		}
		return d
	}
	spawn := func(trace bool) time.Duration {
		start := time.Now()
		res, err := be.Spawn(b.Context(), sandbox.SpawnRequest{
			Role: sandbox.RoleGate, Workspace: sandbox.Workspace{Dir: ws}, Command: []string{"true"}, CaptureTrace: trace,
		})
		d := time.Since(start)
		if err != nil || res.ExitCode != 0 || (trace && !res.TraceComplete) {
			b.Fatalf("Spawn: %v, exit %d, trace complete %v, stderr %q", err, res.ExitCode, res.TraceComplete, res.Stderr)
		}
		return d
	}

	// One warm-up of each, so that page cache and cgroup setup do not
	// count against whichever runs first.
	raw(-1)
	spawn(false)

	var rawD, backendD, traceD, bareD, overhead, witness []time.Duration
	for i := 0; b.Loop(); i++ {
		// Rotate the order, so that none always runs right after another's
		// teardown.
		var r, s, tr, nw time.Duration
		for k := range 4 {
			switch (i + k) % 4 {
			case 0:
				r = raw(i)
			case 1:
				s = spawn(false)
			case 2:
				tr = spawn(true)
			case 3:
				nw = spawnNoWitness()
			}
		}
		rawD = append(rawD, r)
		backendD = append(backendD, s)
		traceD = append(traceD, tr)
		bareD = append(bareD, nw)
		overhead = append(overhead, s-r)
		witness = append(witness, tr-nw)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(median(rawD)), "raw-p50-ms")
	b.ReportMetric(ms(median(backendD)), "backend-p50-ms")
	b.ReportMetric(ms(median(traceD)), "backend+trace-p50-ms")
	b.ReportMetric(ms(median(bareD)), "backend+trace-no-witness-p50-ms")
	b.ReportMetric(ms(median(overhead)), "overhead-p50-ms")
	b.ReportMetric(ms(median(witness)), "witness-p50-ms")
	b.ReportMetric(0, "ns/op") // an iteration runs three sandboxes: its time means little
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
