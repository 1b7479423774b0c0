package runsc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file ties the lifetime of every sandbox to the process that owns
// the Backend (gate-control), in three layers, so that a kill -9 of that
// process leaves nothing running:
//
//  1. Parent-death signals. runsc run and buildah are started with
//     Pdeathsig SIGKILL from an OS thread that stays alive until they exit
//     (the signal fires when the creating thread dies, not the process).
//     runsc run is attached: its sandbox and gofer die with it (runsc sets
//     their Pdeathsig).
//  2. A tracking cgroup. On the hybrid cgroup layout these machines have,
//     every spawn gets a cgroup v2 directory <id> in the unified hierarchy,
//     which has no controllers and so changes no limit; runsc run and
//     buildah are cloned straight into it (CLONE_INTO_CGROUP), and all
//     their descendants stay in it whatever they do: the build steps'
//     sandboxes that runsc daemonizes, buildah's helpers. cgroup.kill
//     kills the whole tree at once.
//  3. A watchdog: the owning process re-executed (/proc/self/exe with
//     argv[0] watchdogName, see init). It is no second daemon: it serves
//     nothing, holds no key and no listener, and reads only the pipe whose
//     only writer is the owning process. When the pipe ends without
//     the word "stop" the owner died: the watchdog writes cgroup.kill in
//     every tracking cgroup of the backend's state directory, kills any
//     process whose command line names the state directory, removes every
//     cgroup named with the backend's prefix (each hierarchy, runsc's and
//     the build steps' too), detaches the spawns' disks, removes their
//     images (hundreds of MB each) from every spawn directory no live
//     process holds, and exits. The rest of the spawn directories stays
//     for Reap, which audits them at the next start. The watchdog runs only while spawns are live: the first
//     starts it, the last stops it, and a spawn that finds it dead (someone
//     killed it) starts a new one.

// watchdogName is argv[0] of the watchdog process.
const watchdogName = "codegenie-runsc-watchdog"

// watchdogStop is what the owner writes before it closes the pipe when
// no spawn is left: the watchdog then exits without killing anything.
const watchdogStop = "stop\n"

// watchdogReapTimeout bounds the watchdog's cleanup.
const watchdogReapTimeout = 30 * time.Second

// init is the watchdog's entry point: the backend starts it as its own
// process's executable with argv[0] set to watchdogName, and it never
// returns to the program's main. Any program that links this package
// (gate-control, and its tests) can therefore serve as its own watchdog.
func init() {
	if len(os.Args) == 1 && os.Args[0] == watchdogName {
		os.Exit(watchdogMain(os.Stdin))
	}
}

// watchdogConfig is the first line the watchdog reads.
type watchdogConfig struct {
	StateDir string `json:"state_dir"`
	Prefix   string `json:"prefix"`
}

// watchdogMain reads its configuration, then waits for the pipe to end.
func watchdogMain(in io.Reader) int {
	// A terminal's signals go to the owner; the watchdog ends by itself.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	r := bufio.NewReader(io.LimitReader(in, 64<<10))
	line, err := r.ReadBytes('\n')
	if err != nil {
		return 2
	}
	var cfg watchdogConfig
	if err := json.Unmarshal(line, &cfg); err != nil || !filepath.IsAbs(cfg.StateDir) ||
		filepath.Clean(cfg.StateDir) != cfg.StateDir || !strings.HasPrefix(cfg.Prefix, "cg-") || strings.Contains(cfg.Prefix, "/") {
		return 2
	}
	rest, _ := io.ReadAll(r)
	if string(rest) == watchdogStop {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), watchdogReapTimeout)
	defer cancel()
	if err := killOrphans(ctx, cfg.StateDir, cfg.Prefix); err != nil {
		return 1
	}
	return 0
}

