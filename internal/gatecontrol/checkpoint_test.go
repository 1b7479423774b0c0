package gatecontrol

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/audit"
)

// TestAuditLogIsSigned: gate-control signs its audit log every
// CheckpointEvery records and at Shutdown, with the key beside the HMAC
// key; a correctly chained record appended afterwards by someone who can
// write the file is the unsigned tail.
func TestAuditLogIsSigned(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.CheckpointEvery = 2 })
	for range 3 {
		if r := h.spawn(t.Context(), h.request("probe", "true")); r.status != 200 {
			t.Fatalf("spawn: %d %s", r.status, r.body)
		}
	}
	keyFile := filepath.Join(filepath.Dir(h.cfg.KeyFile), AuditKeyName)
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit key %s: %v, %v", keyFile, fi.Mode(), err)
	}
	if err := h.shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	pub, err := audit.ReadPublicKey(audit.PublicKeyPath(keyFile))
	if err != nil {
		t.Fatal(err)
	}
	verify := func() audit.SignedReport {
		t.Helper()
		f, err := os.Open(h.cfg.AuditLog)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rep, err := audit.VerifySigned(f, pub)
		if err != nil {
			t.Fatalf("VerifySigned: %v", err)
		}
		return rep
	}
	// 9 spawn records, a checkpoint after every 2, one at Shutdown.
	rep := verify()
	if rep.Checkpoints != 5 || rep.Tail.Len() != 0 || rep.Signed != rep.Records-1 {
		t.Fatalf("report %+v, want 5 checkpoints and every record signed", rep)
	}

	// The forgery: a correctly chained spawn.finished.
	recs := h.records()
	last := recs[len(recs)-1]
	b, err := os.ReadFile(h.cfg.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	forged := audit.Record{Seq: last.Seq + 1, Time: last.Time, Event: audit.EventSpawnFinished, SpawnID: "forged", Role: "gate", Prev: headHash(b)}
	line, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.cfg.AuditLog, append(append(b, line...), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = verify()
	if rep.Tail != (audit.Range{From: forged.Seq, To: forged.Seq}) {
		t.Errorf("tail %+v, want the forged record %d", rep.Tail, forged.Seq)
	}
	// Put the log back for the harness's own check.
	if err := os.WriteFile(h.cfg.AuditLog, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// headHash returns the hash of the last line of a log.
func headHash(log []byte) string {
	lines := bytes.Split(bytes.TrimSuffix(log, []byte("\n")), []byte("\n"))
	sum := sha256.Sum256(lines[len(lines)-1])
	return hex.EncodeToString(sum[:])
}

// TestAdoptionWarns is issue 22, item 8: a record forged while
// gate-control was stopped is signed as adopted at the next start, and the
// start says so, naming the records, as a warning.
func TestAdoptionWarns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if r := h.spawn(t.Context(), h.request("probe", "true")); r.status != 200 {
		t.Fatalf("spawn: %d %s", r.status, r.body)
	}
	if err := h.shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(h.cfg.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	recs := h.records()
	last := recs[len(recs)-1]
	for i := range 2 {
		forged := audit.Record{Seq: last.Seq + 1 + uint64(i), Time: last.Time, Event: audit.EventSpawnFinished, SpawnID: "forged", Role: "gate", Prev: headHash(b)}
		line, err := json.Marshal(forged)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(h.cfg.AuditLog, b, 0o600); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	cfg := h.cfg
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	from, to := last.Seq+1, last.Seq+2
	want := fmt.Sprintf("adopted_from=%d adopted_to=%d adopted=2", from, to)
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), want) {
		t.Errorf("gate-control's log:\n%s\nwant a warning with %q", logs.String(), want)
	}

	// A clean restart adopts nothing and says nothing of it.
	logs.Reset()
	srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "adopted") {
		t.Errorf("a clean restart logged an adoption:\n%s", logs.String())
	}
}
