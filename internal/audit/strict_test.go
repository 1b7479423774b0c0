package audit_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/codegenie/codegenie/internal/audit"
)

// TestVerifyRefusesAmbiguousKeys: a record line with a duplicate key or a
// key that differs from a field only in case is not a record, even when it
// is the last line and so carries no successor's hash.
func TestVerifyRefusesAmbiguousKeys(t *testing.T) {
	t.Parallel()
	_, good := writeLog(t, sampleRecords())
	tests := []struct {
		name      string
		old, edit string
	}{
		{"duplicate role", `"role":"admin"`, `"role":"admin","role":"gate"`},
		{"case variant of reason", `"reason":`, `"Reason":"forged","reason":`},
		{"case variant alone", `"key_id":`, `"KEY_ID":`},
		{"duplicate in the trace summary", `"shells":1`, `"shells":1,"shells":0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			i := bytes.LastIndex(good, []byte(tt.old))
			if i < 0 {
				t.Fatalf("no %s in the log", tt.old)
			}
			bad := append(append(append([]byte{}, good[:i]...), tt.edit...), good[i+len(tt.old):]...)
			_, err := audit.Verify(bytes.NewReader(bad))
			var verr *audit.VerifyError
			if !errors.As(err, &verr) {
				t.Fatalf("Verify = %v, want a *VerifyError", err)
			}
		})
	}
}
