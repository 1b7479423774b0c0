package gatecontrol

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// FuzzDecodeSpawnRequest checks the server's request decoding: it never
// panics, every error matches ErrInvalidRole or ErrInvalidRequest, a
// decoded request is valid and survives a round trip, and what it hands
// the audit log stays within the audit bounds.
func FuzzDecodeSpawnRequest(f *testing.F) {
	for _, s := range []string{
		`{"role":"gate","workspace":{"dir":"/w"},"command":["true"]}`,
		`{"role":"probe","workspace":{"dir":"/w","mount":"/src","writable":true},"command":["sh","-c","x"],"env":["A=b"],"timeout":1000000000,"limits":{"memory_bytes":1,"cpus":0.5,"pids":3,"output_bytes":9},"capture_trace":true}`,
		`{"role":"admin","workspace":{"dir":"/w"},"command":["true"]}`,
		`{"workspace":{"dir":"/w"},"command":["true"]}`,
		`{"role":1,"workspace":{"dir":"/w"},"command":["true"]}`,
		`{"role":"gate","workspace":{"dir":"w"},"command":["true"]}`,
		`{"role":"gate","workspace":{"dir":"/w"},"command":[]}`,
		`{"role":"gate","workspace":{"dir":"/w"},"command":["true"],"x":1}`,
		`{"role":"gate","workspace":{"dir":"/w"},"command":["true"]} {}`,
		`{"role":"gate","role":"probe","workspace":{"dir":"/w"},"command":["true"]}`,
		`{"role":"gate","workspace":{"dir":"/w"},"command":["true"],"env":[]}`,
		`{"role":"gate","workspace":{"dir":"/w"},"build":{"dockerfile":"Dockerfile","targets":[""],"registry_mirrors":{}}}`,
		`{"role":"probe","workspace":{"dir":"/w"},"command":["true"],"Command":["id"]}`,
		`{"role":"probe","workspace":{"DIR":"/etc"},"command":["true"]}`,
		`{"role":"probe","r\u006fle":"gate","workspace":{"dir":"/w"},"command":["true"]}`,
		`null`, ``, `[`, `{"role":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, sent, err := decodeSpawnRequest(body)
		if len(sent.Role) > maxAuditRole || len(sent.Argv) > maxAuditArgs+1 {
			t.Fatalf("audit fields over the bounds: role %d bytes, %d args", len(sent.Role), len(sent.Argv))
		}
		for _, a := range sent.Argv {
			if len(a) > maxAuditArgBytes {
				t.Fatalf("audit arg of %d bytes", len(a))
			}
		}
		if err != nil {
			if !errors.Is(err, sandbox.ErrInvalidRole) && !errors.Is(err, sandbox.ErrInvalidRequest) {
				t.Fatalf("error %v matches neither ErrInvalidRole nor ErrInvalidRequest", err)
			}
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("decoded an invalid request: %v", err)
		}
		if name, _ := req.Role.MarshalText(); string(name) != sent.Role {
			t.Fatalf("audit role %q, decoded role %q", sent.Role, name)
		}
		// A generic, exact-case, last-key-wins parser reads the same role
		// and workspace.
		var generic map[string]any
		if err := json.Unmarshal(body, &generic); err != nil {
			t.Fatalf("encoding/json refuses an accepted body: %v", err)
		}
		ws, _ := generic["workspace"].(map[string]any)
		if generic["role"] != sent.Role || ws["dir"] != req.Workspace.Dir {
			t.Fatalf("another parser reads role %v, dir %v; the server %q, %q", generic["role"], ws["dir"], sent.Role, req.Workspace.Dir)
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		again, _, err := decodeSpawnRequest(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		// encoding/json replaces invalid UTF-8, so compare only when the
		// strings were valid to begin with.
		if utf8.Valid(body) {
			if diff := cmp.Diff(req, again, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("round trip changed the request (-first +second):\n%s", diff)
			}
		}
	})
}
