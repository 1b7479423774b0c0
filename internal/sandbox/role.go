package sandbox

import "fmt"

// Role says who asks for a sandbox. The zero value is invalid.
type Role uint8

const (
	roleInvalid Role = iota
	// RoleGate is a migration gate proving a rewritten image.
	RoleGate
	// RoleProbe is a gather-time probe observing a target repository.
	RoleProbe
	roleEnd // keep last: roles are the values between roleInvalid and roleEnd
)

var roleNames = [...]string{
	roleInvalid: "",
	RoleGate:    "gate",
	RoleProbe:   "probe",
}

// Roles returns every valid role, in declaration order.
func Roles() []Role {
	rs := make([]Role, 0, int(roleEnd)-1)
	for r := roleInvalid + 1; r < roleEnd; r++ {
		rs = append(rs, r)
	}
	return rs
}

// Validate returns an error unless r is a declared role.
func (r Role) Validate() error {
	if r > roleInvalid && r < roleEnd {
		return nil
	}
	if r == roleInvalid {
		return &RoleError{Reason: "no role given: every spawn names sandbox.RoleGate or sandbox.RoleProbe"}
	}
	return &RoleError{Reason: fmt.Sprintf("unknown role %d", uint8(r))}
}

// String returns the role's name, or "invalid(N)".
func (r Role) String() string {
	if r.Validate() == nil {
		return roleNames[r]
	}
	return fmt.Sprintf("invalid(%d)", uint8(r))
}

// MarshalText encodes r as "gate" or "probe". An invalid role fails.
func (r Role) MarshalText() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return []byte(roleNames[r]), nil
}

// UnmarshalText decodes a role name. Unknown and empty names fail.
func (r *Role) UnmarshalText(b []byte) error {
	role, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = role
	return nil
}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for i := roleInvalid + 1; i < roleEnd; i++ {
		if roleNames[i] == s {
			return i, nil
		}
	}
	if s == "" {
		return roleInvalid, &RoleError{Reason: "no role given: every spawn names sandbox.RoleGate or sandbox.RoleProbe"}
	}
	return roleInvalid, &RoleError{Reason: fmt.Sprintf("unknown role %q", s)}
}

// RoleError reports a missing or unknown role. It matches ErrInvalidRole.
type RoleError struct{ Reason string }

func (e *RoleError) Error() string        { return "sandbox: " + e.Reason }
func (e *RoleError) Is(target error) bool { return target == ErrInvalidRole }
