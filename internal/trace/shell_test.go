package trace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassifyShell(t *testing.T) {
	t.Parallel()
	interp := func(bin string) (string, bool, bool) {
		switch bin {
		case "/usr/local/bin/docker-entrypoint.sh":
			return "/bin/sh", true, true
		case "/app/start":
			return "/usr/bin/env", true, true
		case "/usr/local/bin/node", "/bin/busybox":
			return "", false, true
		}
		return "", false, false
	}
	tests := []struct {
		name    string
		ev      Event
		want    ShellMatch
		shell   bool
		unknown bool
	}{
		{"dash via /bin/sh", Event{Kind: KindExec, Binary: "/usr/bin/dash", Execfn: "/bin/sh", Argv: []string{"/bin/sh", "-c", "echo hi"}}, ShellMatch{"binary", "dash"}, true, false},
		{"execfn only", Event{Kind: KindExec, Binary: "/x/unknown", Execfn: "/bin/bash"}, ShellMatch{"execfn", "bash"}, true, false},
		{"busybox re-exec as sh", Event{Kind: KindExec, Binary: "/bin/busybox", Execfn: "/proc/self/exe", Argv: []string{"sh", "-c", "x"}}, ShellMatch{"argv0", "sh"}, true, false},
		{"busybox sh applet", Event{Kind: KindExec, Binary: "/bin/busybox", Execfn: "/bin/busybox", Argv: []string{"busybox", "ash", "-c", "x"}}, ShellMatch{"busybox", "ash"}, true, false},
		{"shebang script", Event{Kind: KindExec, Binary: "/usr/local/bin/docker-entrypoint.sh", Argv: []string{"docker-entrypoint.sh", "node"}}, ShellMatch{"shebang", "sh"}, true, false},
		{"node", Event{Kind: KindExec, Binary: "/usr/local/bin/node", Argv: []string{"node", "server.js"}}, ShellMatch{}, false, false},
		{"env script", Event{Kind: KindExec, Binary: "/app/start"}, ShellMatch{}, false, false},
		{"unreadable", Event{Kind: KindExec, Binary: "/gone"}, ShellMatch{"shebang", "unknown"}, false, true},
		{"attempt of sh", Event{Kind: KindExecAttempt, Execfn: "/bin/sh", Argv: []string{"/bin/sh", "-c", "x"}}, ShellMatch{"execfn", "sh"}, true, false},
		// A login shell: argv[0] starts with "-" (busybox re-execs itself
		// so, and login(1) and su - run shells so).
		{"busybox login shell", Event{Kind: KindExec, Binary: "/bin/busybox", Execfn: "/proc/self/exe", Argv: []string{"-sh"}}, ShellMatch{"argv0", "sh"}, true, false},
		{"login bash attempt", Event{Kind: KindExecAttempt, Execfn: "/proc/self/exe", Argv: []string{"-bash", "-l"}}, ShellMatch{"argv0", "bash"}, true, false},
		{"login shell by path", Event{Kind: KindExec, Binary: "/opt/x", Argv: []string{"-/bin/ash"}}, ShellMatch{"argv0", "ash"}, true, false},
		// busybox picks its applet from argv[0] (and from argv[1] when
		// argv[0] names busybox), whatever the file is called.
		{"busybox copy under another name", Event{Kind: KindExec, Binary: "/tmp/bb", Execfn: "/tmp/bb", Argv: []string{"busybox", "sh", "-c", "id"}, Interp: InterpUnknown}, ShellMatch{"busybox", "sh"}, true, false},
		{"busybox from a memfd (execveat AT_EMPTY_PATH)", Event{Kind: KindExec, Binary: "/dev/fd/3", Execfn: "/dev/fd/3", Argv: []string{"busybox", "ash", "-c", "id"}, Interp: InterpUnknown}, ShellMatch{"busybox", "ash"}, true, false},
		{"memfd attempt", Event{Kind: KindExecAttempt, Execfn: "/memfd:x (deleted)", Argv: []string{"/bin/busybox", "busybox", "/bin/sh"}}, ShellMatch{"busybox", "sh"}, true, false},
		{"busybox prefix", Event{Kind: KindExec, Binary: "/x", Argv: []string{"busybox.static", "sh"}, Interp: InterpUnknown}, ShellMatch{"busybox", "sh"}, true, false},
		{"toybox", Event{Kind: KindExec, Binary: "/x", Argv: []string{"toybox", "toybox", "sh"}, Interp: InterpUnknown}, ShellMatch{"busybox", "sh"}, true, false},
		{"busybox ls applet is not sh", Event{Kind: KindExec, Binary: "/bin/busybox", Execfn: "/bin/ls", Argv: []string{"ls", "sh"}}, ShellMatch{}, false, false},
		// By content: the file is one of the image's shells.
		{"renamed dash by content", Event{Kind: KindExec, Binary: "/tmp/d", Argv: []string{"d", "-c", "id"}, Interp: InterpUnknown, SameAs: "/usr/bin/dash"}, ShellMatch{"content", "dash"}, true, false},
		{"busybox by content runs its cat applet", Event{Kind: KindExec, Binary: "/dev/fd/3", Argv: []string{"cat"}, Interp: InterpUnknown, SameAs: "/bin/busybox"}, ShellMatch{}, false, false},
		{"busybox by content without an applet", Event{Kind: KindExec, Binary: "/tmp/x", Argv: []string{"x", "-c", "id"}, SameAs: "/bin/busybox"}, ShellMatch{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, shell, unknown := ClassifyShell(&tt.ev, interp)
			if m != tt.want || shell != tt.shell || unknown != tt.unknown {
				t.Errorf("ClassifyShell = %+v, %v, %v; want %+v, %v, %v", m, shell, unknown, tt.want, tt.shell, tt.unknown)
			}
		})
	}
}

