package seccheck

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/codegenie/codegenie/internal/trace"
)

const t0 = int64(1_764_400_000_123_456_789)

var when = time.Unix(0, t0).UTC()

// shell is the context of a typical shell task inside the sandbox.
var shell = ctx{timeNs: t0, tid: 7, pid: 7, ppid: 1, container: "build-1", cwd: "/app", comm: "sh", creds: creds(0, 0)}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		packet []byte
		lim    Limits
		want   Packet
	}{
		{
			name:   "container start drops env by default",
			packet: packet(MessageContainerStart, 0, startMsg(ctx{timeNs: t0, tid: 1, pid: 1, container: "build-1", cwd: "/", creds: creds(0, 0)}, "build-1", "/app", "/bin/sh", "-c", "npm ci").strs(5, "NPM_TOKEN=secret")),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageContainerStart},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindStart, Time: when, PID: 1, TID: 1, Argv: []string{"/bin/sh", "-c", "npm ci"}, Cwd: "/app", Container: "build-1"},
			},
		},
		{
			name:   "container start keeps env on request",
			packet: packet(MessageContainerStart, 0, startMsg(ctx{pid: 1}, "c", "/", "node").strs(5, "A=1", "B=2")),
			lim:    Limits{KeepEnv: true},
			want: Packet{
				Header:   Header{Size: 8, Type: MessageContainerStart},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindStart, PID: 1, UID: -1, Argv: []string{"node"}, Env: []string{"A=1", "B=2"}, Cwd: "/", Container: "c"},
			},
		},
		{
			name:   "clone",
			packet: packet(MessageSentryClone, 0, cloneMsg(shell, 8, 8)),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryClone},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindClone, Time: when, PID: 7, PPID: 1, TID: 7, Cwd: "/app", Comm: "sh", ChildPID: 8, Container: "build-1"},
			},
		},
		{
			name: "exec uses the effective uid and drops env",
			packet: packet(MessageSentryExec, 0, execMsg(
				ctx{timeNs: t0, tid: 9, pid: 9, ppid: 7, creds: creds(0, 1000), comm: "node"},
				"/usr/bin/dash", "/bin/sh", "/bin/sh", "-c", "echo hi").strs(4, "HOME=/root", "TOKEN=x")),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryExec},
				HasEvent: true,
				Event: trace.Event{Kind: trace.KindExec, Time: when, PID: 9, PPID: 7, TID: 9, UID: 1000, Comm: "node",
					Binary: "/usr/bin/dash", Execfn: "/bin/sh", Argv: []string{"/bin/sh", "-c", "echo hi"}},
			},
		},
		{
			name:   "exec keeps env on request",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 9}, "/bin/true", "/bin/true", "true").strs(4, "HOME=/root")),
			lim:    Limits{KeepEnv: true},
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryExec},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExec, PID: 9, UID: -1, Binary: "/bin/true", Execfn: "/bin/true", Argv: []string{"true"}, Env: []string{"HOME=/root"}},
			},
		},
		{
			name: "exec keeps the sentry's sha256 of the binary",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 9}, "/dev/fd/3", "/dev/fd/3", "busybox", "sh").
				sub(8, msg(strings.Repeat("\xab", 32))).varint(20, 1)),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryExec},
				HasEvent: true,
				Event: trace.Event{Kind: trace.KindExec, PID: 9, UID: -1, Binary: "/dev/fd/3", Execfn: "/dev/fd/3", Argv: []string{"busybox", "sh"},
					Digest: "sha256:" + strings.Repeat("ab", 32)},
			},
		},
		{
			name:   "exec drops a sha256 of the wrong length",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 9}, "/bin/x", "/bin/x", "x").sub(8, msg(strings.Repeat("\xab", 31)))),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryExec},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExec, PID: 9, UID: -1, Binary: "/bin/x", Execfn: "/bin/x", Argv: []string{"x"}},
			},
		},
		{
			name:   "task exit",
			packet: packet(MessageSentryTaskExit, 0, exitMsg(ctx{timeNs: t0, tid: 1, pid: 1, creds: creds(0, 0)}, 256)),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryTaskExit},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExit, Time: when, PID: 1, TID: 1},
			},
		},
		{
			name:   "execve attempt",
			packet: packet(MessageSyscallExecve, 0, execveMsg(shell, 59, "/bin/sh", "sh", "-c", "x").strs(8, "SECRET=1")),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSyscallExecve},
				HasEvent: true,
				Event: trace.Event{Kind: trace.KindExecAttempt, Time: when, PID: 7, PPID: 1, TID: 7, Cwd: "/app", Comm: "sh", Container: "build-1",
					Execfn: "/bin/sh", Argv: []string{"sh", "-c", "x"}},
			},
		},
		{
			name:   "execveat relative to a directory fd",
			packet: packet(MessageSyscallExecve, 0, execveatMsg(ctx{pid: 3}, 5, "/usr/bin", "env", "env", "node")),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSyscallExecve},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExecAttempt, PID: 3, UID: -1, Execfn: "/usr/bin/env", Argv: []string{"env", "node"}},
			},
		},
		{
			name:   "execveat with an empty path (fexecve)",
			packet: packet(MessageSyscallExecve, 0, execveatMsg(ctx{pid: 3}, 4, "/bin/busybox", "", "sh")),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSyscallExecve},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExecAttempt, PID: 3, UID: -1, Execfn: "/bin/busybox", Argv: []string{"sh"}},
			},
		},
		{
			name:   "execveat absolute path ignores fd_path",
			packet: packet(MessageSyscallExecve, 0, execveatMsg(ctx{pid: 3}, 4, "/usr/bin", "/bin/sh", "sh")),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSyscallExecve},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExecAttempt, PID: 3, UID: -1, Execfn: "/bin/sh", Argv: []string{"sh"}},
			},
		},
		{
			name:   "execveat with an unresolved fd keeps the path as called",
			packet: packet(MessageSyscallExecve, 0, execveatMsg(ctx{pid: 3}, 99, "[err: FD not found]", "sh", "sh")),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSyscallExecve},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExecAttempt, PID: 3, UID: -1, Execfn: "sh", Argv: []string{"sh"}},
			},
		},
		{
			name:   "syscall exit point is not an event",
			packet: packet(MessageSyscallExecve, 0, execveMsg(shell, 59, "/bin/sh", "sh").sub(2, msg{}.varint(2, 2))),
			want:   Packet{Header: Header{Size: 8, Type: MessageSyscallExecve}},
		},
		{
			name:   "unknown message type is skipped but keeps its dropped count",
			packet: packet(4, 7, msg{}.sub(1, shell.wire()).varint(2, 0)),
			want:   Packet{Header: Header{Size: 8, Type: 4, Dropped: 7}},
		},
		{
			name:   "unknown message type with garbage body is skipped",
			packet: packet(38, 0, msg{0xff, 0xff, 0xff}),
			want:   Packet{Header: Header{Size: 8, Type: 38}},
		},
		{
			name:   "larger header_size is honoured",
			packet: packetWithHeader(16, MessageSentryTaskExit, 0, exitMsg(ctx{tid: 4, pid: 4}, 0)),
			want: Packet{
				Header:   Header{Size: 16, Type: MessageSentryTaskExit},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExit, PID: 4, TID: 4, UID: -1},
			},
		},
		{
			name:   "dropped count is reported",
			packet: packet(MessageSentryTaskExit, 3, exitMsg(ctx{tid: 4, pid: 4}, 0)),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryTaskExit, Dropped: 3},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExit, PID: 4, TID: 4, UID: -1},
			},
		},
		{
			name: "unknown fields and unexpected wire types are skipped",
			packet: packet(MessageSentryExec, 0, func() msg {
				m := msg{}.sub(1, ctx{pid: 5}.wire().str(99, "future").varint(6, 1))
				m = protowire.AppendTag(m, 40, protowire.Fixed32Type)
				m = protowire.AppendFixed32(m, 1)
				m = protowire.AppendTag(m, 41, protowire.Fixed64Type)
				m = protowire.AppendFixed64(m, 1)
				m = protowire.AppendTag(m, 42, protowire.StartGroupType)
				m = msg(m).varint(1, 1)
				m = protowire.AppendTag(m, 42, protowire.EndGroupType)
				m = msg(m).varint(2, 12) // binary_path as a varint: skipped
				return msg(m).str(2, "/bin/ls").str(1000, "x").strs(3, "ls")
			}()),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryExec},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExec, PID: 5, UID: -1, Binary: "/bin/ls", Argv: []string{"ls"}},
			},
		},
		{
			name:   "negative ids decode as int32",
			packet: packet(MessageSentryClone, 0, cloneMsg(ctx{pid: -5, tid: -6, ppid: -7}, -8, -9)),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryClone},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindClone, PID: -5, TID: -6, PPID: -7, UID: -1, ChildPID: -9},
			},
		},
		{
			name:   "repeated context data merges, last scalar wins",
			packet: packet(MessageSentryTaskExit, 0, msg{}.sub(1, ctx{pid: 4, comm: "a"}.wire()).sub(1, ctx{comm: "b", creds: creds(0, 33)}.wire())),
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryTaskExit},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExit, PID: 4, UID: 33, Comm: "b"},
			},
		},
		{
			name:   "exec session flag",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 20, execSession: true}, "/bin/sh", "/bin/sh", "sh")),
			want: Packet{
				Header:      Header{Size: 8, Type: MessageSentryExec},
				HasEvent:    true,
				ExecSession: true,
				Event:       trace.Event{Kind: trace.KindExec, PID: 20, UID: -1, Binary: "/bin/sh", Execfn: "/bin/sh", Argv: []string{"sh"}},
			},
		},
		{
			name:   "argv past MaxArgs is cut and flagged",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 2}, "/bin/echo", "/bin/echo", "echo", "a", "b", "c")),
			lim:    Limits{MaxArgs: 2},
			want: Packet{
				Header:    Header{Size: 8, Type: MessageSentryExec},
				HasEvent:  true,
				Truncated: true,
				Event:     trace.Event{Kind: trace.KindExec, PID: 2, UID: -1, Binary: "/bin/echo", Execfn: "/bin/echo", Argv: []string{"echo", "a"}},
			},
		},
		{
			name:   "argv past MaxArgvBytes keeps a prefix",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 2}, "/x", "/x", "aaaaaa", "bbbbbb", "c", "")),
			lim:    Limits{MaxArgvBytes: 10},
			want: Packet{
				Header:    Header{Size: 8, Type: MessageSentryExec},
				HasEvent:  true,
				Truncated: true,
				Event:     trace.Event{Kind: trace.KindExec, PID: 2, UID: -1, Binary: "/x", Execfn: "/x", Argv: []string{"aaaaaa", "bbbb"}},
			},
		},
		{
			name:   "argv exactly at MaxArgvBytes is not flagged",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 2}, "/x", "/x", "aaaaa", "bbbbb", "")),
			lim:    Limits{MaxArgvBytes: 10},
			want: Packet{
				Header:   Header{Size: 8, Type: MessageSentryExec},
				HasEvent: true,
				Event:    trace.Event{Kind: trace.KindExec, PID: 2, UID: -1, Binary: "/x", Execfn: "/x", Argv: []string{"aaaaa", "bbbbb", ""}},
			},
		},
		{
			name:   "long strings are cut and flagged",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 2, cwd: "/workspace"}, "/usr/bin/dash", "/bin/sh", "/bin/sh")),
			lim:    Limits{MaxStringBytes: 4},
			want: Packet{
				Header:    Header{Size: 8, Type: MessageSentryExec},
				HasEvent:  true,
				Truncated: true,
				Event:     trace.Event{Kind: trace.KindExec, PID: 2, UID: -1, Cwd: "/wor", Binary: "/usr", Execfn: "/bin", Argv: []string{"/bin"}},
			},
		},
		{
			name:   "a cut does not split a UTF-8 sequence",
			packet: packet(MessageSentryTaskExit, 0, exitMsg(ctx{pid: 2, comm: "ééé"}, 0)),
			lim:    Limits{MaxStringBytes: 3},
			want: Packet{
				Header:    Header{Size: 8, Type: MessageSentryTaskExit},
				HasEvent:  true,
				Truncated: true,
				Event:     trace.Event{Kind: trace.KindExit, PID: 2, UID: -1, Comm: "é"},
			},
		},
		{
			name:   "env is bounded like argv",
			packet: packet(MessageSentryExec, 0, execMsg(ctx{pid: 2}, "/x", "/x", "x").strs(4, "A=1", "B=2", "C=3")),
			lim:    Limits{KeepEnv: true, MaxArgs: 2},
			want: Packet{
				Header:    Header{Size: 8, Type: MessageSentryExec},
				HasEvent:  true,
				Truncated: true,
				Event:     trace.Event{Kind: trace.KindExec, PID: 2, UID: -1, Binary: "/x", Execfn: "/x", Argv: []string{"x"}, Env: []string{"A=1", "B=2"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Decode(tt.packet, tt.lim)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	valid := packet(MessageSentryExec, 0, execMsg(shell, "/bin/sh", "/bin/sh", "sh"))
	tests := []struct {
		name   string
		packet []byte
		lim    Limits
		want   error
	}{
		{name: "empty", packet: nil, want: ErrMalformed},
		{name: "short header", packet: []byte{8, 0, 3, 0, 0}, want: ErrMalformed},
		{name: "header_size below 8", packet: packetWithHeader(4, MessageSentryExec, 0, nil), want: ErrMalformed},
		{name: "header cut short", packet: packetWithHeader(8, MessageSentryExec, 0, nil)[:6:6], want: ErrMalformed},
		{name: "header_size larger than packet", packet: func() []byte {
			p := packet(MessageSentryExec, 0, msg{}.str(2, "x"))
			p[0] = 200
			return p
		}(), want: ErrMalformed},
		{name: "truncated protobuf", packet: valid[:len(valid)-3], want: ErrMalformed},
		{name: "length past the end", packet: packet(MessageSentryExec, 0, msg{0x12, 50, 'a', 'b', 'c'}), want: ErrMalformed},
		{name: "truncated varint", packet: packet(MessageSentryClone, 0, msg{0x20, 0xff}), want: ErrMalformed},
		{name: "field number zero", packet: packet(MessageSentryClone, 0, msg{0x00, 0x01}), want: ErrMalformed},
		{name: "reserved wire type", packet: packet(MessageSentryClone, 0, msg{0x0f}), want: ErrMalformed},
		{name: "unmatched end group", packet: packet(MessageSentryClone, 0, msg{0x0c}), want: ErrMalformed},
		{name: "malformed context data", packet: packet(MessageSentryTaskExit, 0, msg{}.sub(1, msg{0x12, 9})), want: ErrMalformed},
		{name: "malformed credentials", packet: packet(MessageSentryTaskExit, 0, msg{}.sub(1, msg{}.sub(7, msg{0x08}))), want: ErrMalformed},
		{name: "packet over the limit", packet: valid, lim: Limits{MaxPacketBytes: len(valid) - 1}, want: ErrPacketTooLarge},
		{name: "negative limit", packet: valid, lim: Limits{MaxArgs: -1}, want: ErrInvalidLimits},
		{name: "packet limit below the header", packet: valid, lim: Limits{MaxPacketBytes: 4}, want: ErrInvalidLimits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Decode(tt.packet, tt.lim)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode error = %v, want %v", err, tt.want)
			}
			if diff := cmp.Diff(Packet{Header: got.Header}, got); diff != "" {
				t.Errorf("Decode returned more than a header with its error (-want +got):\n%s", diff)
			}
			if msg := err.Error(); msg != strings.ToLower(msg[:1])+msg[1:] {
				t.Errorf("error %q starts with a capital", msg)
			}
		})
	}
}

func TestDecodeDoesNotAliasPacket(t *testing.T) {
	t.Parallel()
	p := packet(MessageSentryExec, 0, execMsg(shell, "/bin/sh", "/bin/sh", "sh", "-c", "x"))
	got, err := Decode(p, Limits{})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := got.Event
	want.Argv = append([]string(nil), got.Event.Argv...)
	for i := range p {
		p[i] = 'Z'
	}
	if diff := cmp.Diff(want, got.Event); diff != "" {
		t.Errorf("event changed with the packet buffer (-want +got):\n%s", diff)
	}
}

func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	want := Limits{MaxPacketBytes: 256 << 10, MaxArgs: 1024, MaxStringBytes: 4096, MaxArgvBytes: 64 << 10}
	if diff := cmp.Diff(want, DefaultLimits()); diff != "" {
		t.Errorf("DefaultLimits mismatch (-want +got):\n%s", diff)
	}
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	if got, want := appendHandshake(nil, ProtocolVersion), []byte{0x08, 0x01}; !cmp.Equal(want, got) {
		t.Errorf("appendHandshake = % x, want % x", got, want)
	}
	tests := []struct {
		name    string
		in      []byte
		want    uint32
		wantErr error
	}{
		{name: "runsc", in: []byte{0x08, 0x01}, want: 1},
		{name: "newer with extra field", in: msg{}.varint(1, 2).str(2, "x"), want: 2},
		{name: "empty", in: nil, want: 0},
		{name: "event header instead", in: packet(MessageSentryExec, 0, nil), wantErr: ErrMalformed},
		{name: "huge version", in: msg{}.varint(1, 1<<40), wantErr: ErrMalformed},
		{name: "too long", in: msg{}.str(2, strings.Repeat("x", 2000)), wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseHandshake(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("parseHandshake error = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseHandshake = %d, want %d", got, tt.want)
			}
		})
	}
}
