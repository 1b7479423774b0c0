package runsc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// exitingServer is the benchmark's server.js: it exits as soon as it
// listens, so that a boot's time is its time to "up" under both runtimes,
// not BootFor.
const exitingServer = `require('http').createServer((q, r) => r.end('ok')).listen(8080, () => { console.log('listening'); process.exit(0); });
`

// BenchmarkBuildBoot measures the build and boot of the two-stage fixture
// (builder target, then final target, then npm start until the server
// listens) three ways, in a rotating order within each iteration:
//
//   - gvisor+trace: Backend.Spawn with a BuildSpec and CaptureTrace, as
//     the shell_invocation_trace probe runs it;
//   - gvisor: the same without the trace;
//   - runc: the same private, hermetic buildah setup, but buildah bud
//     --isolation=oci --runtime=runc (no gVisor, no trace), then the
//     image booted by runc run from the same OCI config the backend writes
//     (plus the /dev that runc needs).
//
// Every variant starts from an empty private store, so each pulls the base
// images from the loopback registry. It reports the medians in
// milliseconds and the ratios of the medians. Run it with a fixed count:
//
//	go test -run '^$' -bench BuildBoot -benchtime 3x ./internal/sandbox/runsc/
func BenchmarkBuildBoot(b *testing.B) {
	be := newBackend(b, Config{})
	tools, err := be.buildTools()
	if err != nil {
		b.Fatal(err)
	}
	m := mirrors(b)
	ws := workspace(b, map[string]string{"Dockerfile": twoStageDockerfile, "package.json": npmPackage, "server.js": exitingServer})
	// sample is one build+boot: its total time, the time its RUN steps
	// took (header to committed layer, summed), and its boot's.
	type sample struct{ total, steps, boot time.Duration }
	spawn := func(traced bool) sample {
		req := buildRequest(ws, m, "builder", "")
		req.CaptureTrace = traced
		req.Build.BootFor = time.Minute
		start := time.Now()
		res, err := be.Spawn(b.Context(), req)
		d := time.Since(start)
		boot := phase(res.Phases, sandbox.PhaseBoot)
		if err != nil || res.ExitCode != 0 || boot.ExitCode != 0 || boot.TimedOut || traced && !res.TraceComplete {
			b.Fatalf("Spawn (trace %v): %v, exit %d, boot %+v, trace complete %v", traced, err, res.ExitCode, boot, res.TraceComplete)
		}
		s := sample{total: d, boot: boot.Duration}
		for _, p := range res.Phases {
			if strings.Contains(p.Name, ":step ") {
				s.steps += p.Duration
			}
		}
		return s
	}
	runc := func() sample {
		start := time.Now()
		steps, boot := runcBuildBoot(b, be, tools, ws, m)
		return sample{total: time.Since(start), steps: steps, boot: boot}
	}

	var rc, gv, gvt []sample
	for i := 0; b.Loop(); i++ {
		for k := range 3 {
			switch (i + k) % 3 {
			case 0:
				rc = append(rc, runc())
			case 1:
				gv = append(gv, spawn(false))
			case 2:
				gvt = append(gvt, spawn(true))
			}
		}
	}
	b.StopTimer()
	p50 := func(ss []sample, f func(sample) time.Duration) time.Duration {
		var ds []time.Duration
		for _, s := range ss {
			ds = append(ds, f(s))
		}
		return median(ds)
	}
	total := func(s sample) time.Duration { return s.total }
	steps := func(s sample) time.Duration { return s.steps }
	boot := func(s sample) time.Duration { return s.boot }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, v := range []struct {
		name string
		ss   []sample
	}{{"runc", rc}, {"gvisor", gv}, {"gvisor+trace", gvt}} {
		b.ReportMetric(ms(p50(v.ss, total)), v.name+"-p50-ms")
		b.ReportMetric(ms(p50(v.ss, steps)), v.name+"-step-p50-ms")
		b.ReportMetric(ms(p50(v.ss, boot)), v.name+"-boot-p50-ms")
		b.Logf("%-13s totals %v, RUN steps %v, boots %v", v.name,
			durations(v.ss, total), durations(v.ss, steps), durations(v.ss, boot))
	}
	b.ReportMetric(float64(p50(gvt, total))/float64(p50(rc, total)), "traced/runc")
	b.ReportMetric(float64(p50(gvt, total))/float64(p50(gv, total)), "trace-on/off")
	b.ReportMetric(0, "ns/op") // an iteration runs three builds: its time means little
}

