package seccheck

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/codegenie/codegenie/internal/trace"
)

// Default limits. They are generous for build tools (long compiler lines)
// while keeping one event to well under a megabyte.
const (
	DefaultMaxPacketBytes = 256 << 10 // above runsc's default socket send buffer (about 208 KiB)
	DefaultMaxArgs        = 1024
	DefaultMaxStringBytes = 4096 // PATH_MAX
	DefaultMaxArgvBytes   = 64 << 10
)

// Limits bounds what Decode accepts and keeps from one packet. A zero field
// takes its default; a negative one is invalid.
type Limits struct {
	// MaxPacketBytes is the largest packet accepted, header included.
	MaxPacketBytes int
	// MaxArgs is the number of argv entries kept, and separately of env
	// entries.
	MaxArgs int
	// MaxStringBytes is the number of bytes kept of any one string: a path,
	// an argv or env entry, cwd, comm, or container ID.
	MaxStringBytes int
	// MaxArgvBytes is the number of bytes kept of all argv entries together,
	// and separately of all env entries.
	MaxArgvBytes int
	// KeepEnv keeps the environment of execs. By default it is dropped,
	// since it may hold secrets.
	KeepEnv bool
}

// DefaultLimits returns the limits that a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{}.withDefaults()
}

// Validate reports whether l is usable: no field may be negative.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"max packet bytes", l.MaxPacketBytes},
		{"max args", l.MaxArgs},
		{"max string bytes", l.MaxStringBytes},
		{"max argv bytes", l.MaxArgvBytes},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s is %d: %w", f.name, f.v, ErrInvalidLimits)
		}
	}
	if l.MaxPacketBytes > 0 && l.MaxPacketBytes < HeaderSize {
		return fmt.Errorf("max packet bytes %d is less than the %d-byte header: %w", l.MaxPacketBytes, HeaderSize, ErrInvalidLimits)
	}
	return nil
}

func (l Limits) withDefaults() Limits {
	if l.MaxPacketBytes == 0 {
		l.MaxPacketBytes = DefaultMaxPacketBytes
	}
	if l.MaxArgs == 0 {
		l.MaxArgs = DefaultMaxArgs
	}
	if l.MaxStringBytes == 0 {
		l.MaxStringBytes = DefaultMaxStringBytes
	}
	if l.MaxArgvBytes == 0 {
		l.MaxArgvBytes = DefaultMaxArgvBytes
	}
	return l
}

// Packet is one decoded packet.
type Packet struct {
	Header Header
	// HasEvent is false for packets that carry no event: unknown message
	// types, and syscall exit points.
	HasEvent bool
	// Event is the decoded event when HasEvent is true.
	Event trace.Event
	// ExecSession is the context's is_exec_session: the task was started by
	// runsc exec rather than by the container's init.
	ExecSession bool
	// Truncated reports that at least one value of Event was cut to fit the
	// Limits: a string, an argv or env entry, or the argv or env list.
	Truncated bool
}

// Decode parses one packet: the header, then the message it names. Unknown
// message types and unknown fields are skipped without error, and the
// header is still returned, so that its dropped count is not lost; so it is
// when the header is valid but the message is malformed. Values
// are cut to lim and the cut is flagged in Packet.Truncated. Decode returns
// an error wrapping ErrPacketTooLarge for a packet over lim.MaxPacketBytes,
// ErrMalformed for bad wire data, and ErrInvalidLimits for bad limits. It
// never keeps a reference to packet. It is safe for concurrent use.
func Decode(packet []byte, lim Limits) (Packet, error) {
	if err := lim.Validate(); err != nil {
		return Packet{}, err
	}
	lim = lim.withDefaults()
	if len(packet) > lim.MaxPacketBytes {
		return Packet{}, fmt.Errorf("decoding packet of %d bytes, limit %d: %w", len(packet), lim.MaxPacketBytes, ErrPacketTooLarge)
	}
	h, msg, err := parseHeader(packet)
	if err != nil {
		return Packet{}, fmt.Errorf("decoding packet: %w", err)
	}
	d := decoder{lim: lim}
	p := Packet{Header: h}
	switch h.Type {
	case MessageContainerStart:
		err = d.start(msg)
	case MessageSentryClone:
		err = d.clone(msg)
	case MessageSentryExec:
		err = d.exec(msg)
	case MessageSentryTaskExit:
		err = d.exit(msg)
	case MessageSyscallExecve:
		err = d.execAttempt(msg)
	default:
		return p, nil
	}
	if err != nil {
		return Packet{Header: h}, fmt.Errorf("decoding message type %d: %w", h.Type, err)
	}
	if d.skip {
		return p, nil
	}
	p.HasEvent = true
	p.Event = d.ev
	p.ExecSession = d.execSession
	p.Truncated = d.truncated
	return p, nil
}

// decoder holds the state of one Decode call.
type decoder struct {
	lim         Limits
	ev          trace.Event
	haveCreds   bool
	execSession bool
	truncated   bool
	skip        bool // the message is not an event
}

// str copies b into a string of at most MaxStringBytes bytes.
func (d *decoder) str(b []byte) string {
	return d.cut(b, d.lim.MaxStringBytes)
}

// cut copies at most max bytes of b, backing off so as not to split a UTF-8
// sequence, and flags the cut.
func (d *decoder) cut(b []byte, max int) string {
	if len(b) <= max {
		return string(b)
	}
	d.truncated = true
	n := max
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(b[n]); i++ {
		n--
	}
	if !utf8.RuneStart(b[n]) {
		n = max // not UTF-8 anyway: cut at the byte limit
	}
	return string(b[:n])
}

// list accumulates a repeated string field within the limits. Once a cut
// happens it stops growing, so that what it keeps is always a prefix: the
// positions of argv entries stay meaningful.
type list struct {
	vals  []string
	bytes int
	full  bool
}

