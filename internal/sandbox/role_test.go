package sandbox

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestRoleZeroValueInvalid(t *testing.T) {
	t.Parallel()
	var r Role
	if err := r.Validate(); !errors.Is(err, ErrInvalidRole) {
		t.Fatalf("zero Role Validate() = %v, want ErrInvalidRole", err)
	}
	if _, err := json.Marshal(struct{ R Role }{}); err == nil {
		t.Fatal("marshaling the zero Role succeeded")
	}
	req := SpawnRequest{Command: []string{"true"}, Workspace: Workspace{Dir: "/tmp"}}
	if err := req.Validate(); !errors.Is(err, ErrInvalidRole) {
		t.Fatalf("SpawnRequest without a role: Validate() = %v, want ErrInvalidRole", err)
	}
}

func TestRoleText(t *testing.T) {
	t.Parallel()
	for _, r := range Roles() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal(%v): %v", r, err)
		}
		var back Role
		if err := json.Unmarshal(b, &back); err != nil || back != r {
			t.Fatalf("round trip of %v through %s = %v, %v", r, b, back, err)
		}
	}
	if b, _ := json.Marshal(RoleProbe); string(b) != `"probe"` {
		t.Errorf("RoleProbe marshals as %s, want \"probe\"", b)
	}
	if b, _ := json.Marshal(RoleGate); string(b) != `"gate"` {
		t.Errorf("RoleGate marshals as %s, want \"gate\"", b)
	}
	for _, bad := range []string{`""`, `"GATE"`, `"admin"`, `1`} {
		var r Role
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("Unmarshal(%s) succeeded as %v", bad, r)
		}
	}
	if err := Role(200).Validate(); !errors.Is(err, ErrInvalidRole) {
		t.Errorf("Role(200).Validate() = %v", err)
	}
}

func TestUnsupportedErrorMatches(t *testing.T) {
	t.Parallel()
	var err error = &UnsupportedError{Backend: "firecracker", Reason: "no /dev/kvm"}
	if !errors.Is(err, ErrNotSupported) {
		t.Fatal("UnsupportedError does not match ErrNotSupported")
	}
}
