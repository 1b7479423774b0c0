package seccheck

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// MessageType identifies the protobuf message that follows a packet header.
// The values are gVisor's pb.MessageType; zero is its MESSAGE_UNKNOWN.
type MessageType uint16

// The message types Decode understands. Other types are skipped.
const (
	MessageContainerStart MessageType = 1  // container/start: Start
	MessageSentryClone    MessageType = 2  // sentry/clone: CloneInfo
	MessageSentryExec     MessageType = 3  // sentry/execve: ExecveInfo
	MessageSentryTaskExit MessageType = 5  // sentry/task_exit: TaskExit
	MessageSyscallExecve  MessageType = 11 // syscall/execve and syscall/execveat: Execve
)

// HeaderSize is the size of the header this package knows. A sender may use
// a larger header_size to add fields; Decode skips what it does not know.
const HeaderSize = 8

// ProtocolVersion is the handshake version this package speaks.
const ProtocolVersion = 1

// maxHandshakeBytes bounds the handshake message. runsc's own is two bytes.
const maxHandshakeBytes = 1024

// Header is the fixed part of every packet after the handshake.
type Header struct {
	// Size is header_size: the offset of the protobuf message.
	Size uint16
	// Type says which message follows.
	Type MessageType
	// Dropped is dropped_count: how many points the sender failed to send on
	// this connection so far. It is cumulative and wraps at 2^32.
	Dropped uint32
}

// Errors reported by Decode. They are wrapped with detail; test them with
// errors.Is.
var (
	// ErrMalformed reports a packet that is not a valid header plus
	// protobuf message.
	ErrMalformed = errors.New("malformed seccheck packet")
	// ErrPacketTooLarge reports a packet larger than Limits.MaxPacketBytes.
	ErrPacketTooLarge = errors.New("seccheck packet too large")
	// ErrInvalidLimits reports a Limits value that Validate rejects.
	ErrInvalidLimits = errors.New("invalid seccheck limits")
)

// parseHeader splits packet into its header and the protobuf message.
func parseHeader(packet []byte) (Header, []byte, error) {
	if len(packet) < HeaderSize {
		return Header{}, nil, fmt.Errorf("reading header: %d bytes, want at least %d: %w", len(packet), HeaderSize, ErrMalformed)
	}
	h := Header{
		Size:    binary.LittleEndian.Uint16(packet[0:2]),
		Type:    MessageType(binary.LittleEndian.Uint16(packet[2:4])),
		Dropped: binary.LittleEndian.Uint32(packet[4:8]),
	}
	if int(h.Size) < HeaderSize || int(h.Size) > len(packet) {
		return Header{}, nil, fmt.Errorf("reading header: header_size %d outside [%d, %d]: %w", h.Size, HeaderSize, len(packet), ErrMalformed)
	}
	return h, packet[h.Size:], nil
}

// field is one decoded protobuf field. For varint fields only x is set, for
// length-delimited fields only b; other wire types carry neither.
type field struct {
	num protowire.Number
	typ protowire.Type
	x   uint64
	b   []byte
}

// walkFields calls fn for every field of msg in wire order. It returns an
// error wrapping ErrMalformed when msg is not valid protobuf wire data, or
// the first error from fn.
func walkFields(msg []byte, fn func(f field) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("reading field tag: %w: %w", ErrMalformed, protowire.ParseError(n))
		}
		msg = msg[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.x, n = protowire.ConsumeVarint(msg)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return fmt.Errorf("reading field %d: %w: %w", num, ErrMalformed, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// parseHandshake returns the version of a Handshake message. Unknown fields
// are allowed; a missing version reads as 0.
func parseHandshake(msg []byte) (uint32, error) {
	if len(msg) > maxHandshakeBytes {
		return 0, fmt.Errorf("reading handshake: %d bytes, want at most %d: %w", len(msg), maxHandshakeBytes, ErrMalformed)
	}
	var version uint64
	err := walkFields(msg, func(f field) error {
		if f.num == 1 && f.typ == protowire.VarintType {
			version = f.x
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reading handshake: %w", err)
	}
	if version > 1<<32-1 {
		return 0, fmt.Errorf("reading handshake: version %d out of range: %w", version, ErrMalformed)
	}
	return uint32(version), nil
}

// appendHandshake appends a Handshake message of the given version.
func appendHandshake(b []byte, version uint32) []byte {
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(version))
}
