package audit_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/google/go-cmp/cmp"
)

// fixedClock returns a clock that ticks one second per call, starting in a
// non-UTC zone so that tests see the conversion to UTC.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.FixedZone("CET", 3600))
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func intp(i int) *int { return &i }

// sampleRecords is one spawn's life plus a rejection, as gate-control
// would write them.
func sampleRecords() []audit.Record {
	return []audit.Record{
		{Event: audit.EventOrphanReaped, Backend: "runsc", SpawnID: "old-1", Reason: "left by a previous gate-control"},
		{Event: audit.EventSpawnRequested, SpawnID: "s-1", Role: "gate", KeyID: "k1", WorkspaceDigest: "sha256:abcd", Argv: []string{"npm", "ci"}},
		{Event: audit.EventSpawnStarted, SpawnID: "s-1", Role: "gate", Backend: "runsc", KeyID: "k1", Argv: []string{"npm", "ci"}},
		{Event: audit.EventSpawnFinished, SpawnID: "s-1", Role: "gate", Backend: "runsc", KeyID: "k1", Argv: []string{"npm", "ci"},
			Exit: intp(0), DurationMS: 1234, Trace: &audit.TraceSummary{Events: 12, Shells: 1, Complete: true}},
		{Event: audit.EventSpawnRejected, SpawnID: "s-2", Role: "admin", KeyID: "k1", Argv: []string{"sh", "-c", "id"}, Reason: "unknown role \"admin\""},
	}
}

// writeLog appends recs to a new log and returns its path and content.
func writeLog(t testing.TB, recs []audit.Record) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.WithClock(fixedClock()))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for _, r := range recs {
		if _, err := l.Append(r); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

func readAll(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []audit.Record
	rd := audit.NewReader(f)
	for {
		r, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return recs
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		recs = append(recs, r)
	}
}

func TestAppendReopenAppend(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	clock := fixedClock()
	recs := sampleRecords()
	var written []audit.Record

	l, err := audit.Open(path, audit.WithClock(clock))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if diff := cmp.Diff(audit.Anchor{Hash: audit.Genesis}, l.Anchor()); diff != "" {
		t.Errorf("Anchor of an empty log (-want +got):\n%s", diff)
	}
	for _, r := range recs[:3] {
		got, err := l.Append(r)
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		written = append(written, got)
	}
	anchor := l.Anchor()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := l.Append(recs[3]); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Append after Close: got %v, want ErrClosed", err)
	}

	l, err = audit.Open(path, audit.WithClock(clock))
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	if diff := cmp.Diff(anchor, l.Anchor()); diff != "" {
		t.Errorf("Anchor after reopening (-want +got):\n%s", diff)
	}
	for _, r := range recs[3:] {
		got, err := l.Append(r)
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		written = append(written, got)
	}
	final := l.Anchor()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	for i, r := range written {
		if r.Seq != uint64(i+1) {
			t.Errorf("record %d: Seq = %d, want %d", i, r.Seq, i+1)
		}
		if r.Time.Location() != time.UTC {
			t.Errorf("record %d: Time %v is not in UTC", i, r.Time)
		}
	}
	if written[0].Prev != audit.Genesis {
		t.Errorf("first Prev = %q, want Genesis", written[0].Prev)
	}
	if diff := cmp.Diff(written, readAll(t, path)); diff != "" {
		t.Errorf("records read back (-want +got):\n%s", diff)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := audit.VerifyAgainst(f, final)
	if err != nil || n != len(recs) {
		t.Errorf("VerifyAgainst = %d, %v; want %d, nil", n, err, len(recs))
	}
}

func TestAppendKeepsGivenTime(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	when := time.Date(2024, 6, 1, 12, 0, 0, 0, time.FixedZone("EST", -5*3600))
	got, err := l.Append(audit.Record{Event: audit.EventSpawnStarted, Time: when, Seq: 99, Prev: "forged"})
	if err != nil {
		t.Fatal(err)
	}
	want := audit.Record{Event: audit.EventSpawnStarted, Time: when.UTC(), Seq: 1, Prev: audit.Genesis}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Append (-want +got):\n%s", diff)
	}
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %v, want 0600", got)
	}
}

func TestOpenLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Open(path); !errors.Is(err, audit.ErrLocked) {
		t.Errorf("second Open: got %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := audit.Open(path)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	l2.Close()
}

func TestAppendRejects(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(audit.Record{}); err == nil {
		t.Error("Append of a record with no event succeeded")
	}
	huge := audit.Record{Event: audit.EventSpawnRequested, Argv: []string{strings.Repeat("a", audit.MaxRecordBytes)}}
	if _, err := l.Append(huge); !errors.Is(err, audit.ErrRecordTooLarge) {
		t.Errorf("Append of a huge record: got %v, want ErrRecordTooLarge", err)
	}
	// Refused records leave no trace and do not use up a seq.
	got, err := l.Append(audit.Record{Event: audit.EventSpawnRequested})
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 1 {
		t.Errorf("Seq after refused appends = %d, want 1", got.Seq)
	}
}

func TestOpenRefusesCorruptLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tamper func([]byte) []byte
		want   verifyResult
	}{
		{
			name:   "edited argv",
			tamper: func(b []byte) []byte { return bytes.Replace(b, []byte(`"argv":["npm"`), []byte(`"argv":["nqm"`), 1) },
			want:   verifyResult{Line: 3, Seq: 3},
		},
		{
			name:   "partial last line",
			tamper: func(b []byte) []byte { return b[:len(b)-10] },
			want:   verifyResult{Line: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path, b := writeLog(t, sampleRecords())
			if err := os.WriteFile(path, tt.tamper(b), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := audit.Open(path)
			if err == nil {
				l.Close()
				t.Fatal("Open of a corrupt log succeeded")
			}
			var verr *audit.VerifyError
			if !errors.As(err, &verr) {
				t.Fatalf("Open: got %v, want a *VerifyError", err)
			}
			got := verifyResult{Line: verr.Line, Seq: verr.Seq}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Open error (-want +got):\n%s", diff)
			}
			// Nothing was appended onto the broken chain.
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, tt.tamper(b)) {
				t.Error("Open changed the corrupt file")
			}
		})
	}
}

func TestConcurrentAppend(t *testing.T) {
	t.Parallel()
	const writers, each = 8, 25
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := l.Append(audit.Record{
					Event:   audit.EventSpawnRequested,
					SpawnID: string(rune('a'+w)) + "-" + string(rune('a'+i)),
					Argv:    []string{"true"},
				})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Append: %v", err)
	}
	anchor := l.Anchor()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := audit.VerifyAgainst(f, anchor)
	if err != nil || n != writers*each {
		t.Errorf("VerifyAgainst = %d, %v; want %d, nil", n, err, writers*each)
	}
}
