package seccheck

import (
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file builds wire data by hand, field by field, for the tests and the
// fuzz seeds.

// msg is a protobuf message under construction.
type msg []byte

func (m msg) str(num protowire.Number, s string) msg {
	m = protowire.AppendTag(m, num, protowire.BytesType)
	return protowire.AppendString(m, s)
}

func (m msg) strs(num protowire.Number, ss ...string) msg {
	for _, s := range ss {
		m = m.str(num, s)
	}
	return m
}

func (m msg) sub(num protowire.Number, b msg) msg {
	m = protowire.AppendTag(m, num, protowire.BytesType)
	return protowire.AppendBytes(m, b)
}

func (m msg) varint(num protowire.Number, v uint64) msg {
	m = protowire.AppendTag(m, num, protowire.VarintType)
	return protowire.AppendVarint(m, v)
}

// int32v encodes an int32 the way proto3 does: sign-extended to 64 bits.
func (m msg) int32v(num protowire.Number, v int32) msg {
	return m.varint(num, uint64(int64(v)))
}

// ctx is a ContextData.
type ctx struct {
	timeNs      int64
	tid, pid    int32
	ppid        int32
	container   string
	cwd, comm   string
	creds       msg // nil: no credentials field
	execSession bool
}

func (c ctx) wire() msg {
	var m msg
	if c.timeNs != 0 {
		m = m.varint(1, uint64(c.timeNs))
	}
	if c.tid != 0 {
		m = m.int32v(2, c.tid)
	}
	if c.pid != 0 {
		m = m.int32v(4, c.pid)
	}
	if c.container != "" {
		m = m.str(6, c.container)
	}
	if c.creds != nil {
		m = m.sub(7, c.creds)
	}
	if c.cwd != "" {
		m = m.str(8, c.cwd)
	}
	if c.comm != "" {
		m = m.str(9, c.comm)
	}
	if c.ppid != 0 {
		m = m.int32v(10, c.ppid)
	}
	if c.execSession {
		m = m.varint(11, 1)
	}
	return m
}

// creds is a Credentials message with the given real and effective uids.
func creds(real, effective uint32) msg {
	m := msg{} // present even when empty: proto3 omits zero uids
	if real != 0 {
		m = m.varint(1, uint64(real))
	}
	if effective != 0 {
		m = m.varint(2, uint64(effective))
	}
	return m
}

// packet prepends an 8-byte header.
func packet(typ MessageType, dropped uint32, body msg) []byte {
	return packetWithHeader(HeaderSize, typ, dropped, body)
}

// packetWithHeader prepends a header of hsize bytes; bytes past the first 8
// are filler.
func packetWithHeader(hsize uint16, typ MessageType, dropped uint32, body msg) []byte {
	n := max(int(hsize), HeaderSize)
	b := make([]byte, n, n+len(body))
	binary.LittleEndian.PutUint16(b[0:2], hsize)
	binary.LittleEndian.PutUint16(b[2:4], uint16(typ))
	binary.LittleEndian.PutUint32(b[4:8], dropped)
	for i := HeaderSize; i < n; i++ {
		b[i] = 0xAA
	}
	return append(b, body...)
}

func startMsg(c ctx, id, cwd string, args ...string) msg {
	return msg{}.sub(1, c.wire()).str(2, id).str(3, cwd).strs(4, args...)
}

func cloneMsg(c ctx, childTID, childPID int32) msg {
	return msg{}.sub(1, c.wire()).int32v(3, childTID).int32v(4, childPID).varint(6, 0x11)
}

func execMsg(c ctx, binary, execfn string, argv ...string) msg {
	return msg{}.sub(1, c.wire()).str(2, binary).strs(3, argv...).str(17, execfn)
}

func exitMsg(c ctx, status int32) msg {
	return msg{}.sub(1, c.wire()).int32v(2, status)
}

func execveMsg(c ctx, sysno uint64, pathname string, argv ...string) msg {
	return msg{}.sub(1, c.wire()).varint(3, sysno).str(6, pathname).strs(7, argv...)
}

func execveatMsg(c ctx, fd int64, fdPath, pathname string, argv ...string) msg {
	m := msg{}.sub(1, c.wire()).varint(3, 322).varint(4, uint64(fd))
	if fdPath != "" {
		m = m.str(5, fdPath)
	}
	return m.str(6, pathname).strs(7, argv...)
}

// handshakeMsg is runsc's handshake: {1: version}.
func handshakeMsg(version uint64) []byte {
	return msg{}.varint(1, version)
}
