package runsc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/internal/trace/seccheck"
)

// The exec witness. gVisor's runtime monitoring (the seccheck stream) can
// lose events without saying so: a point dropped after the last one that
// carries the cumulative dropped count is invisible, and a sandbox that dies
// abruptly takes its unsent points with it. runsc's own strace, which the
// sentry writes host-side to its debug log and never drops, is an
// independent witness: every traced sandbox also runs with
//
//	--strace --strace-syscalls=execve,execveat --debug-command=boot
//	--debug-log=<dir>/
//
// so that its sandbox process (runsc boot) writes one log file in <dir>
// whose first lines name the container and whose "E execve(" and
// "E execveat(" records are the exec attempts, one per syscall entry, the
// same points as syscall/execve/enter and syscall/execveat/enter. After the
// spawn, the attempts of each container in the seccheck stream must equal
// its count in the witness; any difference, or a traced container without a
// log, makes the trace incomplete. The log is free text without ppid or
// cwd, so it only counts. It holds the execs' env as strace prints it: it
// lives in the spawn's private directory and goes with it.

// witnessSyscalls are the syscalls the witness logs.
const witnessSyscalls = "execve,execveat"

// Bounds of the witness logs: they are written by the sentry, with content
// (argv, env, the comm) that the workload chooses.
const (
	maxWitnessFiles = 1024
	// witnessHeadLines is how far into a log its Args line is looked for.
	witnessHeadLines = 16
)

// witnessFlags are the runsc flags that make the sandbox's boot process
// write the witness log into dir.
func witnessFlags(dir string) []string {
	return []string{"--strace", "--strace-syscalls=" + witnessSyscalls, "--debug-command=boot", "--debug-log=" + dir + "/"}
}

// witness is what the logs of one directory say: exec attempts per
// container ID, and what could not be read.
type witness struct {
	attempts map[string]int
	problems []string
}

// readWitness counts the exec attempts in each boot log of dir.
func readWitness(dir string) witness {
	w := witness{attempts: map[string]int{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.problems = append(w.problems, fmt.Sprintf("reading the exec witness: %v", err))
		return w
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".boot.txt") {
			continue
		}
		if n++; n > maxWitnessFiles {
			w.problems = append(w.problems, fmt.Sprintf("more than %d exec witness logs", maxWitnessFiles))
			break
		}
		id, count, err := countWitness(filepath.Join(dir, e.Name()))
		if err != nil {
			w.problems = append(w.problems, fmt.Sprintf("reading the exec witness %s: %v", e.Name(), err))
			continue
		}
		w.attempts[id] += count
	}
	return w
}

// countWitness reads one boot log: the container ID, the last argument of
// its Args line, and the number of exec attempt records.
func countWitness(file string) (string, int, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	return scanWitness(f)
}

