package audit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/google/go-cmp/cmp"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	when := time.Date(2025, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	tests := []struct {
		name string
		rec  audit.Record
		want string
	}{
		{
			name: "finished",
			rec: audit.Record{Seq: 4, Time: when, Event: audit.EventSpawnFinished, SpawnID: "s-1", Role: "gate", Backend: "runsc",
				KeyID: "k1", Argv: []string{"npm", "run", "build prod"}, Exit: intp(1), DurationMS: 1500,
				Trace: &audit.TraceSummary{Events: 12, Shells: 1, Dropped: 3}},
			want: `2025-01-02T03:04:05.678Z #4 spawn.finished role=gate spawn=s-1 backend=runsc key=k1 exit=1 duration=1.5s trace=events:12,shells:1,dropped:3,incomplete argv=[npm run "build prod"]` + "\n",
		},
		{
			name: "rejected with a hostile role",
			rec:  audit.Record{Seq: 5, Time: when, Event: audit.EventSpawnRejected, Role: "gate\n#6 spawn.finished", Reason: "unknown role"},
			want: `2025-01-02T03:04:05.678Z #5 spawn.rejected role="gate\n#6 spawn.finished" reason="unknown role"` + "\n",
		},
		{
			name: "terminal escapes and empty argument",
			rec:  audit.Record{Seq: 6, Time: when.In(time.FixedZone("CET", 3600)), Event: audit.EventSpawnRequested, Argv: []string{"\x1b[2J", ""}},
			want: `2025-01-02T03:04:05.678Z #6 spawn.requested argv=["\x1b[2J" ""]` + "\n",
		},
		{
			name: "tallied rejections",
			rec: audit.Record{Seq: 7, Time: when, Event: audit.EventSpawnRejected, Peer: "tcp:192.0.2.1", Count: 9974, Since: when.Add(-10 * time.Second),
				BodyBytes: 1 << 20, BodyDigest: "sha256:ab", Reason: "unauthenticated /v1/spawn: rate limited"},
			want: `2025-01-02T03:04:05.678Z #7 spawn.rejected peer=tcp:192.0.2.1 count=9974 since=2025-01-02T03:03:55.678Z body=1048576B,sha256:ab reason="unauthenticated /v1/spawn: rate limited"` + "\n",
		},
		{
			name: "bare",
			rec:  audit.Record{Seq: 1, Time: when, Event: audit.EventOrphanReaped, Trace: &audit.TraceSummary{Complete: true}, Exit: intp(0)},
			want: "2025-01-02T03:04:05.678Z #1 orphan.reaped exit=0 trace=events:0,shells:0,complete\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			if err := audit.Format(&b, tt.rec); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("Format (-want +got):\n%s", diff)
			}
		})
	}
}
