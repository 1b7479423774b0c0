package sandbox

import (
	"context"
	"strings"
	"testing"
)

func TestAuditID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   string
		want string
	}{
		{"0123abcdef", "0123abcdef"},
		{"spawn_1.a-B", "spawn_1.a-B"},
		{strings.Repeat("a", MaxAuditIDBytes), strings.Repeat("a", MaxAuditIDBytes)},
		{"", ""},
		{strings.Repeat("a", MaxAuditIDBytes+1), ""},
		{"../etc", ""},
		{"a b", ""},
		{"a\nb", ""},
	} {
		if got := AuditIDFrom(WithAuditID(context.Background(), tc.id)); got != tc.want {
			t.Errorf("AuditIDFrom(WithAuditID(%q)) = %q, want %q", tc.id, got, tc.want)
		}
	}
	if got := AuditIDFrom(context.Background()); got != "" {
		t.Errorf("AuditIDFrom of a bare context = %q", got)
	}
}