func (d *decoder) add(l *list, b []byte) {
	if l.full || len(l.vals) >= d.lim.MaxArgs {
		l.full = true
		d.truncated = true
		return
	}
	room := d.lim.MaxArgvBytes - l.bytes
	if len(b) > room {
		l.full = true
		if room == 0 {
			d.truncated = true
			return
		}
	}
	s := d.cut(b, min(d.lim.MaxStringBytes, room))
	l.vals = append(l.vals, s)
	l.bytes += len(s)
}

// context decodes a ContextData message into d.ev.
func (d *decoder) context(msg []byte) error {
	return walkFields(msg, func(f field) error {
		if f.typ == protowire.VarintType {
			switch f.num {
			case 1:
				d.ev.Time = time.Unix(0, int64(f.x)).UTC()
			case 2:
				d.ev.TID = int32(f.x)
			case 4:
				d.ev.PID = int32(f.x)
			case 10:
				d.ev.PPID = int32(f.x)
			case 11:
				d.execSession = protowire.DecodeBool(f.x)
			}
			return nil
		}
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 6:
			d.ev.Container = d.str(f.b)
		case 7:
			return d.credentials(f.b)
		case 8:
			d.ev.Cwd = d.str(f.b)
		case 9:
			d.ev.Comm = d.str(f.b)
		}
		return nil
	})
}

// credentials decodes a Credentials message: the effective uid is field 2.
func (d *decoder) credentials(msg []byte) error {
	if !d.haveCreds {
		d.haveCreds = true
		d.ev.UID = 0
	}
	err := walkFields(msg, func(f field) error {
		if f.num == 2 && f.typ == protowire.VarintType {
			d.ev.UID = int32(uint32(f.x))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("decoding credentials: %w", err)
	}
	return nil
}

// message walks a point message: field 1 is its ContextData, and fn sees
// every other field.
func (d *decoder) message(kind trace.Kind, msg []byte, fn func(f field) error) error {
	d.ev.Kind = kind
	d.ev.UID = -1
	return walkFields(msg, func(f field) error {
		if f.num == 1 && f.typ == protowire.BytesType {
			if err := d.context(f.b); err != nil {
				return fmt.Errorf("decoding context data: %w", err)
			}
			return nil
		}
		return fn(f)
	})
}

// start decodes container/start (Start).
func (d *decoder) start(msg []byte) error {
	var id, cwd string
	var args, env list
	err := d.message(trace.KindStart, msg, func(f field) error {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 2:
			id = d.str(f.b)
		case 3:
			cwd = d.str(f.b)
		case 4:
			d.add(&args, f.b)
		case 5:
			if d.lim.KeepEnv {
				d.add(&env, f.b)
			}
		}
		return nil
	})
	if id != "" {
		d.ev.Container = id
	}
	if cwd != "" {
		d.ev.Cwd = cwd
	}
	d.ev.Argv, d.ev.Env = args.vals, env.vals
	return err
}

// clone decodes sentry/clone (CloneInfo).
func (d *decoder) clone(msg []byte) error {
	return d.message(trace.KindClone, msg, func(f field) error {
		if f.num == 4 && f.typ == protowire.VarintType {
			d.ev.ChildPID = int32(f.x)
		}
		return nil
	})
}

// exec decodes sentry/execve (ExecveInfo).
func (d *decoder) exec(msg []byte) error {
	var argv, env list
	err := d.message(trace.KindExec, msg, func(f field) error {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 2:
			d.ev.Binary = d.str(f.b)
		case 8:
			// binary_sha256: kept only when it is one.
			if len(f.b) == sha256.Size {
				d.ev.Digest = trace.DigestPrefix + hex.EncodeToString(f.b)
			}
		case 3:
			d.add(&argv, f.b)
		case 4:
			if d.lim.KeepEnv {
				d.add(&env, f.b)
			}
		case 17:
			d.ev.Execfn = d.str(f.b)
		}
		return nil
	})
	d.ev.Argv, d.ev.Env = argv.vals, env.vals
	return err
}

// exit decodes sentry/task_exit (TaskExit).
func (d *decoder) exit(msg []byte) error {
	return d.message(trace.KindExit, msg, func(field) error { return nil })
}

// execAttempt decodes syscall/execve and syscall/execveat (Execve). A
// message with an exit result is a syscall exit point, not an attempt.
func (d *decoder) execAttempt(msg []byte) error {
	var argv, env list
	var pathname, fdPath []byte
	err := d.message(trace.KindExecAttempt, msg, func(f field) error {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 2:
			d.skip = true
		case 5:
			fdPath = f.b
		case 6:
			pathname = f.b
		case 7:
			d.add(&argv, f.b)
		case 8:
			if d.lim.KeepEnv {
				d.add(&env, f.b)
			}
		}
		return nil
	})
	d.ev.Execfn = d.str(attemptPath(pathname, fdPath))
	d.ev.Argv, d.ev.Env = argv.vals, env.vals
	return err
}

// attemptPath names the file an exec attempt asked for. For execveat with a
// relative or empty pathname, the directory or file that the fd refers to
// (fd_path) is prefixed, when the sentry could resolve it.
func attemptPath(pathname, fdPath []byte) []byte {
	if len(fdPath) == 0 || fdPath[0] != '/' || (len(pathname) > 0 && pathname[0] == '/') {
		return pathname
	}
	if len(pathname) == 0 {
		return fdPath
	}
	joined := make([]byte, 0, len(fdPath)+1+len(pathname))
	joined = append(joined, fdPath...)
	if fdPath[len(fdPath)-1] != '/' {
		joined = append(joined, '/')
	}
	return append(joined, pathname...)
}
