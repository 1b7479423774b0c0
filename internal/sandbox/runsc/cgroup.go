package runsc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// Enforcement says which limits a Backend applies on this host. Output is
// always bounded by the backend itself; the others need host cgroups, which
// runsc configures for the sandbox as a whole (sentry, gofer and stubs).
type Enforcement struct {
	// Memory: the memory cgroup of the sandbox is capped at
	// Limits.MemoryBytes (swap included). gVisor reports the limit as the
	// guest's MemTotal; going over it makes the host OOM killer kill the
	// sandbox, which exits 137. Files in /tmp are sandbox memory too;
	// writes to the rootfs and workspace go to the spawn's disk.
	Memory bool `json:"memory"`
	// CPU: a CFS quota of Limits.CPUs per 100 ms period.
	CPU bool `json:"cpu"`
	// PIDs: the host pids cgroup of the sandbox. It counts host tasks, not
	// guest processes; the backend translates (see hostPIDs), so the limit
	// on guest processes is approximate.
	PIDs bool `json:"pids"`
	// Output: stdout and stderr are cut at Limits.OutputBytes each.
	Output bool `json:"output"`
	// Reason says why a limit is not enforced, when one is not.
	Reason string `json:"reason,omitempty"`
}

// detectCgroups reports which of the memory, cpu and pids controllers this
// process can configure, for cgroup v1 (or the hybrid layout) and v2.
func detectCgroups() Enforcement {
	e := Enforcement{Output: true}
	if b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		// cgroup v2 only: one hierarchy.
		if unix.Access(cgroupRoot, unix.W_OK) != nil {
			e.Reason = cgroupRoot + " is not writable"
			return e
		}
		for _, c := range strings.Fields(string(b)) {
			switch c {
			case "memory":
				e.Memory = true
			case "cpu":
				e.CPU = true
			case "pids":
				e.PIDs = true
			}
		}
	} else {
		ok := func(c string) bool {
			dir := filepath.Join(cgroupRoot, c)
			if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
				return false
			}
			return unix.Access(dir, unix.W_OK) == nil
		}
		e.Memory, e.CPU, e.PIDs = ok("memory"), ok("cpu"), ok("pids")
	}
	var missing []string
	for _, m := range []struct {
		name string
		ok   bool
	}{{"memory", e.Memory}, {"cpu", e.CPU}, {"pids", e.PIDs}} {
		if !m.ok {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		e.Reason = "no writable cgroup controller for " + strings.Join(missing, ", ")
	}
	return e
}

// cgroupHierarchies lists the directories that hold a cgroup hierarchy:
// cgroupRoot itself on v2, each controller's mount on v1.
func cgroupHierarchies() []string {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.procs")); err == nil {
		return []string{cgroupRoot}
	}
	entries, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		dir := filepath.Join(cgroupRoot, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// cgroupLeaves lists the cgroups named name (a container ID) that exist.
func cgroupLeaves(name string) []string {
	var leaves []string
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, name)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			leaves = append(leaves, dir)
		}
	}
	return leaves
}

// cgroupNames lists the names of top-level cgroups that start with prefix,
// over every hierarchy.
func cgroupNames(prefix string) []string {
	seen := make(map[string]bool)
	var names []string
	for _, h := range cgroupHierarchies() {
		entries, err := os.ReadDir(h)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !seen[e.Name()] {
				seen[e.Name()] = true
				names = append(names, e.Name())
			}
		}
	}
	return names
}

// killCgroup kills every process in a cgroup v2 directory and its
// descendants at once, with cgroup.kill; on cgroup v1, which has no
// cgroup.kill, it does nothing (removeCgroup kills process by process).
func killCgroup(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.kill"), os.O_WRONLY, 0)
	if err != nil {
		return
	}
	_, _ = f.WriteString("1")
	_ = f.Close()
}

// removeCgroup kills every process left in the cgroup dir, which only the
// sandbox of one container ID can have joined, and removes it with the
// cgroups below it. A missing cgroup is not an error.
func removeCgroup(ctx context.Context, dir string) error {
	killCgroup(dir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading cgroup %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroup(ctx, filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for {
		pids, err := cgroupProcs(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		err = unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY):
			// Killed processes take a moment to leave the cgroup.
		default:
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("removing cgroup %s: %w", dir, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func cgroupProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("reading cgroup %s: %w", dir, err)
	}
	var pids []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
