package runsc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
)

// TestCrashOwner runs as the owner process of TestKilledOwner, which
// re-runs this test binary with these variables set.
const (
	crashStateEnv  = "CODEGENIE_RUNSC_TEST_CRASH_STATE"
	crashRootfsEnv = "CODEGENIE_RUNSC_TEST_CRASH_ROOTFS"
	crashWSEnv     = "CODEGENIE_RUNSC_TEST_CRASH_WORKSPACE"
	crashAuditID   = "0123456789abcdef01234567"
	// crashWait bounds each wait of TestKilledOwner for an event; they
	// take seconds.
	crashWait = 3 * time.Minute
)

// TestCrashOwner is no test of its own: it is the process that
// TestKilledOwner kills. It makes a backend on the state directory it is
// given, prints its watchdog's PID as soon as there is one, and runs one
// long spawn, with an audit ID, until it is killed.
func TestCrashOwner(t *testing.T) {
	state := os.Getenv(crashStateEnv)
	if state == "" {
		t.Skip("the owner process of TestKilledOwner; it runs only as that")
	}
	b, err := New(Config{StateDir: state, Rootfs: os.Getenv(crashRootfsEnv)})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			b.wd.mu.Lock()
			p := b.wd.proc
			b.wd.mu.Unlock()
			if p != nil {
				fmt.Printf("watchdog %d\n", p.cmd.Process.Pid)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	req := sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: os.Getenv(crashWSEnv)}, Command: []string{"sleep", "120"}, Timeout: 2 * time.Minute}
	_, err = b.Spawn(sandbox.WithAuditID(context.Background(), crashAuditID), req)
	t.Fatalf("the owner's spawn ended: %v", err)
}

// TestKilledOwner is issue 22, item 8: gate-control (the owner of the
// backend) is killed with SIGKILL while a spawn runs. Its watchdog must
// remove the spawn's disk image (hundreds of MB after a build) by the time
// it exits, not leave it to the next start; and the next start's reap
// must name the spawn by the audit ID it ran with.
func TestKilledOwner(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})
	state := b.cfg.StateDir
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	owner := exec.Command(exe, "-test.run=^TestCrashOwner$")
	owner.Env = append(os.Environ(), crashStateEnv+"="+state, crashRootfsEnv+"="+rootfs, crashWSEnv+"="+t.TempDir())
	var stderr bytes.Buffer
	owner.Stderr = &stderr
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before newBackend's check for leftovers
		if owner.ProcessState == nil {
			_ = owner.Process.Kill()
			_ = owner.Wait()
		}
		if t.Failed() {
			t.Logf("the owner's stderr:\n%s", stderr.String())
		}
	})
	watchdog := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if pid, ok := strings.CutPrefix(sc.Text(), "watchdog "); ok {
				n, _ := strconv.Atoi(pid)
				watchdog <- n
			}
		}
	}()
	var wdPID int
	select {
	case wdPID = <-watchdog:
	case <-time.After(crashWait):
		t.Fatalf("waited %v for the owner's watchdog to start", crashWait)
	}
	waitUntil(t, "the owner's sandbox to run, on its disk", func() bool {
		images, _ := filepath.Glob(filepath.Join(state, b.idPrefix()+"*", diskImage))
		return len(images) > 0 && strings.Contains(strings.Join(processesUsing(state), "\n"), "runsc-sandbox ")
	})
	images, _ := filepath.Glob(filepath.Join(state, b.idPrefix()+"*", diskImage))
	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = owner.Wait()
	waitUntil(t, "the owner's watchdog to exit", func() bool { return exited(wdPID) })
	t.Logf("the watchdog exited %v after the kill", time.Since(killed).Round(time.Millisecond))
	for _, img := range images {
		if _, err := os.Stat(img); err == nil {
			t.Errorf("%s is still there after the watchdog exited: the killed spawn's disk waits for the next start", img)
		}
	}
	if len(liveDirs(t, b)) == 0 {
		t.Fatal("the watchdog removed the spawn directory: Reap has nothing to audit")
	}

	reaped, err := b.ReapSpawns(t.Context())
	if err != nil {
		t.Errorf("ReapSpawns: %v", err)
	}
	var want []sandbox.Reaped
	for _, img := range images {
		want = append(want, sandbox.Reaped{ID: filepath.Base(filepath.Dir(img)), AuditID: crashAuditID})
	}
	if diff := cmp.Diff(want, reaped); diff != "" {
		t.Errorf("reaped (-want +got):\n%s", diff)
	}
}

// exited reports whether process pid has exited: it is gone, or a zombie
// that its new parent has yet to reap.
func exited(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	_, after, ok := bytes.Cut(b, []byte(") "))
	return ok && len(after) > 0 && (after[0] == 'Z' || after[0] == 'X')
}

// waitUntil waits up to crashWait for cond, failing the test after.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(crashWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", crashWait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRemoveDiskImages: the watchdog removes the disk image of a dead
// owner's spawn, and of one that died while it was set up (no lock file),
// but never that of a spawn whose lock a live process holds; the
// directories stay for Reap.
func TestRemoveDiskImages(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	prefix := "cg-0000-"
	for _, name := range []string{prefix + "dead", prefix + "live", prefix + "nolock", "other"} {
		dir := filepath.Join(state, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, diskImage), []byte("image"), 0o600); err != nil {
			t.Fatal(err)
		}
		if name != prefix+"nolock" {
			if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	live, err := os.Open(filepath.Join(state, prefix+"live", "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := unix.Flock(int(live.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := removeDiskImages(state, prefix); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, name := range []string{prefix + "dead", prefix + "live", prefix + "nolock", "other"} {
		_, err := os.Stat(filepath.Join(state, name, diskImage))
		got[name] = err == nil
		if _, err := os.Stat(filepath.Join(state, name)); err != nil {
			t.Errorf("the spawn directory %s went: %v", name, err)
		}
	}
	want := map[string]bool{prefix + "dead": false, prefix + "live": true, prefix + "nolock": false, "other": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("disk images left (-want +got):\n%s", diff)
	}
}
