package audit_test

import (
	"bytes"
	"errors"
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
