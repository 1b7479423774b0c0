package gatecontrol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// TestDecodeRefusesAmbiguousKeys holds the attacks of issue 10, item 4:
// bodies that encoding/json alone reads one way and another parser (or the
// audit log) another.
func TestDecodeRefusesAmbiguousKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want error
		sent sent
	}{
		{
			name: "duplicate role",
			body: `{"role":"probe","role":"gate","workspace":{"dir":"/w"},"command":["true"]}`,
			want: strictjson.ErrDuplicateKey,
		},
		{
			name: "escaped duplicate role",
			body: `{"role":"probe","r\u006fle":"gate","workspace":{"dir":"/w"},"command":["true"]}`,
			want: strictjson.ErrDuplicateKey,
		},
		{
			name: "case variant of command after it",
			body: `{"role":"probe","workspace":{"dir":"/w"},"command":["true"],"Command":["sh","-c","id"]}`,
			want: strictjson.ErrKeyCase,
			sent: sent{Role: "probe", Argv: []string{"true"}},
		},
		{
			name: "case variant of the workspace directory",
			body: `{"role":"probe","workspace":{"DIR":"/etc"},"command":["true"]}`,
			want: strictjson.ErrKeyCase,
			sent: sent{Role: "probe", Argv: []string{"true"}},
		},
		{
			name: "duplicate deep in a build",
			body: `{"role":"probe","workspace":{"dir":"/w"},"build":{"dockerfile":"Dockerfile","targets":[""],"registry_mirrors":{"docker.io":"a","docker.io":"b"}}}`,
			want: strictjson.ErrDuplicateKey,
		},
		{
			name: "case variant in limits",
			body: `{"role":"probe","workspace":{"dir":"/w"},"command":["true"],"limits":{"Memory_Bytes":1}}`,
			want: strictjson.ErrKeyCase,
			sent: sent{Role: "probe", Argv: []string{"true"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, s, err := decodeSpawnRequest([]byte(tt.body))
			if !errors.Is(err, tt.want) || !errors.Is(err, sandbox.ErrInvalidRequest) {
				t.Fatalf("decodeSpawnRequest = %v, want an invalid request matching %v", err, tt.want)
			}
			if diff := cmp.Diff(tt.sent, s); diff != "" {
				t.Errorf("what the audit log records (-want +got):\n%s", diff)
			}
		})
	}
}