// scanWitness reads a boot log from r. A record counts when it is a strace
// line of the sentry: a klog line ("I<date> <time> <tid> strace.go:<n>] ")
// followed by "[<pid>:<tid>] ", the task's comm (at most 15 bytes, chosen by
// the workload), then " E execve(" or " E execveat(". The marker is looked
// for only in the bytes the comm can reach, and the rightmost match there
// wins, since what follows the real one is a hex address: a comm cannot
// forge a record, nor hide one. Lines of any length are read in bounded
// pieces.
func scanWitness(r io.Reader) (string, int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	id := ""
	count := 0
	for lineNo := 0; ; lineNo++ {
		line, more, err := readHead(br)
		if len(line) > 0 {
			if id == "" && lineNo < witnessHeadLines {
				id = argsContainer(line, more)
			}
			if isAttempt(line) {
				count++
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return id, count, err
		}
	}
	if id == "" {
		return "", count, errors.New("no Args line naming the container")
	}
	return id, count, nil
}

// readHead returns the first bytes of the next line (at most the reader's
// buffer) and skips the rest of it; more reports that it was cut.
func readHead(br *bufio.Reader) (head []byte, more bool, err error) {
	line, err := br.ReadSlice('\n')
	head = bytes.Clone(bytes.TrimSuffix(line, []byte("\n")))
	for errors.Is(err, bufio.ErrBufferFull) {
		more = true
		_, err = br.ReadSlice('\n')
	}
	return head, more, err
}

// argsContainer returns the container ID of runsc's "Args: [...]" line:
// its last argument. The line is runsc's own, before the workload runs.
func argsContainer(line []byte, cut bool) string {
	_, args, ok := bytes.Cut(line, []byte("] Args: ["))
	if !ok || cut {
		return ""
	}
	args = bytes.TrimSuffix(args, []byte("]"))
	f := strings.Fields(string(args))
	if len(f) < 2 || !slices.Contains(f, "boot") {
		return ""
	}
	return f[len(f)-1]
}

// isAttempt reports whether line is a strace record of an execve or
// execveat entry (see scanWitness).
func isAttempt(line []byte) bool {
	if len(line) == 0 || line[0] != 'I' {
		return false
	}
	_, rest, ok := bytes.Cut(line, []byte(" strace.go:"))
	if !ok {
		return false
	}
	_, rest, ok = bytes.Cut(rest, []byte("] ["))
	if !ok {
		return false
	}
	_, rest, ok = bytes.Cut(rest, []byte("] "))
	if !ok {
		return false
	}
	const maxComm = 15
	window := rest[:min(len(rest), maxComm+len(" E execveat("))]
	i := max(bytes.LastIndex(window, []byte(" E execve(")), bytes.LastIndex(window, []byte(" E execveat(")))
	x := max(bytes.LastIndex(window, []byte(" X execve(")), bytes.LastIndex(window, []byte(" X execveat(")))
	return i >= 0 && i > x
}

// compare checks the seccheck events against the witness, for the
// containers that must have been traced (the ones known to have run) and
// every container either side names. It returns the differences, for
// people; none means the two agree.
func (w witness) compare(events []trace.Event, containers []string) []string {
	got := map[string]int{}
	for i := range events {
		if events[i].Kind == trace.KindExecAttempt {
			got[events[i].Container]++
		}
	}
	ids := slices.Clone(containers)
	for c := range got {
		ids = append(ids, c)
	}
	for c := range w.attempts {
		ids = append(ids, c)
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)
	gaps := slices.Clone(w.problems)
	for _, c := range ids {
		want, logged := w.attempts[c]
		switch {
		case c == "":
			gaps = append(gaps, fmt.Sprintf("%d exec attempts without a container ID", got[c]))
		case !logged:
			gaps = append(gaps, fmt.Sprintf("container %s: no exec witness log", c))
		case want != got[c]:
			gaps = append(gaps, fmt.Sprintf("container %s: the exec witness logged %d exec attempts, the trace has %d", c, want, got[c]))
		}
	}
	return gaps
}

// inferErrnos sets Errno on each exec attempt that failed: one that no exec
// of the same process followed before its next attempt or its exit. The
// errno is read host-side from the container's filesystem (view returns it,
// ok false when there is none to read): ENOENT when the path does not
// exist there, EACCES when it is not executable; otherwise it stays
// unknown. The sandbox sees that filesystem through an overlay, so a file
// the workload made or removed at run time is not seen; the path is the
// one the caller passed (relative to its cwd).
func inferErrnos(events []trace.Event, view func(container string) (fsView, bool)) {
	type key struct {
		container string
		pid       int32
	}
	pending := map[key]int{}
	fail := func(i int) {
		e := &events[i]
		v, ok := view(e.Container)
		if !ok || e.Execfn == "" {
			return
		}
		p := e.Execfn
		if !path.IsAbs(p) {
			if !path.IsAbs(e.Cwd) {
				return
			}
			p = path.Join(e.Cwd, p)
		}
		switch v.check(path.Clean(p)).state {
		case lookupMissing:
			e.Errno = "ENOENT"
		case lookupNotExecutable:
			e.Errno = "EACCES"
		case lookupInvalid, lookupFound, lookupUnknown:
		}
	}
	for i := range events {
		e := &events[i]
		k := key{e.Container, e.PID}
		switch e.Kind {
		case trace.KindExecAttempt:
			if j, ok := pending[k]; ok {
				fail(j)
			}
			pending[k] = i
		case trace.KindExec:
			delete(pending, k)
		case trace.KindExit:
			if j, ok := pending[k]; ok && (e.TID == e.PID || e.TID == 0) {
				fail(j)
				delete(pending, k)
			}
		case trace.KindStart, trace.KindClone:
		}
	}
	// Attempts whose process was not seen to exit or exec again: the
	// stream ended (the sandbox was stopped), so nothing followed them.
	for _, j := range pending {
		fail(j)
	}
}

// collectionGaps are the reasons of an incomplete collection, for people.
func collectionGaps(coll *seccheck.Collection) []string {
	gaps := make([]string, 0, len(coll.Reasons))
	for _, r := range coll.Reasons {
		gaps = append(gaps, r.String())
	}
	if !coll.Complete && len(gaps) == 0 {
		gaps = append(gaps, "the trace stream is incomplete")
	}
	return gaps
}
