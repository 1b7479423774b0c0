package audit_test

import (
	"testing"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/google/go-cmp/cmp"
)

func TestEventTypeText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   audit.EventType
	}{
		{"spawn.requested", audit.EventSpawnRequested},
		{"spawn.started", audit.EventSpawnStarted},
		{"spawn.finished", audit.EventSpawnFinished},
		{"spawn.rejected", audit.EventSpawnRejected},
		{"orphan.reaped", audit.EventOrphanReaped},
		{"audit.checkpoint", audit.EventCheckpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := tt.ev.MarshalText()
			if err != nil {
				t.Fatalf("MarshalText: %v", err)
			}
			if diff := cmp.Diff(tt.name, string(b)); diff != "" {
				t.Errorf("MarshalText (-want +got):\n%s", diff)
			}
			var got audit.EventType
			if err := got.UnmarshalText(b); err != nil {
				t.Fatalf("UnmarshalText: %v", err)
			}
			if got != tt.ev {
				t.Errorf("UnmarshalText(%q) = %v, want %v", b, got, tt.ev)
			}
		})
	}
}

func TestEventTypeInvalid(t *testing.T) {
	t.Parallel()
	var zero audit.EventType
	if zero.Valid() {
		t.Error("zero EventType is valid")
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Error("MarshalText of the zero EventType succeeded")
	}
	if _, err := audit.EventType(200).MarshalText(); err == nil {
		t.Error("MarshalText of EventType(200) succeeded")
	}
	for _, name := range []string{"", "spawn", "SPAWN.STARTED", "spawn.started ", "invalid(0)"} {
		var ev audit.EventType
		if err := ev.UnmarshalText([]byte(name)); err == nil {
			t.Errorf("UnmarshalText(%q) = %v, want an error", name, ev)
		}
	}
}