// killOrphans kills every process of the sandboxes of a dead owner and
// removes their cgroups; see the comment at the top of this file.
func killOrphans(ctx context.Context, stateDir, prefix string) error {
	names := cgroupNames(prefix)
	for _, name := range names {
		for _, cg := range cgroupLeaves(name) {
			killCgroup(cg)
		}
	}
	for _, pid := range processesNaming(stateDir) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	// Listed again: a runsc killed just now may have made one meanwhile.
	var errs []error
	for _, name := range cgroupNames(prefix) {
		for _, cg := range cgroupLeaves(name) {
			if err := removeCgroup(ctx, cg); err != nil {
				errs = append(errs, err)
			}
		}
	}
	unmountBelow(stateDir)
	if err := removeDiskImages(stateDir, prefix); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeDiskImages removes the disk image of every spawn directory of the
// state directory whose lock no live process holds: the owner is dead,
// and its disks are detached, so their space comes back now rather than
// at the next start. The directories stay, for Reap to audit.
func removeDiskImages(stateDir, prefix string) error {
	entries, err := os.ReadDir(stateDir)
	if err != nil {
		return fmt.Errorf("reading runsc state directory: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(stateDir, e.Name())
		lock, ok, err := tryLock(filepath.Join(dir, "lock"))
		if err != nil || !ok {
			continue // a live spawn's, or one Reap will see to
		}
		// Free: its owner is dead, and a spawn directory is never used
		// again. The lock goes at once, so that a Reap that starts now
		// does not take the directory for a live spawn's; whichever of
		// the two removes the image first, the other finds it gone.
		if lock != nil {
			_ = lock.Close()
		}
		if err := os.Remove(filepath.Join(dir, diskImage)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the disk image of %s: %w", e.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// processesNaming lists the runsc and buildah processes (runsc, its
// gofers and sandboxes, buildah) whose command line holds a path below
// dir.
func processesNaming(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	needle := []byte(dir + "/")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, needle) {
			continue
		}
		arg0, _, _ := bytes.Cut(b, []byte{0})
		if base := filepath.Base(string(arg0)); strings.HasPrefix(base, "runsc") || strings.HasPrefix(base, "buildah") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// watchdog is a Backend's watchdog process, running while live > 0.
type watchdog struct {
	mu   sync.Mutex
	live int
	w    *os.File // the write end of the watchdog's stdin
	proc *proc
}

// holdWatchdog makes sure the watchdog runs until the returned release is
// called: it starts it when no spawn holds it yet. Every spawn holds it
// from before its first process starts until its cleanup is over.
func (b *Backend) holdWatchdog() (release func(), err error) {
	wd := &b.wd
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.live > 0 && wd.exited() {
		// Someone killed it: the spawns from now on get a new one.
		_ = wd.w.Close()
		wd.w, wd.proc = nil, nil
	}
	if wd.proc == nil {
		if err := wd.start(watchdogConfig{StateDir: b.cfg.StateDir, Prefix: b.idPrefix()}); err != nil {
			return nil, err
		}
	}
	wd.live++
	var once sync.Once
	return func() { once.Do(wd.release) }, nil
}

func (wd *watchdog) release() {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	wd.live--
	if wd.live > 0 || wd.proc == nil {
		return
	}
	_, _ = io.WriteString(wd.w, watchdogStop)
	_ = wd.w.Close()
	<-wd.proc.done
	wd.w, wd.proc = nil, nil
}

// exited reports whether the watchdog process has exited. wd.mu is held.
func (wd *watchdog) exited() bool {
	if wd.proc == nil {
		return false
	}
	select {
	case <-wd.proc.done:
		return true
	default:
		return false
	}
}

// start runs the watchdog: this process's executable, with no arguments,
// the environment of runsc, and a pipe on stdin of which this process
// holds the only write end (close-on-exec: no child inherits it).
func (wd *watchdog) start(cfg watchdogConfig) error {
	line, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encoding the watchdog configuration: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("starting the sandbox watchdog: %w", err)
	}
	defer r.Close()
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{watchdogName}, Env: runscEnv, Stdin: r, Dir: "/"}
	// Its own process group: a terminal's signals to the owner's group do
	// not reach it. No Pdeathsig: it must outlive the owner.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("starting the sandbox watchdog: %w", err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if _, err := w.Write(append(line, '\n')); err != nil {
		w.Close()
		<-p.done
		return fmt.Errorf("configuring the sandbox watchdog: %w", err)
	}
	wd.w, wd.proc = w, p
	return nil
}

// proc is a started process and its Wait.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait returned
	err  error         // Wait's error, once done is closed
}

// startPinned starts cmd with Pdeathsig SIGKILL from a goroutine locked to
// its OS thread until cmd has exited and been waited for. The kernel sends
// the parent-death signal when the thread that forked the child dies, and
// the Go runtime ends a thread when a goroutine locked to it returns; a
// child started from an unlocked goroutine could thus be killed while this
// process lives, or, started from a thread that lives on, is killed only
// when this process dies. Here it is the latter, always.
func startPinned(cmd *exec.Cmd) (*proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p := &proc{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// trackingRoot is the cgroup v2 hierarchy that holds the spawns'
// tracking cgroups: the unified hierarchy of the hybrid layout, which
// runsc (in cgroup v1 mode there) leaves alone. It is "" on a host without
// one, such as a cgroup v2 only host, where runsc moves its sandboxes into
// v2 cgroups of its own (which the watchdog kills by name) and the
// parent-death signals cover the rest.
func trackingRoot() string {
	dir := filepath.Join(cgroupRoot, "unified")
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return ""
	}
	if unix.Access(dir, unix.W_OK) != nil {
		return ""
	}
	return dir
}

// makeTrackingCgroup creates the tracking cgroup of spawn id and returns
// it open, for CLONE_INTO_CGROUP; nil when the host has no tracking
// hierarchy. The spawn's cleanup removes it with its other cgroups.
func makeTrackingCgroup(id string) (*os.File, error) {
	root := trackingRoot()
	if root == "" {
		return nil, nil
	}
	dir := filepath.Join(root, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the spawn's tracking cgroup: %w", err)
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return nil, fmt.Errorf("opening the spawn's tracking cgroup: %w", err)
	}
	return f, nil
}

// intoCgroup makes cmd start in the cgroup open as cg (nil: no change).
func intoCgroup(cmd *exec.Cmd, cg *os.File) {
	if cg == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(cg.Fd())
}
