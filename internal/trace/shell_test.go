package trace

import (
	"os"
	"path/filepath"
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
		case "/usr/local/bin/node":
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
