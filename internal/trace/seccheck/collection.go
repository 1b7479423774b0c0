package seccheck

import (
	"fmt"

	"github.com/codegenie/codegenie/internal/trace"
)

// Collection is what Collect gathered from all connections.
type Collection struct {
	// Events are the stored events in arrival order. The events of one
	// connection keep their order; those of concurrent connections
	// interleave.
	Events []trace.Event `json:"events"`
	// Complete is true only when Reasons is empty: the trace can be
	// trusted to hold every point the sandboxes produced.
	Complete bool `json:"complete"`
	// Reasons says why the trace is incomplete, one entry per kind of
	// problem and connection.
	Reasons []Reason `json:"reasons,omitempty"`
	// Conns describes each accepted connection, in accept order.
	Conns []ConnStats `json:"conns"`
}

// ConnStats describes one trace connection.
type ConnStats struct {
	// Version is the handshake version the sender offered; 0 when there was
	// no valid handshake.
	Version uint32 `json:"version"`
	// Packets counts the packets read after the handshake.
	Packets int `json:"packets"`
	// Events counts the events decoded, whether stored or not.
	Events int `json:"events"`
	// Dropped is the number of points the sender reported dropped.
	Dropped uint64 `json:"dropped"`
	// EOF is true when the connection ended with an end of file rather than
	// an error or a stop.
	EOF bool `json:"eof"`
}

// ReasonCode is the kind of problem that makes a collection incomplete. The
// zero value is invalid.
type ReasonCode uint8

const (
	reasonInvalid ReasonCode = iota
	// ReasonNotFinished means Collect stopped (ctx done or Close) before Finish.
	ReasonNotFinished
	// ReasonNoConnection means Finish was called but no sandbox ever connected.
	ReasonNoConnection
	// ReasonHandshake means a connection had no valid handshake.
	ReasonHandshake
	// ReasonDropped means the sender reported dropped points.
	ReasonDropped
	// ReasonOversized means a packet was larger than Limits.MaxPacketBytes.
	ReasonOversized
	// ReasonMalformed means a packet could not be decoded.
	ReasonMalformed
	// ReasonTruncated means values of an event were cut to Limits.
	ReasonTruncated
	// ReasonEventLimit means events were decoded but not stored, past
	// Options.MaxEvents or Options.MaxEventBytes.
	ReasonEventLimit
	// ReasonReadError means a connection ended with a read error.
	ReasonReadError
	// ReasonOpenAtStop means a connection was still open when Collect stopped.
	ReasonOpenAtStop
	// ReasonNoInitExit means a connection ended without the exit of a container
	// init that it had announced with container/start.
	ReasonNoInitExit
	// ReasonConnLimit means connections past Options.MaxConns were refused.
	ReasonConnLimit
	// ReasonAcceptError means accepting a connection failed.
	ReasonAcceptError
	reasonEnd // keep last
)

var reasonNames = [...]string{
	reasonInvalid:      "",
	ReasonNotFinished:  "not_finished",
	ReasonNoConnection: "no_connection",
	ReasonHandshake:    "handshake",
	ReasonDropped:      "dropped",
	ReasonOversized:    "oversized_packet",
	ReasonMalformed:    "malformed_packet",
	ReasonTruncated:    "truncated",
	ReasonEventLimit:   "event_limit",
	ReasonReadError:    "read_error",
	ReasonOpenAtStop:   "open_at_stop",
	ReasonNoInitExit:   "no_init_exit",
	ReasonConnLimit:    "conn_limit",
	ReasonAcceptError:  "accept_error",
}

// String returns the stable name of c, or "invalid(N)".
func (c ReasonCode) String() string {
	if c > reasonInvalid && c < reasonEnd {
		return reasonNames[c]
	}
	return fmt.Sprintf("invalid(%d)", uint8(c))
}

// MarshalText encodes c by name; it fails on an invalid code.
func (c ReasonCode) MarshalText() ([]byte, error) {
	if c <= reasonInvalid || c >= reasonEnd {
		return nil, fmt.Errorf("seccheck: marshaling invalid reason code %d", uint8(c))
	}
	return []byte(reasonNames[c]), nil
}

// Reason is one cause of incompleteness.
type Reason struct {
	Code ReasonCode `json:"code"`
	// Conn is the index in Collection.Conns, or -1 for the collection as a
	// whole.
	Conn int `json:"conn"`
	// Count is how many times it happened.
	Count int `json:"count"`
	// Detail describes the first occurrence, for people.
	Detail string `json:"detail,omitempty"`
}

// String formats r for people.
func (r Reason) String() string {
	where := "collection"
	if r.Conn >= 0 {
		where = fmt.Sprintf("connection %d", r.Conn)
	}
	s := fmt.Sprintf("%s: %s", where, r.Code)
	if r.Count > 1 {
		s += fmt.Sprintf(" (%d times)", r.Count)
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// reasons accumulates Reasons, one per code, keeping the first detail.
type reasons struct {
	conn int
	list []Reason
}

func (rs *reasons) add(code ReasonCode, count int, format string, args ...any) {
	for i := range rs.list {
		if rs.list[i].Code == code {
			rs.list[i].Count += count
			return
		}
	}
	rs.list = append(rs.list, Reason{Code: code, Conn: rs.conn, Count: count, Detail: fmt.Sprintf(format, args...)})
}