func durations[S any](ss []S, f func(S) time.Duration) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = f(s).Round(time.Millisecond)
	}
	return out
}

// runcBuildBoot is the baseline: the fixture's two targets built by buildah
// with runc as the OCI runtime, in the same private store layout, then the
// image booted by runc until it exits. It returns the time the RUN steps
// took, read from buildah's output as for the gVisor builds, and the boot's.
func runcBuildBoot(b *testing.B, be *Backend, tools buildTools, ws string, m map[string]string) (steps, boot time.Duration) {
	b.Helper()
	ctx := b.Context()
	dir, err := os.MkdirTemp(be.cfg.StateDir, "runc")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bh, err := newBuildah(tools, filepath.Join(dir, "b"), m)
	if err != nil {
		b.Fatal(err)
	}
	limits := be.cfg.Limits
	stages, err := parseStages([]byte(twoStageDockerfile))
	if err != nil {
		b.Fatal(err)
	}
	var image string
	for i, target := range []string{"builder", ""} {
		tag := fmt.Sprintf("localhost/runc-bench-%d", i)
		args := []string{"bud", "--signature-policy", bh.path("policy.json"), "--isolation=oci", "--runtime=runc",
			"--network=none", "--layers", "--format=docker", "--pull=false",
			fmt.Sprintf("--ulimit=nofile=%d:%d", nofileSoft, nofileHard)}
		if !be.cfg.NoCgroups && be.enforce.Memory {
			args = append(args, fmt.Sprintf("--memory=%db", limits.MemoryBytes), fmt.Sprintf("--memory-swap=%db", limits.MemoryBytes))
		}
		if !be.cfg.NoCgroups && be.enforce.CPU {
			args = append(args, fmt.Sprintf("--cpu-period=%d", cpuPeriod), fmt.Sprintf("--cpu-quota=%d", int64(limits.CPUs*cpuPeriod)))
		}
		args = append(args, "-f", filepath.Join(ws, "Dockerfile"))
		if target != "" {
			args = append(args, "--target="+target)
		}
		args = append(args, "-t", tag, ws)
		cmd := bh.command(args...)
		idx := len(stages) - 1
		if target == "builder" {
			idx = 0
		}
		log := newBuildLog(stages, idx)
		lw := &lineWriter{fn: log.line, now: time.Now}
		cmd.Stdout, cmd.Stderr = lw, lw
		err := run(ctx, cmd)
		lw.flush()
		log.finish(time.Now())
		if err != nil {
			b.Fatalf("buildah bud with runc: %v\n%s", err, log.all)
		}
		for _, s := range log.ran() {
			steps += s.end.Sub(s.start)
		}
		if image, err = bh.imageID(ctx, tag); err != nil {
			b.Fatal(err)
		}
	}
	mt, err := bh.mount(ctx, image, "boot")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := bh.config(ctx, image)
	if err != nil {
		b.Fatal(err)
	}
	u, err := resolveUser(mt.rootfs, cfg.User)
	if err != nil {
		b.Fatal(err)
	}
	id := be.idPrefix() + "runcbench"
	in := specInput{
		args: append(slices.Clone(cfg.Entrypoint), cfg.Cmd...), env: append(slices.Clone(cfg.Env), "HOME="+u.home),
		cwd: cfg.WorkingDir, rootfs: mt.rootfs, hostname: be.cfg.Hostname, user: ociUser{UID: u.uid, GID: u.gid},
		platform: be.cfg.Platform, limits: limits, enforce: be.enforce,
	}
	if !be.cfg.NoCgroups {
		in.cgroupPath = "/" + id
	}
	spec := buildSpec(in)
	spec.Mounts = append([]ociMount{
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
	}, spec.Mounts...)
	bundle := filepath.Join(dir, "bundle")
	if err := os.Mkdir(bundle, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := writeSpec(bundle, spec); err != nil {
		b.Fatal(err)
	}
	runcPath, err := lookTool("runc")
	if err != nil {
		b.Fatal(err)
	}
	bctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(bctx, runcPath, "--root", filepath.Join(dir, "runc"), "run", "--bundle", bundle, id)
	cmd.Env = runscEnv
	start := time.Now()
	out, err := cmd.CombinedOutput()
	boot = time.Since(start)
	if err != nil {
		b.Fatalf("runc run: %v\n%s", err, out)
	}
	return steps, boot
}
