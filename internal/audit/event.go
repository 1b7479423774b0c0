package audit

import "fmt"

// EventType is the state change a Record reports. The zero value is
// invalid, and it encodes as text by name.
type EventType uint8

const (
	eventInvalid EventType = iota
	// EventSpawnRequested is an authenticated spawn request, before any
	// check of its content.
	EventSpawnRequested
	// EventSpawnStarted is a sandbox that started running the command.
	EventSpawnStarted
	// EventSpawnFinished is a spawn that ended, with its exit code or the
	// reason it failed.
	EventSpawnFinished
	// EventSpawnRejected is a request refused before anything ran: bad
	// authentication, a missing or unknown role, an invalid request.
	EventSpawnRejected
	// EventOrphanReaped is a sandbox left by an earlier gate-control that
	// was found and removed.
	EventOrphanReaped
	// EventCheckpoint is the writer's signature over the records before
	// it (Record.Checkpoint).
	EventCheckpoint
	eventEnd // keep last
)

var eventNames = [...]string{
	eventInvalid:        "",
	EventSpawnRequested: "spawn.requested",
	EventSpawnStarted:   "spawn.started",
	EventSpawnFinished:  "spawn.finished",
	EventSpawnRejected:  "spawn.rejected",
	EventOrphanReaped:   "orphan.reaped",
	EventCheckpoint:     "audit.checkpoint",
}

// Valid reports whether e is one of the declared event types.
func (e EventType) Valid() bool { return e > eventInvalid && e < eventEnd }

// String returns the name of e, or "invalid(N)".
func (e EventType) String() string {
	if e.Valid() {
		return eventNames[e]
	}
	return fmt.Sprintf("invalid(%d)", uint8(e))
}

// MarshalText encodes e by name. An invalid event type fails.
func (e EventType) MarshalText() ([]byte, error) {
	if !e.Valid() {
		return nil, fmt.Errorf("marshaling invalid audit event type %d", uint8(e))
	}
	return []byte(eventNames[e]), nil
}

// UnmarshalText decodes an event type name. Unknown and empty names fail.
func (e *EventType) UnmarshalText(b []byte) error {
	ev, err := ParseEventType(string(b))
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// ParseEventType returns the event type named s.
func ParseEventType(s string) (EventType, error) {
	for e := eventInvalid + 1; e < eventEnd; e++ {
		if eventNames[e] == s {
			return e, nil
		}
	}
	return eventInvalid, fmt.Errorf("unknown audit event type %q", s)
}
