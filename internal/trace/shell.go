package trace

import (
	"bytes"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/regfile"
)

// shellNames are the basenames that are a shell.
var shellNames = map[string]bool{
	"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true, "ksh": true, "mksh": true, "yash": true,
}

// IsShellName reports whether a path's basename names a shell.
func IsShellName(p string) bool { return shellNames[path.Base(p)] }

// isMultiCall reports whether a basename names a multi-call binary that
// has a shell applet: busybox or toybox, each of which takes any name that
// starts with its own as itself.
func isMultiCall(name string) bool {
	return strings.HasPrefix(name, "busybox") || strings.HasPrefix(name, "toybox")
}

// argv0Name is the program name that argv[0] gives: its basename, without
// the "-" that marks a login shell ("-sh", "-bash", as login(1), su - and
// busybox's own re-exec pass it).
func argv0Name(argv0 string) string {
	return strings.TrimPrefix(path.Base(strings.TrimPrefix(argv0, "-")), "-")
}

// maxApplets bounds the "busybox busybox ... sh" chain that applet follows.
const maxApplets = 8

// applet returns the applet that a multi-call binary runs for argv, as
// busybox picks it: argv[0]'s program name (argv0Name) and, while that
// names the multi-call binary itself, the basename of the next argument
// ("busybox sh -c ..."). Toybox picks the same way. "" when argv runs
// none.
func applet(argv []string) string {
	for i, a := range argv {
		if i >= maxApplets {
			break
		}
		name := path.Base(a)
		if i == 0 {
			name = argv0Name(a)
		}
		if !isMultiCall(name) {
			return name
		}
	}
	return ""
}

// ShellMatch says why an exec is a shell.
type ShellMatch struct {
	// By is binary, execfn, argv0, busybox, content or shebang.
	By string `json:"by"`
	// Shell is the shell's basename (sh, bash...), or "unknown" when a
	// script's interpreter could not be read.
	Shell string `json:"shell"`
}

// Interpreters reads the interpreter of an executable the sandbox ran, from
// the host-visible root filesystem (gVisor reports a #!-script's path but
// not its interpreter: ENVIRONMENT.md blind spot 1). It returns the
// interpreter path, isScript false for an ELF binary, or ok false when the
// file could not be read.
type Interpreters func(binary string) (interp string, isScript bool, ok bool)

// ClassifyShell decides whether an exec event ran a shell. By name, in
// this order: the basename of the binary path, the execfn or argv[0] is a
// shell (busybox re-execs itself with argv[0] "sh"), with a login shell's
// "-" ("-sh") dropped from argv[0]; or argv[0] names a multi-call binary
// (busybox, busybox.static, toybox) and the applet it picks is a shell
// ("busybox sh"), whatever the file is called or wherever it lives (a
// memfd). By content: the event's SameAs (Shells.Identify) is one of the
// image's shells, or its multi-call binary, in which case argv's applet
// decides and a non-shell applet is not a shell. By shebang: the binary is
// a script whose interpreter is a shell. unknown is true when none of
// those holds and the binary is a script whose interpreter could not be
// read, or a file that could not be read at all.
func ClassifyShell(e *Event, interp Interpreters) (m ShellMatch, shell bool, unknown bool) {
	argv0 := ""
	if len(e.Argv) > 0 {
		argv0 = argv0Name(e.Argv[0])
	}
	switch {
	case IsShellName(e.Binary):
		return ShellMatch{By: "binary", Shell: path.Base(e.Binary)}, true, false
	case IsShellName(e.Execfn):
		return ShellMatch{By: "execfn", Shell: path.Base(e.Execfn)}, true, false
	case shellNames[argv0]:
		return ShellMatch{By: "argv0", Shell: argv0}, true, false
	case isMultiCall(argv0) && shellNames[applet(e.Argv)]:
		return ShellMatch{By: "busybox", Shell: applet(e.Argv)}, true, false
	}
	if e.Kind != KindExec || e.Binary == "" {
		return ShellMatch{}, false, false
	}
	if e.SameAs != "" {
		// The file is known: neither a script nor unreadable.
		switch name := path.Base(e.SameAs); {
		case isMultiCall(name):
			// Its applet is not a shell, or the name rules above had said so.
			return ShellMatch{}, false, false
		case IsShellName(name):
			return ShellMatch{By: "content", Shell: name}, true, false
		}
	}
	var ip string
	var isScript, ok bool
	switch {
	case e.Interp == InterpUnknown:
		ok = false
	case e.Interp != "":
		ip, isScript, ok = e.Interp, true, true
	case interp != nil:
		ip, isScript, ok = interp(e.Binary)
	default:
		return ShellMatch{}, false, false
	}
	switch {
	case !ok:
		return ShellMatch{By: "shebang", Shell: "unknown"}, false, true
	case !isScript:
		return ShellMatch{}, false, false
	case IsShellName(ip):
		return ShellMatch{By: "shebang", Shell: path.Base(ip)}, true, false
	}
	return ShellMatch{}, false, false
}

