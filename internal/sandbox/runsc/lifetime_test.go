package runsc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
)

// The owner process of TestKill9OwnerLeavesNothing is this test binary,
// re-executed with these variables set.
const (
	ownerEnv      = "CODEGENIE_RUNSC_TEST_OWNER" // the spawn to run: command, build, boot
	ownerStateEnv = "CODEGENIE_RUNSC_TEST_STATE"
	ownerRootEnv  = "CODEGENIE_RUNSC_TEST_ROOTFS"
	ownerWSEnv    = "CODEGENIE_RUNSC_TEST_WORKSPACE"
)

// runOwner makes a backend on the state directory it is given and runs
// one long spawn in it, until it is killed.
func runOwner(mode string) int {
	b, err := New(Config{StateDir: os.Getenv(ownerStateEnv), Rootfs: os.Getenv(ownerRootEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	req := sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: os.Getenv(ownerWSEnv)}, Timeout: 2 * time.Minute}
	switch mode {
	case "command":
		req.Command = []string{"sleep", "120"}
	case "build", "boot":
		req.CaptureTrace = true
		req.Build = &sandbox.BuildSpec{Dockerfile: "Dockerfile", Targets: []string{""}, Boot: true, BootFor: 2 * time.Minute}
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		return 2
	}
	_, err = b.Spawn(context.Background(), req)
	fmt.Fprintln(os.Stderr, "the owner's spawn ended:", err)
	return 1
}

// TestKill9OwnerLeavesNothing is the attack of issue 10 item 6: the
// process that owns the backend (gate-control) is killed with SIGKILL
// while a sandbox boots, during a build's RUN step, and during the boot of
// a built image. No process of its sandboxes (runsc, gofer, sandbox,
// buildah and its helpers) and no cgroup of its state directory may be
// left: the test waits for them to go (minutes at most) and logs how soon
// they went (measured at under 2 s). The spawn directories stay for Reap,
// which removes them and names the spawn.
func TestKill9OwnerLeavesNothing(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	for _, tc := range []struct {
		name, mode string
		dockerfile string
		// ready says when to kill, from the command lines of the
		// backend's processes.
		ready func(cmdlines []string) bool
		// step, when set, also waits for the build step's sandbox to
		// run a process of that name: the kill comes in the step.
		step string
	}{
		{
			name: "command sandbox booting", mode: "command",
			ready: func(cl []string) bool { return slices.ContainsFunc(cl, isSandbox) },
		},
		{
			name: "build step running", mode: "build",
			dockerfile: "FROM scratch\nCOPY busybox /busybox\nRUN [\"/busybox\", \"sleep\", \"120\"]\n",
			ready: func(cl []string) bool {
				return slices.ContainsFunc(cl, func(c string) bool { return isSandbox(c) && strings.Contains(c, "/b/r") })
			},
			step: "busybox",
		},
		{
			name: "built image booting", mode: "boot",
			dockerfile: "FROM scratch\nCOPY busybox /busybox\nENTRYPOINT [\"/busybox\", \"sleep\", \"120\"]\n",
			ready: func(cl []string) bool {
				return slices.ContainsFunc(cl, func(c string) bool { return isSandbox(c) && !strings.Contains(c, "/b/r") })
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, Config{Rootfs: rootfs})
			if tc.dockerfile != "" {
				if _, err := b.buildTools(); err != nil {
					t.Skipf("builds unsupported here: %v", err)
				}
			}
			ws := t.TempDir()
			if tc.dockerfile != "" {
				copyFile(t, sandboxtest.BusyboxHost, filepath.Join(ws, "busybox"))
				if err := os.WriteFile(filepath.Join(ws, "Dockerfile"), []byte(tc.dockerfile), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stderr bytes.Buffer
			owner := exec.Command("/proc/self/exe")
			owner.Env = append(os.Environ(), ownerEnv+"="+tc.mode, ownerStateEnv+"="+b.cfg.StateDir, ownerRootEnv+"="+rootfs, ownerWSEnv+"="+ws)
			owner.Stderr = &stderr
			if err := owner.Start(); err != nil {
				t.Fatal(err)
			}
			// Runs before newBackend's check for leftovers.
			t.Cleanup(func() {
				if owner.ProcessState == nil {
					owner.Process.Kill()
					owner.Wait()
				}
				if t.Failed() {
					t.Logf("the owner's stderr:\n%s", stderr.String())
				}
			})
			waitFor(t, "the owner's sandbox to start", func() bool { return tc.ready(processesUsing(b.cfg.StateDir)) })
			if tc.step != "" {
				waitFor(t, "the build step's sandbox to run "+tc.step, func() bool { return stepRuns(t, b, tc.step) })
			}
			before := leftovers(b)
			if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			owner.Wait()
			var noProcs time.Duration
			var left []string
			defer func() {
				if len(left) > 0 {
					t.Logf("left: %q", left)
				}
			}()
			waitFor(t, "every process and cgroup of the killed owner's sandboxes to go", func() bool {
				left = leftovers(b)
				if noProcs == 0 && !slices.ContainsFunc(left, func(s string) bool { return !strings.HasPrefix(s, "cgroup ") }) {
					noProcs = time.Since(killed)
				}
				return len(left) == 0
			})
			t.Logf("before the kill: %d processes and cgroups:\n%s", len(before), strings.Join(before, "\n"))
			t.Logf("no process left %v after the kill, nothing left %v after it", noProcs.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
			dirs := liveDirs(t, b)
			if len(dirs) == 0 {
				t.Fatal("no spawn directory left for Reap")
			}
			reaped, err := b.Reap(t.Context())
			if err != nil {
				t.Errorf("Reap: %v", err)
			}
			if diff := cmp.Diff(dirs, reaped); diff != "" {
				t.Errorf("reaped (-want +got):\n%s", diff)
			}
		})
	}
}

// zombie reports whether process pid has exited and waits for its parent
// to reap it. The sandboxes' processes are reparented to init when their
// runsc dies, and the init of these VMs reaps every couple of seconds: a
// zombie holds no resource but its PID, and is not left running.
func zombie(pid string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return true // gone
	}
	_, after, ok := bytes.Cut(b, []byte(") "))
	return ok && len(after) > 0 && (after[0] == 'Z' || after[0] == 'X')
}

func isSandbox(cmdline string) bool { return strings.HasPrefix(cmdline, "runsc-sandbox ") }

// stepRuns reports whether the sandbox of a build step of b's (in a runsc
// root <spawn>/b/r) runs a process named name.
func stepRuns(t *testing.T, b *Backend, name string) bool {
	t.Helper()
	roots, _ := filepath.Glob(filepath.Join(b.cfg.StateDir, b.idPrefix()+"*", "b", "r"))
	for _, root := range roots {
		out, err := b.admin(t.Context(), root, "list")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] != "ID" && guestRuns(t, b, root, f[0], name) {
				return true
			}
		}
	}
	return false
}

