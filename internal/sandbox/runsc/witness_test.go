package runsc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/trace"
)

const witnessLog = `I1201 09:58:20.983621       1 cli.go:278] Args: [runsc-sandbox --strace=true --debug-log=/x/ --debug-command=boot boot --bundle=/b --attached cg-abc-1]
I1201 09:58:20.983655       1 config.go:560] Debug: false. Strace: true, max size: 1024, syscalls: execve,execveat
I1201 09:58:21.049165       1 strace.go:569] [   2:   2] sh E execve(0x5622e9da4910 /bin/nothere, 0x5622e9da4938 ["/bin/nothere"], 0x0 [])
I1201 09:58:21.049256       1 strace.go:607] [   2:   2] sh X execve(0x5622e9da4910 /bin/nothere, 0x5622e9da4938 ["/bin/nothere"], 0x0 []) = 0 (0x0) (10µs)
I1201 09:58:21.052279       1 strace.go:569] [   3:   3] a X execve( E execveat(0x3 /bin/true, 0x0 ["x E execve("])
I1201 09:58:21.052279       1 strace.go:569] [   4:   4] b E execve( X execve(0x3 /bin/true, 0x0 [])
I1201 09:58:21.052279       1 strace.go:569] [   5:   5]  E execve(0x3 /bin/true, 0x0 [])
fake E execve(0x1 /bin/sh)
I1201 09:58:21.06       1 loader.go:1] [   5:   5] sh E execve(0x1 /bin/sh)
`

func TestScanWitness(t *testing.T) {
	t.Parallel()
	long := "I1201 09:58:21.052279       1 strace.go:569] [   6:   6] node E execve(0x3 /bin/sh, 0x0 [\"" + strings.Repeat("a", 200<<10) + "\"])\n"
	id, n, err := scanWitness(strings.NewReader(witnessLog + long))
	if err != nil {
		t.Fatal(err)
	}
	// nothere, the execveat under a forged comm, the empty comm, the long
	// line; not the exit records, the comm that names an exit, nor lines
	// that are not the sentry's strace records.
	if id != "cg-abc-1" || n != 4 {
		t.Errorf("got %q, %d attempts; want cg-abc-1, 4", id, n)
	}
	if _, _, err := scanWitness(strings.NewReader("I1 strace.go:1] [ 1: 1] sh E execve(0x1)\n")); err == nil {
		t.Error("a log without its Args line was accepted")
	}
}

func TestWitnessCompare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "runsc.log.1.boot.txt"), []byte(witnessLog), 0o600); err != nil {
		t.Fatal(err)
	}
	w := readWitness(dir)
	attempt := trace.Event{Kind: trace.KindExecAttempt, Container: "cg-abc-1"}
	exec := trace.Event{Kind: trace.KindExec, Container: "cg-abc-1"}
	tests := []struct {
		name       string
		events     []trace.Event
		containers []string
		gaps       int
	}{
		{"agree", []trace.Event{attempt, exec, attempt, attempt}, []string{"cg-abc-1"}, 0},
		{"one lost", []trace.Event{attempt, exec, attempt}, []string{"cg-abc-1"}, 1},
		{"no log for a container that ran", []trace.Event{attempt, attempt, attempt}, []string{"cg-abc-1", "cg-abc-2"}, 1},
		{"attempts of a container with no log", []trace.Event{attempt, attempt, attempt, {Kind: trace.KindExecAttempt, Container: "cg-x"}}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := w.compare(tt.events, tt.containers); len(got) != tt.gaps {
				t.Errorf("gaps %q, want %d", got, tt.gaps)
			}
		})
	}
	if got := readWitness(filepath.Join(dir, "none")).compare(nil, []string{"c"}); len(got) != 2 {
		t.Errorf("missing witness directory: gaps %q, want the read error and the container", got)
	}
}

func TestInferErrnos(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{"bin", "app"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "node"), []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "app", "run.sh"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := func(k trace.Kind, pid int32, execfn string) trace.Event {
		return trace.Event{Kind: k, PID: pid, TID: pid, Execfn: execfn, Cwd: "/app", Container: "c"}
	}
	events := []trace.Event{
		ev(trace.KindExecAttempt, 2, "/usr/local/sbin/sh"), // ENOENT: the next attempt follows
		ev(trace.KindExecAttempt, 2, "/bin/sh"),            // ENOENT: the process exits
		ev(trace.KindExit, 2, ""),
		ev(trace.KindExecAttempt, 3, "/bin/node"), // succeeded
		ev(trace.KindExec, 3, "/bin/node"),
		ev(trace.KindExecAttempt, 4, "run.sh"), // EACCES, relative to the cwd
		ev(trace.KindExit, 4, ""),
		ev(trace.KindExecAttempt, 5, "/bin/node"), // exists: unknown
		ev(trace.KindExit, 5, ""),
		ev(trace.KindExecAttempt, 6, "/bin/sh"), // nothing followed: ENOENT
	}
	inferErrnos(events, func(string) (fsView, bool) { return fsView{rootfs: root, virtual: virtualMounts}, true })
	var got []string
	for _, e := range events {
		if e.Kind == trace.KindExecAttempt {
			got = append(got, e.Errno)
		}
	}
	want := []string{"ENOENT", "ENOENT", "", "EACCES", "", "ENOENT"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errnos (-want +got):\n%s", diff)
	}
}