// ProcKey names a process in a trace: its container and its PID there.
// Every sandbox has a PID namespace of its own, so a trace of several
// containers (a build's steps, then its boot) holds the same PIDs more
// than once.
type ProcKey struct {
	Container string
	PID       int32
}

// Process is one thread group seen in a trace.
type Process struct {
	Container string `json:"container,omitempty"`
	PID       int32  `json:"pid"`
	PPID      int32  `json:"ppid"`
	// Execs are the indexes of this process's successful exec events, in
	// order; Attempts the indexes of its exec attempts.
	Execs    []int `json:"execs,omitempty"`
	Attempts []int `json:"attempts,omitempty"`
}

// Tree is the process tree of a trace.
type Tree struct {
	Events []Event
	Procs  map[ProcKey]*Process
}

// BuildTree indexes events by process, in their container. Parents come
// from the events' PPID and from clone events, whichever is known.
func BuildTree(events []Event) *Tree {
	t := &Tree{Events: events, Procs: map[ProcKey]*Process{}}
	get := func(container string, pid int32) *Process {
		k := ProcKey{container, pid}
		p, ok := t.Procs[k]
		if !ok {
			p = &Process{Container: container, PID: pid}
			t.Procs[k] = p
		}
		return p
	}
	for i := range events {
		e := &events[i]
		if e.PID == 0 {
			continue
		}
		p := get(e.Container, e.PID)
		if e.PPID != 0 && e.PPID != e.PID && p.PPID == 0 {
			p.PPID = e.PPID
		}
		switch e.Kind {
		case KindExec, KindStart:
			p.Execs = append(p.Execs, i)
		case KindExecAttempt:
			p.Attempts = append(p.Attempts, i)
		case KindClone:
			if e.ChildPID != 0 && e.ChildPID != e.PID {
				if c := get(e.Container, e.ChildPID); c.PPID == 0 {
					c.PPID = e.PID
				}
			}
		case KindExit:
		}
	}
	return t
}

// Label names what a process was running when event index i happened:
// its last exec before i, as "basename arg1 arg2" (bounded).
func (t *Tree) Label(k ProcKey, before int) string {
	p := t.Procs[k]
	if p == nil {
		return "?"
	}
	label := ""
	for _, i := range p.Execs {
		if i > before {
			break
		}
		label = describe(&t.Events[i])
	}
	if label == "" {
		return "?"
	}
	return label
}

