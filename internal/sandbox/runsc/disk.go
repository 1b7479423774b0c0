package runsc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// minDiskBytes is the smallest Limits.DiskBytes a build accepts: below it
// ext4 has no room for a base image's first layer.
const minDiskBytes = 16 << 20

// diskImage is the name of a spawn's disk image in its spawn directory.
const diskImage = "disk.img"

// diskFullMessage starts the line that a build's failed phases get when
// the build filled its filesystem.
const diskFullMessage = "disk limit reached"

// disk is a spawn's own size-limited filesystem: a sparse file of size
// bytes in the spawn directory, formatted ext4 and loop-mounted at dir.
// Everything the spawn writes to dir is bounded by size, whatever the
// writer; on the host the image costs only the blocks written to it.
type disk struct {
	image string
	dir   string
	size  int64
	// minFree is the least free space watch has seen, in bytes.
	minFree atomic.Int64
}

// diskBook tracks a Backend's live disks, so that together they can never
// fill the host filesystem of the state directory. Its zero value is
// ready; it is safe for concurrent use.
type diskBook struct {
	mu   sync.Mutex
	live map[*disk]bool
}

// admit books d when the host filesystem under d's image has room for all
// of it, beside what the disks already booked may still write (their size
// less what their image holds). The check and the booking are one step.
func (bk *diskBook) admit(d *disk) error {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(d.image), &st); err != nil {
		return fmt.Errorf("reading the free space of the state directory: %w", err)
	}
	free := int64(st.Bavail) * st.Bsize
	bk.mu.Lock()
	defer bk.mu.Unlock()
	var owed int64
	for o := range bk.live {
		owed += o.size - o.allocated()
	}
	if free-owed < d.size {
		return fmt.Errorf("creating the spawn's %s disk: the host filesystem of the state directory has %d MiB free, %d MiB of it promised to live spawns; free some or lower Limits.DiskBytes",
			sizeString(d.size), free>>20, owed>>20)
	}
	if bk.live == nil {
		bk.live = make(map[*disk]bool)
	}
	bk.live[d] = true
	return nil
}

// drop forgets d, once its image is gone. A nil d is ignored.
func (bk *diskBook) drop(d *disk) {
	bk.mu.Lock()
	defer bk.mu.Unlock()
	delete(bk.live, d)
}

// allocated returns the host bytes that the image holds now.
func (d *disk) allocated() int64 {
	var st unix.Stat_t
	if err := unix.Stat(d.image, &st); err != nil {
		return 0
	}
	return min(st.Blocks*512, d.size)
}

// mountDisk makes a sparse image of size bytes in spawnDir, formats it
// ext4 (no journal, no reserved blocks, inode tables left for the kernel
// to skip) and mounts it at dir (nosuid, nodev), which must exist and be
// empty. It books the disk in bk first, which refuses it when the host
// filesystem under spawnDir could not hold it beside the other live disks:
// full spawns can never fill the host. The caller unmounts it with
// unmount, or cleanup does, and then drops it from bk.
func mountDisk(ctx context.Context, bk *diskBook, spawnDir, dir string, size int64) (*disk, error) {
	d := &disk{image: filepath.Join(spawnDir, diskImage), dir: dir, size: size}
	d.minFree.Store(size)
	if err := bk.admit(d); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(d.image)
			bk.drop(d)
		}
	}()
	f, err := os.OpenFile(d.image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the disk image: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("sizing the disk image: %w", err)
	}
	mkfs, err := lookTool("mkfs.ext4")
	if err != nil {
		return nil, fmt.Errorf("formatting the disk image (scripts/setup.sh installs e2fsprogs): %w", err)
	}
	mount, err := lookTool("mount")
	if err != nil {
		return nil, fmt.Errorf("mounting the disk image: %w", err)
	}
	if err := tool(ctx, mkfs, "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", "nodiscard,lazy_itable_init=1", d.image); err != nil {
		return nil, fmt.Errorf("formatting the disk image: %w", err)
	}
	if err := tool(ctx, mount, "-t", "ext4", "-o", "loop,nosuid,nodev,noinit_itable", d.image, dir); err != nil {
		return nil, fmt.Errorf("mounting the disk image: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		d.unmount()
		return nil, fmt.Errorf("restricting the disk: %w", err)
	}
	ok = true
	return d, nil
}

// mountDisk mounts a disk of size bytes at dir for the spawn (see
// mountDisk); the spawn's release drops it from the backend's book.
func (s *spawnDir) mountDisk(ctx context.Context, dir string, size int64) (*disk, error) {
	d, err := mountDisk(ctx, &s.b.disks, s.dir, dir, size)
	if err != nil {
		return nil, err
	}
	s.disk = d
	return d, nil
}

// toolTimeout bounds one host tool (mkfs.ext4, mount): minutes, since
// under load mkfs.ext4 took longer than adminTimeout's 15 s (twice in the
// issue 20 scorecard, at load 12), and a spawn's own timeout bounds the
// whole.
const toolTimeout = 2 * time.Minute

// tool runs a host tool with the backend's environment and returns its
// first line of output in the error.
func tool(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = runscEnv
	out := newBoundedBuffer(64 << 10)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		o, _ := out.result()
		return fmt.Errorf("%s: %w: %s", filepath.Base(name), err, firstLine(o))
	}
	return nil
}

// free returns the bytes free on the disk now.
func (d *disk) free() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(d.dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// watch samples the free space every interval until ctx is done, keeping
// the least seen in minFree: a build that filled the disk may have
// deleted what it wrote by the time it exits.
func (d *disk) watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		d.sample()
		select {
		case <-ctx.Done():
			d.sample()
			return
		case <-t.C:
		}
	}
}

func (d *disk) sample() {
	if f, err := d.free(); err == nil && f < d.minFree.Load() {
		d.minFree.Store(f)
	}
}

// full reports whether the disk was (nearly) full at some point that
// watch saw, or output says a write found no space.
func (d *disk) full(output string) bool {
	return d.minFree.Load() < max(d.size/256, 1<<20) || mentionsENOSPC(output)
}

// mentionsENOSPC reports whether output holds the message of ENOSPC.
func mentionsENOSPC(output string) bool {
	return strings.Contains(strings.ToLower(output), strings.ToLower(unix.ENOSPC.Error()))
}

// fullMessage is the line that tells a build filled its disk.
func (d *disk) fullMessage() string {
	return fmt.Sprintf("%s: the build filled its %s filesystem (Limits.DiskBytes); the host disk was not touched", diskFullMessage, sizeString(d.size))
}

// sizeString formats a byte count in MiB or GiB.
func sizeString(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// unmount detaches the disk. The loop device goes with its last user, and
// the image's blocks with the image file (cleanup removes the spawn
// directory).
func (d *disk) unmount() {
	if err := unix.Unmount(d.dir, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		_ = unix.Unmount(d.dir, unix.MNT_DETACH)
	}
}
