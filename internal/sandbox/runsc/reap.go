package runsc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// Reap finds the sandboxes that an earlier process with the same state
// directory left behind when it crashed, and removes them: for each spawn
// directory whose lock no live process holds, it kills and deletes every
// container in its runsc root (runsc list, kill --all, delete --force),
// kills what is left in the container's cgroups and removes them, unmounts
// anything left below it and removes it. It also removes cgroups named for
// this state directory that no spawn directory accounts for. It returns the
// container IDs it reaped, sorted. Spawns running in this or another live
// process are left alone, so Reap is safe to call at any time; gate-control
// calls it at start-up. Reap waits for spawns that are being set up at that
// moment.
func (b *Backend) Reap(ctx context.Context) ([]string, error) {
	items, err := b.ReapSpawns(ctx)
	ids := make([]string, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids, err
}

// ReapSpawns is Reap that also names the spawn each container belonged
// to: the audit ID its Spawn's context carried (sandbox.WithAuditID),
// which the spawn directory keeps; "" for a spawn that carried none, and
// for a cgroup that no spawn directory accounts for. The items are sorted
// by container ID.
func (b *Backend) ReapSpawns(ctx context.Context) ([]sandbox.Reaped, error) {
	g, err := lockFile(filepath.Join(b.cfg.StateDir, ".lock"), unix.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer g.Close()

	entries, err := os.ReadDir(b.cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("reading runsc state directory: %w", err)
	}
	prefix := b.idPrefix()
	live := make(map[string]bool)
	var reaped []sandbox.Reaped
	var errs []error
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || !strings.HasPrefix(id, prefix) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return reaped, fmt.Errorf("reaping runsc sandboxes: %w", err)
		}
		dir := filepath.Join(b.cfg.StateDir, id)
		lock, ok, err := tryLock(filepath.Join(dir, "lock"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			live[id] = true
			continue
		}
		it := sandbox.Reaped{ID: id, AuditID: readAuditID(dir)}
		if err := b.cleanup(ctx, dir, id, true); err != nil {
			errs = append(errs, fmt.Errorf("reaping %s: %w", id, err))
		}
		if lock != nil {
			_ = lock.Close()
		}
		reaped = append(reaped, it)
	}
	for _, id := range cgroupNames(prefix) {
		if live[id] || slices.ContainsFunc(reaped, func(it sandbox.Reaped) bool { return it.ID == id }) {
			continue
		}
		for _, cg := range cgroupLeaves(id) {
			if err := removeCgroup(ctx, cg); err != nil {
				errs = append(errs, fmt.Errorf("reaping cgroup of %s: %w", id, err))
			}
		}
		reaped = append(reaped, sandbox.Reaped{ID: id})
	}
	slices.SortFunc(reaped, func(a, b sandbox.Reaped) int { return strings.Compare(a.ID, b.ID) })
	if err := errors.Join(errs...); err != nil {
		return reaped, fmt.Errorf("reaping runsc sandboxes: %w", err)
	}
	return reaped, nil
}

// tryLock takes the lock of a spawn directory without waiting. ok is false
// when a live spawn holds it. A missing lock file means the process died
// while setting the directory up: the directory is stale, lock is nil.
func tryLock(file string) (lock *os.File, ok bool, err error) {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("opening lock file: %w", err)
	}
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("locking %s: %w", file, err)
	}
	return f, true, nil
}

// readAuditID returns the audit ID that the spawn directory dir keeps, or
// "" when it keeps none or not a valid one. It reads no more than an ID
// can hold.
func readAuditID(dir string) string {
	f, err := os.Open(filepath.Join(dir, auditIDFile))
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, sandbox.MaxAuditIDBytes+1)
	n, _ := io.ReadFull(f, b)
	if id := string(b[:n]); sandbox.ValidAuditID(id) {
		return id
	}
	return ""
}
