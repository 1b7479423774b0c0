package audit_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/audit"
)

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// signedLog writes n records to a new log that checkpoints every 3, and
// closes it.
func signedLog(t *testing.T, key ed25519.PrivateKey, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path, audit.WithClock(fixedClock()), audit.WithCheckpoints(key, 3))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(audit.Record{Event: audit.EventSpawnStarted, SpawnID: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func verifySigned(t *testing.T, path string, pub ed25519.PublicKey) (audit.SignedReport, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return audit.VerifySigned(f, pub)
}

func TestCheckpointsSignTheChain(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	path := signedLog(t, key, 7)
	// 1 2 3 [cp 3] 5 6 7 [cp 7] 9 [cp 9 at Close]: 7 records, 3
	// checkpoints.
	rep, err := verifySigned(t, path, pubOf(key))
	if err != nil {
		t.Fatalf("VerifySigned: %v", err)
	}
	want := audit.SignedReport{Records: 10, Checkpoints: 3, Signed: 9}
	if diff := cmp.Diff(want, rep, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Head" }, cmp.Ignore())); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if rep.Tail.Len() != 0 {
		t.Errorf("tail %+v after a clean close, want none", rep.Tail)
	}
	// Closing again, or a checkpoint with nothing new, adds nothing.
	l, err := audit.Open(path, audit.WithCheckpoints(key, 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if again, err := verifySigned(t, path, pubOf(key)); err != nil || again.Records != rep.Records {
		t.Errorf("after an idle open: %+v, %v; want %d records", again, err, rep.Records)
	}
}

// forgeAppend appends a correctly chained record to the log at path, as
// anyone who can write the file can.
func forgeAppend(t *testing.T, path string, r audit.Record) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rd := audit.NewReader(bytes.NewReader(b))
	for {
		if _, err := rd.Next(); err != nil {
			break
		}
	}
	head := rd.Anchor()
	r.Seq, r.Prev, r.Time = head.Seq+1, head.Hash, time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC)
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(append(b, line...), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestForgedAppendIsDetected is the attack of issue 10, item 8: a record
// appended with a correct chain passes Verify, but VerifySigned reports it
// as the unsigned tail, and a checkpoint forged for it does not verify.
func TestForgedAppendIsDetected(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	pub := pubOf(key)
	forged := audit.Record{Event: audit.EventSpawnFinished, SpawnID: "forged", Role: "gate", Exit: intp(0)}

	t.Run("plain append", func(t *testing.T) {
		t.Parallel()
		path := signedLog(t, key, 7)
		forgeAppend(t, path, forged)
		f, _ := os.Open(path)
		defer f.Close()
		if n, err := audit.Verify(f); err != nil || n != 11 {
			t.Fatalf("Verify = %d, %v: the forgery is chained correctly, the chain alone passes it", n, err)
		}
		rep, err := verifySigned(t, path, pub)
		if err != nil {
			t.Fatalf("VerifySigned: %v", err)
		}
		if rep.Signed != 9 || rep.Tail != (audit.Range{From: 11, To: 11}) {
			t.Errorf("signed %d, tail %+v; want 9 signed and record 11 as the unsigned tail", rep.Signed, rep.Tail)
		}
	})

	bad := []struct {
		name string
		cp   func(*audit.Checkpoint)
		want error
	}{
		{"checkpoint signed by another key", func(c *audit.Checkpoint) {
			other := newKey(t)
			c.KeyID = audit.KeyID(pub) // claims ours
			c.Sig = ed25519.Sign(other, c.SignedMessage())
		}, audit.ErrBadCheckpoint},
		{"checkpoint naming another key", func(c *audit.Checkpoint) {
			other := newKey(t)
			c.KeyID = audit.KeyID(pubOf(other))
			c.Sig = ed25519.Sign(other, c.SignedMessage())
		}, audit.ErrBadCheckpoint},
		{"an earlier checkpoint replayed", nil, audit.ErrCheckpointMismatch},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := signedLog(t, key, 7)
			last := lastCheckpoint(t, path)
			forgeAppend(t, path, forged)
			cp := *last
			if tt.cp != nil {
				cp.Count, cp.Head, cp.Prev = 11, headOf(t, path).Hash, last.Count
				tt.cp(&cp)
			}
			forgeAppend(t, path, audit.Record{Event: audit.EventCheckpoint, Checkpoint: &cp})
			_, err := verifySigned(t, path, pub)
			var verr *audit.VerifyError
			if !errors.As(err, &verr) || !errors.Is(err, tt.want) || verr.Seq != 12 {
				t.Fatalf("VerifySigned = %v, want a *VerifyError at seq 12 matching %v", err, tt.want)
			}
		})
	}

	t.Run("rewritten with no checkpoints", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "audit.log")
		l, err := audit.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := l.Append(forged); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		rep, err := verifySigned(t, path, pub)
		if err != nil || rep.Signed != 0 || rep.Tail != (audit.Range{From: 1, To: 3}) {
			t.Errorf("VerifySigned = %+v, %v; want every record in the unsigned tail", rep, err)
		}
	})
}