func describe(e *Event) string {
	argv := e.Argv
	name := path.Base(e.Binary)
	if len(argv) > 0 {
		name = path.Base(argv[0])
		argv = argv[1:]
	}
	if name == "" || name == "." {
		name = path.Base(e.Execfn)
	}
	parts := append([]string{name}, argv...)
	s := strings.Join(parts, " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// Ancestry returns the labels from the root of the tree down to event i's
// process, each as it was when its child was created (bounded at 64 levels
// against cycles in hostile input).
func (t *Tree) Ancestry(i int) []string {
	e := &t.Events[i]
	var chain []string
	seen := map[int32]bool{}
	k := ProcKey{e.Container, e.PID}
	p := t.Procs[k]
	for p != nil && p.PPID != 0 && !seen[p.PPID] && len(chain) < 64 {
		seen[k.PID] = true
		k.PID = p.PPID
		chain = append(chain, t.Label(k, i))
		p = t.Procs[k]
	}
	for l, r := 0, len(chain)-1; l < r; l, r = l+1, r-1 {
		chain[l], chain[r] = chain[r], chain[l]
	}
	return chain
}

// Invocation is one shell run (or attempted) in a trace.
type Invocation struct {
	// Index is the event's position in the trace.
	Index int        `json:"index"`
	Phase string     `json:"phase,omitempty"`
	PID   int32      `json:"pid"`
	PPID  int32      `json:"ppid"`
	Match ShellMatch `json:"match"`
	// Attempted is true for a failed exec of a shell that no successful
	// exec followed (on a distroless base: the only evidence).
	Attempted bool `json:"attempted,omitempty"`
	// Errno is how the attempt failed, when the backend could tell.
	Errno  string   `json:"errno,omitempty"`
	Binary string   `json:"binary,omitempty"`
	Argv   []string `json:"argv,omitempty"`
	Cwd    string   `json:"cwd,omitempty"`
	UID    int32    `json:"uid"`
	// Ancestry is the chain of processes above it, root first.
	Ancestry []string `json:"ancestry,omitempty"`
}

// Analysis is what a trace says about shells.
type Analysis struct {
	Invocations []Invocation `json:"invocations"`
	// Unresolved are exec events of scripts whose interpreter could not be
	// read: the trace cannot say whether they ran a shell.
	Unresolved []int `json:"unresolved,omitempty"`
	Execs      int   `json:"execs"`
}

// Analyze finds every shell in the tree's events. Failed attempts of a
// shell are grouped per process: npm and node look sh up through PATH, so
// several ENOENT attempts come before a real exec or a crash; they count
// once, and not at all when the process then execs a shell successfully.
func Analyze(t *Tree, interp Interpreters) Analysis {
	a := Analysis{Invocations: []Invocation{}}
	for i := range t.Events {
		e := &t.Events[i]
		// A container's first process is reported as a start event with
		// unresolved arguments; the backend follows it with an exec event
		// for the same process, which is the one classified.
		if e.Kind != KindExec {
			continue
		}
		a.Execs++
		m, shell, unknown := ClassifyShell(e, interp)
		if unknown {
			a.Unresolved = append(a.Unresolved, i)
		}
		if shell {
			a.Invocations = append(a.Invocations, t.invocation(i, m, false))
		}
	}
	keys := make([]ProcKey, 0, len(t.Procs))
	for k := range t.Procs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Container != keys[j].Container {
			return keys[i].Container < keys[j].Container
		}
		return keys[i].PID < keys[j].PID
	})
	for _, k := range keys {
		p := t.Procs[k]
		var first = -1
		var m ShellMatch
		for _, i := range p.Attempts {
			if mm, shell, _ := ClassifyShell(&t.Events[i], nil); shell {
				first, m = i, mm
				break
			}
		}
		if first < 0 {
			continue
		}
		// A shell attempt answered by a successful shell exec in the same
		// process, or in a child it forked for the attempt, is not a
		// separate invocation.
		if t.shellExecAfter(k, first, interp) {
			continue
		}
		a.Invocations = append(a.Invocations, t.invocation(first, m, true))
	}
	sort.SliceStable(a.Invocations, func(i, j int) bool { return a.Invocations[i].Index < a.Invocations[j].Index })
	return a
}

func (t *Tree) shellExecAfter(k ProcKey, after int, interp Interpreters) bool {
	p := t.Procs[k]
	for _, i := range p.Execs {
		if i > after {
			if _, shell, _ := ClassifyShell(&t.Events[i], interp); shell {
				return true
			}
		}
	}
	return false
}

func (t *Tree) invocation(i int, m ShellMatch, attempted bool) Invocation {
	e := &t.Events[i]
	ppid := e.PPID
	if p := t.Procs[ProcKey{e.Container, e.PID}]; p != nil && ppid == 0 {
		ppid = p.PPID
	}
	return Invocation{
		Index: i, Phase: e.Phase, PID: e.PID, PPID: ppid, Match: m, Attempted: attempted, Errno: e.Errno,
		Binary: firstNonEmpty(e.Binary, e.Execfn), Argv: e.Argv, Cwd: e.Cwd, UID: e.UID, Ancestry: t.Ancestry(i),
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// HeadBytes is how much of a file RootfsInterpreters reads: its ELF magic
// or its shebang line, cut there.
const HeadBytes = 256

// RootfsInterpreters reads interpreters from a root filesystem on the
// host. Lookups stay inside dir (os.Root refuses symlinks that escape it),
// since the rootfs is built from untrusted image layers. Only a regular
// file is read (opened through regfile, without blocking: a FIFO put where
// a script was reads as unknown, and does not hang the reader).
func RootfsInterpreters(dir string) Interpreters {
	return func(binary string) (string, bool, bool) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return "", false, false
		}
		defer root.Close()
		f, err := regfile.OpenIn(root, strings.TrimPrefix(path.Clean("/"+binary), "/"))
		if err != nil {
			return "", false, false
		}
		defer f.Close()
		head := make([]byte, HeadBytes)
		n, _ := io.ReadFull(f, head)
		head = head[:n]
		switch {
		case bytes.HasPrefix(head, []byte("\x7fELF")):
			return "", false, true
		case bytes.HasPrefix(head, []byte("#!")):
			line, _, _ := bytes.Cut(head[2:], []byte("\n"))
			fields := strings.Fields(string(line))
			if len(fields) == 0 {
				return "", true, false
			}
			if path.Base(fields[0]) == "env" && len(fields) > 1 {
				return fields[1], true, true
			}
			return fields[0], true, true
		}
		return "", false, n > 0
	}
}
