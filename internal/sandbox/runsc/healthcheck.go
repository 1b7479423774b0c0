package runsc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// The image's HEALTHCHECK, run once during the boot. Some shells run only
// when something asks the service: a healthcheck command is the first such
// thing a real orchestrator does. When the boot is traced and the image
// has a HEALTHCHECK (CMD or CMD-SHELL), the backend runs its command in
// the booted sandbox with runsc exec, as the image's user, in its working
// directory, when the boot's readiness says (ready.go), bounded by the
// boot's maximum. gVisor reports no event for a process that runsc exec
// starts (blind spot 2), so the backend reads its sandbox-internal PID
// (--internal-pid-file), inserts its exec event, and attributes it and
// every process below it to sandbox.PhaseHealthcheck. A command missing
// from the image (a CMD-SHELL on a base without /bin/sh) does not run: the
// phase fails with exit 127. The phase's exit code is the command's.

// healthArgv is the command of a HEALTHCHECK test, or nil for none.
func healthArgv(test []string) []string {
	switch {
	case len(test) >= 2 && test[0] == "CMD":
		return test[1:]
	case len(test) == 2 && test[0] == "CMD-SHELL":
		return []string{"/bin/sh", "-c", test[1]}
	}
	return nil
}

// healthRun is the healthcheck of one boot.
type healthRun struct {
	argv   []string
	lookup lookup
	start  time.Time
	// pid is the command's PID inside the sandbox; 0 when it did not run.
	pid   int32
	phase sandbox.PhaseResult
}

// runHealthcheck runs hc in container id of spawn sp now, until deadline
// at the latest. It returns when the command has ended or ctx is done; a
// deadline too close to run it leaves hc.phase.Name empty.
func (b *Backend) runHealthcheck(ctx context.Context, sp *spawnDir, id string, c container, hc *healthRun, deadline time.Time) {
	hc.phase = sandbox.PhaseResult{Name: sandbox.PhaseHealthcheck, ExitCode: -1}
	hc.start = time.Now()
	if hc.lookup.state == lookupMissing || hc.lookup.state == lookupNotExecutable {
		hc.phase.Failed, hc.phase.ExitCode = true, 127
		hc.phase.OutputTail = fmt.Sprintf("%s: not found in the image\n", hc.argv[0])
		return
	}
	// What is left of the boot, less a margin for runsc exec itself.
	left := time.Until(deadline) - 500*time.Millisecond
	if left <= 0 {
		hc.phase.Name = ""
		return
	}
	ectx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	pidFile := filepath.Join(sp.dir, "health.pid")
	args := b.globalFlags(sp.root(), false, c.upper)
	args = append(args, "exec", "--internal-pid-file="+pidFile,
		fmt.Sprintf("--user=%d:%d", c.spec.user.UID, c.spec.user.GID), "--cwd="+c.spec.cwd, id)
	args = append(args, hc.argv...)
	out := newBoundedBuffer(64 << 10)
	cmd := exec.CommandContext(ectx, b.cfg.Runsc, args...)
	cmd.Env = runscEnv
	cmd.Stdout, cmd.Stderr = out, out
	// In the spawn's tracking cgroup: the watchdog kills it with the rest
	// if this process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	intoCgroup(cmd, sp.cgroup)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	hc.phase.Duration = time.Since(hc.start)
	o, _ := out.result()
	hc.phase.OutputTail = outputTail(o, nil)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		hc.phase.ExitCode = 0
	case errors.As(err, &exitErr) && ectx.Err() == nil:
		hc.phase.ExitCode = exitErr.ExitCode()
	default:
		hc.phase.TimedOut = ectx.Err() != nil
	}
	hc.phase.Failed = hc.phase.ExitCode != 0
	if b, err := os.ReadFile(pidFile); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 32); err == nil && v > 0 {
			hc.pid = int32(v)
		}
	}
}

// attributeHealth gives the healthcheck's process and its descendants in
// the boot container the healthcheck phase, and inserts the exec event of
// its first process before that process's first event.
func attributeHealth(events []trace.Event, bootID string, hc *healthRun) []trace.Event {
	if hc == nil || hc.pid == 0 {
		return events
	}
	mine := map[int32]bool{hc.pid: true}
	first := -1
	for i := range events {
		e := &events[i]
		if e.Container != bootID {
			continue
		}
		if !mine[e.PID] && e.PPID != 0 && mine[e.PPID] {
			mine[e.PID] = true
		}
		if !mine[e.PID] {
			continue
		}
		if first < 0 && e.PID == hc.pid {
			first = i
		}
		e.Phase = sandbox.PhaseHealthcheck
		if e.Kind == trace.KindClone && e.ChildPID != 0 {
			mine[e.ChildPID] = true
		}
	}
	ev := trace.Event{Kind: trace.KindExec, Time: hc.start, PID: hc.pid, Binary: hc.lookup.binary, Execfn: hc.lookup.execfn,
		Argv: hc.argv, Container: bootID, Phase: sandbox.PhaseHealthcheck}
	if first < 0 {
		return append(events, ev)
	}
	ev.Cwd, ev.UID = events[first].Cwd, events[first].UID
	out := make([]trace.Event, 0, len(events)+1)
	out = append(out, events[:first]...)
	out = append(out, ev)
	return append(out, events[first:]...)
}
