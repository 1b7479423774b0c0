package audit_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codegenie/codegenie/internal/audit"
)

func FuzzVerify(f *testing.F) {
	_, good := writeLog(f, sampleRecords())
	ls := lines(good)
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:len(good)-1])
	f.Add(bytes.Join([][]byte{ls[0], ls[2]}, nil))
	f.Add(bytes.Join([][]byte{ls[1], ls[0]}, nil))
	f.Add(bytes.Replace(good, []byte(`{`), []byte(`{"x":1,`), 1))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"seq":1,"time":"2025-01-01T00:00:00Z","event":"spawn.started","prev":"` + audit.Genesis + `"}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := audit.Verify(bytes.NewReader(b))
		var verr *audit.VerifyError
		switch {
		case err == nil:
			if want := bytes.Count(b, []byte("\n")); n != want || len(b) > 0 && b[len(b)-1] != '\n' {
				t.Fatalf("Verify = %d, nil for %d lines", n, want)
			}
		case errors.As(err, &verr):
			if verr.Line != n+1 {
				t.Fatalf("Verify = %d, %v: the bad line is not the one after the good ones", n, err)
			}
		default:
			t.Fatalf("Verify of an in-memory log: %v", err)
		}
		// A log that verifies is verified against its own head anchor.
		if err == nil {
			rd := audit.NewReader(bytes.NewReader(b))
			for range n {
				if _, err := rd.Next(); err != nil {
					t.Fatalf("Next after a good Verify: %v", err)
				}
			}
			if m, err := audit.VerifyAgainst(bytes.NewReader(b), rd.Anchor()); err != nil || m != n {
				t.Fatalf("VerifyAgainst own anchor = %d, %v; want %d, nil", m, err, n)
			}
		}
	})
}

// FuzzVerifySigned checks the checkpoint verifier: it never panics, and
// what it reports of a log it accepts adds up: the signed records and the
// unsigned tail lie within the log, and the tail runs to its end.
func FuzzVerifySigned(f *testing.F) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	dir := f.TempDir()
	path := filepath.Join(dir, "audit.log")
	l, err := audit.Open(path, audit.WithCheckpoints(key, 2))
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range sampleRecords() {
		if _, err := l.Append(r); err != nil {
			f.Fatal(err)
		}
	}
	l.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(bytes.Replace(good, []byte(`"adopted"`), []byte(`"count":1,"adopted"`), 1))
	f.Add([]byte{})
	pub := key.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := audit.VerifySigned(bytes.NewReader(b), pub)
		if err != nil {
			return
		}
		if rep.Signed >= rep.Records && rep.Records > 0 || rep.Head.Seq != rep.Records {
			t.Fatalf("report %+v: signed or head beyond the records", rep)
		}
		if rep.Tail.Len() > 0 && (rep.Tail.To != rep.Records || rep.Tail.From <= rep.Signed) {
			t.Fatalf("report %+v: the tail does not run from after the last checkpoint to the end", rep)
		}
	})
}
