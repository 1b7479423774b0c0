package sandbox

import "context"

// MaxAuditIDBytes bounds an audit ID (see WithAuditID).
const MaxAuditIDBytes = 64

type auditIDKey struct{}

// WithAuditID returns a context whose spawns carry id, the ID under which
// the caller's audit log records the spawn (gate-control's spawn_id, which
// the Result's AuditID repeats). A backend that leaves state on disk
// while a spawn runs keeps the ID with it, so that the spawn's leftovers,
// reaped after a crash, can be named by it (see Reaped). An id that
// ValidAuditID refuses is not carried.
func WithAuditID(ctx context.Context, id string) context.Context {
	if !ValidAuditID(id) {
		return ctx
	}
	return context.WithValue(ctx, auditIDKey{}, id)
}

// AuditIDFrom returns the audit ID of ctx (see WithAuditID), or "".
func AuditIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(auditIDKey{}).(string)
	return id
}

// ValidAuditID reports whether id can be an audit ID: 1 to
// MaxAuditIDBytes ASCII letters, digits, '.', '_' and '-', so that it is
// safe in a file and in a log line as it is.
func ValidAuditID(id string) bool {
	if id == "" || len(id) > MaxAuditIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// Reaped is one spawn's leftovers that a backend found and removed after
// the process that ran the spawn died (a sandbox, its mounts, its
// directory).
type Reaped struct {
	// ID is the backend's name for what it removed, such as a container
	// ID.
	ID string
	// AuditID is the audit ID the spawn carried (WithAuditID), or "" when
	// it carried none or the backend could not recover it.
	AuditID string
}