// leftovers lists what of b's sandboxes exists: processes that name its
// state directory or sit in one of its cgroups, and its cgroups.
func leftovers(b *Backend) []string {
	left := processesUsing(b.cfg.StateDir)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !bytes.Contains(cg, []byte(":/"+b.idPrefix())) {
			continue
		}
		if zombie(e.Name()) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		left = append(left, "pid "+e.Name()+" in a cgroup of the backend: "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	for _, h := range cgroupHierarchies() {
		for _, name := range cgroupNames(b.idPrefix()) {
			if _, err := os.Stat(filepath.Join(h, name)); err == nil {
				left = append(left, "cgroup "+filepath.Join(h, name))
			}
		}
	}
	return left
}

// TestWatchdog checks the watchdog's life: the first hold starts it, a
// watchdog that was killed is replaced at the next hold, and the last
// release stops it, without its killing anything.
func TestWatchdog(t *testing.T) {
	b := &Backend{cfg: Config{StateDir: stateDir(t)}.withDefaults()}
	b.tag = stateTag(b.cfg.StateDir)
	release1, err := b.holdWatchdog()
	if err != nil {
		t.Fatal(err)
	}
	first := b.wd.proc
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.done
	release2, err := b.holdWatchdog()
	if err != nil {
		t.Fatal(err)
	}
	second := b.wd.proc
	if second == first || second.cmd.Process.Pid == first.cmd.Process.Pid {
		t.Fatal("a killed watchdog was not replaced")
	}
	release1()
	release1() // a second call does nothing
	if b.wd.exited() || b.wd.live != 1 {
		t.Fatalf("the watchdog stopped while a spawn holds it (live %d)", b.wd.live)
	}
	release2()
	<-second.done
	if b.wd.proc != nil || second.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("the stopped watchdog: %v, exit %d; want exit 0", b.wd.proc, second.cmd.ProcessState.ExitCode())
	}
}
