package seccheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/trace"
)

// fuzzLimits are small, so that the fuzzer reaches every cut.
var fuzzLimits = Limits{MaxPacketBytes: 4096, MaxArgs: 4, MaxStringBytes: 16, MaxArgvBytes: 40}

func FuzzDecode(f *testing.F) {
	long := strings.Repeat("x", 40)
	seeds := [][]byte{
		packet(MessageContainerStart, 0, startMsg(shell, "c", "/", "/bin/sh", "-c", "npm ci").strs(5, "A=1")),
		packet(MessageSentryClone, 0, cloneMsg(shell, 8, 8)),
		packet(MessageSentryExec, 1, execMsg(shell, "/usr/bin/dash", "/bin/sh", "/bin/sh", "-c", long).strs(4, "SECRET=1")),
		packet(MessageSentryTaskExit, 0, exitMsg(shell, 0)),
		packet(MessageSyscallExecve, 0, execveMsg(shell, 59, "/bin/sh", "sh", "-c", "x")),
		packet(MessageSyscallExecve, 0, execveatMsg(shell, 3, "/usr/bin", "env", "env")),
		packet(MessageSyscallExecve, 0, execveMsg(shell, 59, "/bin/sh").sub(2, msg{}.varint(2, 2))),
		packetWithHeader(24, MessageSentryExec, 0, execMsg(ctx{pid: 1}, "/a", "/a", "a", "b", "c", "d", "e")),
		packet(4, 9, msg{0xff}),
		{0x08, 0x01},
	}
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, keepEnv bool) {
		lim := fuzzLimits
		lim.KeepEnv = keepEnv
		p, err := Decode(data, lim)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrPacketTooLarge) {
				t.Fatalf("Decode error %v is neither ErrMalformed nor ErrPacketTooLarge", err)
			}
			return
		}
		if len(data) > lim.MaxPacketBytes {
			t.Fatalf("Decode accepted %d bytes, limit %d", len(data), lim.MaxPacketBytes)
		}
		if int(p.Header.Size) < HeaderSize || int(p.Header.Size) > len(data) {
			t.Fatalf("header size %d outside [%d, %d]", p.Header.Size, HeaderSize, len(data))
		}
		if !p.HasEvent {
			if p.Truncated || p.ExecSession || p.Event.Kind != 0 {
				t.Fatalf("packet without event carries event data: %+v", p)
			}
			return
		}
		ev := p.Event
		if !ev.Kind.Valid() {
			t.Fatalf("event kind %v is invalid", ev.Kind)
		}
		for _, s := range []string{ev.Binary, ev.Execfn, ev.Cwd, ev.Comm, ev.Container} {
			if len(s) > lim.MaxStringBytes {
				t.Fatalf("string of %d bytes kept, limit %d", len(s), lim.MaxStringBytes)
			}
		}
		checkList(t, "argv", ev.Argv, lim)
		checkList(t, "env", ev.Env, lim)
		if !keepEnv && len(ev.Env) > 0 {
			t.Fatalf("env kept without KeepEnv: %q", ev.Env)
		}
		if ev.Kind != trace.KindClone && ev.ChildPID != 0 {
			t.Fatalf("%v event has a child pid", ev.Kind)
		}
	})
}

func checkList(t *testing.T, name string, l []string, lim Limits) {
	t.Helper()
	if len(l) > lim.MaxArgs {
		t.Fatalf("%s has %d entries, limit %d", name, len(l), lim.MaxArgs)
	}
	total := 0
	for _, s := range l {
		if len(s) > lim.MaxStringBytes {
			t.Fatalf("%s entry of %d bytes, limit %d", name, len(s), lim.MaxStringBytes)
		}
		total += len(s)
	}
	if total > lim.MaxArgvBytes {
		t.Fatalf("%s holds %d bytes, limit %d", name, total, lim.MaxArgvBytes)
	}
}

func FuzzHandshake(f *testing.F) {
	f.Add([]byte{0x08, 0x01})
	f.Add(packet(MessageSentryExec, 0, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseHandshake(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("parseHandshake error %v is not ErrMalformed", err)
			}
			if v != 0 {
				t.Fatalf("parseHandshake returned version %d with its error", v)
			}
			return
		}
		if len(data) > maxHandshakeBytes {
			t.Fatalf("parseHandshake accepted %d bytes", len(data))
		}
	})
}