func TestAnalyzeAncestryAndAttempts(t *testing.T) {
	t.Parallel()
	evs := []Event{
		{Kind: KindStart, PID: 1, Argv: []string{"npm", "start"}, Binary: "/usr/local/bin/npm"},                        // 0
		{Kind: KindExec, PID: 1, Binary: "/usr/local/bin/node", Argv: []string{"node", "/usr/local/bin/npm", "start"}}, // 1
		{Kind: KindClone, PID: 1, ChildPID: 7}, // 2
		{Kind: KindExecAttempt, PID: 7, PPID: 1, Execfn: "/usr/local/sbin/sh", Argv: []string{"sh", "-c", "node server.js"}},                      // 3
		{Kind: KindExecAttempt, PID: 7, PPID: 1, Execfn: "/bin/sh", Argv: []string{"sh", "-c", "node server.js"}},                                 // 4
		{Kind: KindExec, PID: 7, PPID: 1, Binary: "/bin/busybox", Execfn: "/bin/sh", Argv: []string{"sh", "-c", "node server.js"}, Phase: "boot"}, // 5
		{Kind: KindExec, PID: 7, PPID: 1, Binary: "/usr/local/bin/node", Argv: []string{"node", "server.js"}},                                     // 6
		{Kind: KindClone, PID: 7, ChildPID: 9}, // 7
		{Kind: KindExecAttempt, PID: 9, PPID: 7, Execfn: "/bin/sh", Argv: []string{"/bin/sh", "-c", "echo hi"}}, // 8: ENOENT on distroless
		{Kind: KindExit, PID: 9},
	}
	a := Analyze(BuildTree(evs), nil)
	type inv struct {
		Index     int
		PID       int32
		Attempted bool
		Ancestry  []string
	}
	var got []inv
	for _, i := range a.Invocations {
		got = append(got, inv{i.Index, i.PID, i.Attempted, i.Ancestry})
	}
	want := []inv{
		{5, 7, false, []string{"node /usr/local/bin/npm start"}},
		{8, 9, true, []string{"node /usr/local/bin/npm start", "node server.js"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("invocations (-want +got):\n%s", diff)
	}
	if a.Execs != 3 {
		t.Errorf("execs = %d, want 3 (the start event is not an exec)", a.Execs)
	}
}

// TestAncestryPerContainer: every sandbox numbers its processes from 1, so
// a build step's apt-key and the boot's npm can share a PID. A shell in the
// boot descends from the boot's npm, not from the step's process of the
// same number, and each container's shell attempts are its own.
func TestAncestryPerContainer(t *testing.T) {
	t.Parallel()
	evs := []Event{
		{Kind: KindExec, PID: 1, Container: "step", Binary: "/bin/sh", Argv: []string{"/bin/sh", "-c", "apt-get update"}},
		{Kind: KindExec, PID: 7, PPID: 1, Container: "step", Binary: "/usr/bin/apt-key", Argv: []string{"apt-key", "verify"}},
		{Kind: KindExecAttempt, PID: 9, PPID: 7, Container: "step", Binary: "/nonexistent/sh", Argv: []string{"sh"}},
		{Kind: KindExec, PID: 1, Container: "boot", Binary: "/usr/local/bin/docker-entrypoint.sh", Argv: []string{"docker-entrypoint.sh", "npm", "start"}, Interp: "/bin/sh"},
		{Kind: KindExec, PID: 1, Container: "boot", Binary: "/usr/local/bin/node", Argv: []string{"node", "/usr/local/bin/npm", "start"}},
		{Kind: KindClone, PID: 1, Container: "boot", ChildPID: 7},
		{Kind: KindExec, PID: 7, PPID: 1, Container: "boot", Binary: "/usr/bin/dash", Argv: []string{"sh", "-c", "node server.js"}},
		{Kind: KindExec, PID: 9, PPID: 1, Container: "boot", Binary: "/usr/bin/dash", Argv: []string{"sh", "-c", "true"}},
	}
	a := Analyze(BuildTree(evs), nil)
	var got [][]string
	for _, inv := range a.Invocations {
		got = append(got, append([]string{strings.Join(inv.Argv, " ")}, inv.Ancestry...))
	}
	want := [][]string{
		{"/bin/sh -c apt-get update"},
		{"sh", "sh -c apt-get update", "apt-key verify"},
		{"docker-entrypoint.sh npm start"},
		{"sh -c node server.js", "node /usr/local/bin/npm start"},
		{"sh -c true", "node /usr/local/bin/npm start"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("invocations with their ancestry (-want +got):\n%s", diff)
	}
}

func TestAncestryCycleIsBounded(t *testing.T) {
	t.Parallel()
	evs := []Event{
		{Kind: KindExec, PID: 2, PPID: 3, Binary: "/bin/sh"},
		{Kind: KindExec, PID: 3, PPID: 2, Binary: "/bin/sh"},
	}
	tr := BuildTree(evs)
	if got := tr.Ancestry(0); len(got) > 64 {
		t.Fatalf("ancestry of a cycle has %d entries", len(got))
	}
}

func TestRootfsInterpreters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(p, body string) {
		t.Helper()
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/local/bin/docker-entrypoint.sh", "#!/bin/sh\nexec \"$@\"\n")
	write("app/run", "#!/usr/bin/env bash\n")
	write("app/cli.js", "#!/usr/bin/env node\n")
	write("bin/node", "\x7fELF....")
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "app/escape")); err != nil {
		t.Fatal(err)
	}
	// A FIFO where a script was: opening it must not wait for a writer.
	if err := syscall.Mkfifo(filepath.Join(dir, "app/fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := RootfsInterpreters(dir)
	type res struct {
		Interp     string
		Script, Ok bool
	}
	for bin, want := range map[string]res{
		"/usr/local/bin/docker-entrypoint.sh": {"/bin/sh", true, true},
		"/app/run":                            {"bash", true, true},
		"/app/cli.js":                         {"node", true, true},
		"/bin/node":                           {"", false, true},
		"/app/escape":                         {"", false, false},
		"/app/fifo":                           {"", false, false},
		"/app":                                {"", false, false},
		"/missing":                            {"", false, false},
		"/../../etc/passwd":                   {"", false, false},
	} {
		i, s, ok := in(bin)
		if got := (res{i, s, ok}); got != want {
			t.Errorf("interpreter of %s = %+v, want %+v", bin, got, want)
		}
	}
	m, shell, _ := ClassifyShell(&Event{Kind: KindExec, Binary: "/app/run"}, in)
	if !shell || m.Shell != "bash" {
		t.Errorf("#!/usr/bin/env bash script: %+v, %v", m, shell)
	}
}

func TestClassifyUsesEventInterp(t *testing.T) {
	t.Parallel()
	m, shell, _ := ClassifyShell(&Event{Kind: KindExec, Binary: "/entry.sh", Interp: "/bin/sh"}, nil)
	if !shell || m.By != "shebang" {
		t.Errorf("event with Interp /bin/sh: %+v, %v", m, shell)
	}
	if _, shell, unknown := ClassifyShell(&Event{Kind: KindExec, Binary: "/x", Interp: InterpUnknown}, nil); shell || !unknown {
		t.Errorf("event with unknown interpreter: shell %v unknown %v", shell, unknown)
	}
}

// TestAnalyzeSeesEveryShell is issue 22, item 6: a login shell, busybox
// under another name or from a memfd, and a renamed copy of the image's
// dash are all shells, and none leaves the trace unresolved.
func TestAnalyzeSeesEveryShell(t *testing.T) {
	t.Parallel()
	evs := []Event{
		{Kind: KindExec, PID: 1, Binary: "/usr/local/bin/node", Argv: []string{"node", "server.js"}},                                                           // 0
		{Kind: KindExec, PID: 2, PPID: 1, Binary: "/bin/busybox", Execfn: "/proc/self/exe", Argv: []string{"-sh"}},                                             // 1
		{Kind: KindExec, PID: 3, PPID: 1, Binary: "/dev/fd/3", Execfn: "/dev/fd/3", Argv: []string{"busybox", "sh", "-c", "id"}, Interp: InterpUnknown},        // 2
		{Kind: KindExec, PID: 4, PPID: 1, Binary: "/tmp/bb", Execfn: "/tmp/bb", Argv: []string{"busybox", "ash"}, Interp: InterpUnknown},                       // 3
		{Kind: KindExec, PID: 5, PPID: 1, Binary: "/tmp/d", Execfn: "/tmp/d", Argv: []string{"d", "-c", "id"}, Interp: InterpUnknown, SameAs: "/usr/bin/dash"}, // 4
		{Kind: KindExec, PID: 6, PPID: 1, Binary: "/memfd:x (deleted)", Argv: []string{"x"}, Interp: InterpUnknown},                                            // 5: unknown
	}
	a := Analyze(BuildTree(evs), nil)
	type inv struct {
		Index int
		Match ShellMatch
	}
	var got []inv
	for _, i := range a.Invocations {
		got = append(got, inv{i.Index, i.Match})
	}
	want := []inv{{1, ShellMatch{"argv0", "sh"}}, {2, ShellMatch{"busybox", "sh"}}, {3, ShellMatch{"busybox", "ash"}}, {4, ShellMatch{"content", "dash"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("invocations (-want +got):\n%s", diff)
	}
	// A memfd whose content matches no shell, and that argv does not name
	// one, stays unresolved: it may be a script.
	if diff := cmp.Diff([]int{5}, a.Unresolved); diff != "" {
		t.Errorf("unresolved (-want +got):\n%s", diff)
	}
}
