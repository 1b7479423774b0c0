package runsc

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
)

// TestBuildDiskLimit is the attack of issue 10 item 1: a RUN step that
// writes until it fails. With a 64 MiB disk, the write stops at the
// spawn's own filesystem, the failing step and the target say "disk limit
// reached", and the host filesystem under the state directory loses no
// more than the limit. The step writes at most 512 MiB, so that a broken
// limit cannot fill the host either.
func TestBuildDiskLimit(t *testing.T) {
	b := newBackend(t, Config{})
	if _, err := b.buildTools(); err != nil {
		t.Skipf("builds unsupported here: %v", err)
	}
	const limit = 64 << 20
	ws := t.TempDir()
	copyFile(t, sandboxtest.BusyboxHost, filepath.Join(ws, "busybox"))
	df := "FROM scratch\nCOPY busybox /busybox\nRUN [\"/busybox\", \"dd\", \"if=/dev/zero\", \"of=/fill\", \"bs=1M\", \"count=512\"]\n"
	if err := os.WriteFile(filepath.Join(ws, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	req := buildRequest(ws, nil, "")
	req.Limits.DiskBytes = limit

	before := hostUsage(t, b.cfg.StateDir)
	stop := watchUsage(t, b.cfg.StateDir)
	res, err := b.Spawn(t.Context(), req)
	peak := stop()
	logResult(t, res)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	grew := peak - before
	t.Logf("the spawn's host files grew by at most %d MiB during the build (limit %d MiB)", grew>>20, limit>>20)
	// ext4's own metadata and the build's small files beside the disk.
	if grew > limit+16<<20 {
		t.Errorf("the spawn's host files grew by %d MiB, more than the %d MiB limit", grew>>20, limit>>20)
	}
	if res.ExitCode == 0 {
		t.Fatal("a build that wrote 512 MiB to a 64 MiB disk succeeded")
	}
	step := phase(res.Phases, "build:0:step 3")
	target := phase(res.Phases, "build:0")
	t.Logf("failing step's tail:\n%s", step.OutputTail)
	// The trace probe quotes the last lines of the failing phase.
	lines := strings.Split(strings.TrimRight(step.OutputTail, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, diskFullMessage+": ") {
		t.Errorf("the failing step's last line is %q, want the disk limit's", last)
	}
	for _, p := range []sandbox.PhaseResult{step, target} {
		if !p.Failed || !strings.Contains(p.OutputTail, diskFullMessage) {
			t.Errorf("phase %q: failed %v, tail %q; want failed with %q", p.Name, p.Failed, p.OutputTail, diskFullMessage)
		}
	}
}

// TestDiskFull checks the detection of a full disk without a build: the
// free space watch, and ENOSPC in the output.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a loop device needs root")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "m")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	var book diskBook
	d, err := mountDisk(t.Context(), &book, dir, mnt, 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer d.unmount()
	if d.full("ok") {
		t.Error("an empty disk reads as full")
	}
	if !d.full("dd: error writing '/fill': No space left on device") {
		t.Error("ENOSPC in the output is not a full disk")
	}
	f, err := os.Create(filepath.Join(mnt, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	var werr error
	for range 64 {
		if _, werr = f.Write(buf); werr != nil {
			break
		}
	}
	f.Close()
	if !strings.Contains(werr.Error(), unix.ENOSPC.Error()) {
		t.Fatalf("writing 64 MiB to a 32 MiB disk: %v, want ENOSPC", werr)
	}
	d.sample()
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	if !d.full("") {
		t.Error("a disk that was full and emptied again reads as never full")
	}
	var st unix.Stat_t
	if err := unix.Stat(d.image, &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 33<<20 {
		t.Errorf("the image uses %d MiB of host disk for a 32 MiB disk", used>>20)
	}
}

// watchUsage samples hostUsage(dir) every 50 ms until the returned stop
// is called, which returns the peak.
func watchUsage(t testing.TB, dir string) (stop func() int64) {
	var (
		mu   sync.Mutex
		peak = hostUsage(t, dir)
	)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			u := hostUsage(t, dir)
			mu.Lock()
			peak = max(peak, u)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-sampled
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// hostUsage is what the files below dir take on dir's own filesystem (the
// host disk): allocated blocks, so a sparse disk image counts for what was
// written into it, and a mounted spawn disk is not walked twice. Unlike the
// host's free space, it does not move when other work on the machine
// writes, so the bound it checks holds on a busy machine too.
func hostUsage(t testing.TB, dir string) int64 {
	var root unix.Stat_t
	if err := unix.Lstat(dir, &root); err != nil {
		t.Error(err)
		return 0
	}
	var total int64
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // a spawn's files come and go while it runs
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil
		}
		if st.Dev != root.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		total += st.Blocks * 512
		return nil
	})
	return total
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatalf("opening %s (scripts/setup.sh installs it): %v", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSpawnDiskLimit checks that what a command writes to its rootfs and
// its writable workspace lands on the spawn's own disk: past
// Limits.DiskBytes the writes fail with ENOSPC inside the sandbox, which
// lives on, and the host directories are not written.
func TestSpawnDiskLimit(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})
	ws := t.TempDir()
	const limit = 32 << 20
	before := hostUsage(t, b.cfg.StateDir)
	stop := watchUsage(t, b.cfg.StateDir)
	res, err := b.Spawn(t.Context(), sandbox.SpawnRequest{
		Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: ws, Writable: true},
		Command: []string{"sh", "-c", "busybox dd if=/dev/zero of=/workspace/fill bs=1M count=256 2>&1; echo dd $?; " +
			"busybox dd if=/dev/zero of=/fill bs=1M count=256 2>&1; echo dd $?; echo alive"},
		Limits: sandbox.Limits{DiskBytes: limit, MemoryBytes: 512 << 20},
	})
	peak := stop()
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	out := string(res.Stdout)
	t.Logf("exit %d, output:\n%s%s", res.ExitCode, out, res.Stderr)
	if res.ExitCode != 0 || strings.Count(strings.ToLower(out), unix.ENOSPC.Error()) != 2 || !strings.Contains(out, "dd 1\n") || !strings.HasSuffix(out, "alive\n") {
		t.Errorf("want two writes that fail with ENOSPC in a sandbox that lives on")
	}
	if grew := peak - before; grew > limit+16<<20 {
		t.Errorf("the spawn's host files grew by %d MiB during a spawn with a %d MiB disk", grew>>20, limit>>20)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("the host workspace was written: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(rootfs, "fill")); err == nil {
		t.Error("the host rootfs was written")
	}
}

// TestDiskBook checks that live disks together never promise more than
// the host filesystem has free: a disk that fits alone is refused beside
// another that may still grow into the same space.
func TestDiskBook(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	free := hostFree(t, dir)
	if free < 1<<30 {
		t.Skipf("the test needs 1 GiB free under %s, has %d MiB", dir, free>>20)
	}
	var book diskBook
	big := &disk{image: filepath.Join(dir, "big.img"), size: free - 256<<20}
	small := &disk{image: filepath.Join(dir, "small.img"), size: 512 << 20}
	if err := book.admit(small); err != nil {
		t.Fatalf("a 512 MiB disk alone: %v", err)
	}
	book.drop(small)
	if err := book.admit(big); err != nil {
		t.Fatalf("a disk of all but 256 MiB of the free space: %v", err)
	}
	err := book.admit(small)
	if err == nil {
		t.Fatal("a 512 MiB disk beside one that may take all but 256 MiB was admitted")
	}
	t.Logf("refused: %v", err)
	book.drop(big)
	if err := book.admit(small); err != nil {
		t.Errorf("after the big disk went: %v", err)
	}
}

func hostFree(t testing.TB, dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Error(err)
		return 0
	}
	return int64(st.Bavail) * st.Bsize
}