func lastCheckpoint(t *testing.T, path string) *audit.Checkpoint {
	t.Helper()
	var last *audit.Checkpoint
	for _, r := range readAll(t, path) {
		if r.Checkpoint != nil {
			last = r.Checkpoint
		}
	}
	if last == nil {
		t.Fatal("no checkpoint")
	}
	return last
}

func headOf(t *testing.T, path string) audit.Anchor {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	sum := sha256.Sum256(ls[len(ls)-1])
	return audit.Anchor{Seq: uint64(len(ls)), Hash: hex.EncodeToString(sum[:])}
}

// TestOpenAdoptsAnUnsignedTail: records after the last checkpoint, as a
// crash or a writer without the key leaves them, are signed at the next
// Open, and reported as adopted rather than vouched for.
func TestOpenAdoptsAnUnsignedTail(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	path := signedLog(t, key, 2) // 1 2 [cp 2]
	l, err := audit.Open(path)   // no key: a crash's leftovers, or another writer
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := l.Append(audit.Record{Event: audit.EventSpawnStarted}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l, err = audit.Open(path, audit.WithCheckpoints(key, 3)) // 4 5 adopted: [cp 5]
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Adopted(), (audit.Range{From: 4, To: 5}); got != want {
		t.Errorf("Adopted() = %+v, want %+v", got, want)
	}
	l.Close()
	// Opened again, nothing is adopted: the checkpoint is the last record.
	l, err = audit.Open(path, audit.WithCheckpoints(key, 3))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Adopted(); got.Len() != 0 {
		t.Errorf("Adopted() after a clean close = %+v, want empty", got)
	}
	l.Close()
	rep, err := verifySigned(t, path, pubOf(key))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]audit.Range{{From: 4, To: 5}}, rep.Adopted); diff != "" {
		t.Errorf("adopted (-want +got):\n%s", diff)
	}
	if rep.Signed != 5 || rep.Tail.Len() != 0 || rep.Checkpoints != 2 {
		t.Errorf("report %+v, want 5 signed in 2 checkpoints and no tail", rep)
	}
}

func TestAppendRefusesCheckpoints(t *testing.T) {
	t.Parallel()
	l, err := audit.Open(filepath.Join(t.TempDir(), "audit.log"), audit.WithCheckpoints(newKey(t), 0))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, r := range []audit.Record{
		{Event: audit.EventCheckpoint, Checkpoint: &audit.Checkpoint{}},
		{Event: audit.EventSpawnStarted, Checkpoint: &audit.Checkpoint{}},
	} {
		if _, err := l.Append(r); err == nil {
			t.Errorf("Append(%v with a checkpoint) succeeded", r.Event)
		}
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit-key")
	key, err := audit.LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := audit.LoadOrCreateKey(path)
	if err != nil || !key.Equal(again) {
		t.Fatalf("second load: %v, same key %v", err, key.Equal(again))
	}
	for p, want := range map[string]os.FileMode{path: 0o600, audit.PublicKeyPath(path): 0o644} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %v", p, fi.Mode(), err, want)
		}
	}
	pub, err := audit.ReadPublicKey(audit.PublicKeyPath(path))
	if err != nil || !pub.Equal(pubOf(key)) {
		t.Errorf("ReadPublicKey: %v, matches %v", err, pub.Equal(pubOf(key)))
	}
	// A deleted public key file is written again.
	os.Remove(audit.PublicKeyPath(path))
	if _, err := audit.LoadOrCreateKey(path); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.ReadPublicKey(audit.PublicKeyPath(path)); err != nil {
		t.Errorf("public key not rewritten: %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.LoadOrCreateKey(path); !errors.Is(err, audit.ErrInsecureKey) {
		t.Errorf("group-readable key: %v, want ErrInsecureKey", err)
	}
	if _, err := audit.ParsePublicKey([]byte("not pem")); err == nil {
		t.Error("ParsePublicKey of junk succeeded")
	}
}
