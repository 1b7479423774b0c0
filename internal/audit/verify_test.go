package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/google/go-cmp/cmp"
)

// verifyResult is what a test compares of Verify's answer: the count and
// where the first bad record is.
type verifyResult struct {
	N    int
	Line int
	Seq  uint64
	Err  bool // an error that is not a *VerifyError
}

func verify(t testing.TB, b []byte) verifyResult {
	t.Helper()
	n, err := audit.Verify(bytes.NewReader(b))
	return result(n, err)
}

func result(n int, err error) verifyResult {
	got := verifyResult{N: n}
	var verr *audit.VerifyError
	switch {
	case errors.As(err, &verr):
		got.Line, got.Seq = verr.Line, verr.Seq
	case err != nil:
		got.Err = true
	}
	return got
}

func lines(b []byte) [][]byte {
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

// offsetIn returns the offset in b of sub within the given 1-based line.
func offsetIn(t testing.TB, b []byte, line int, sub string) int {
	t.Helper()
	off := 0
	for _, l := range lines(b)[:line-1] {
		off += len(l)
	}
	i := bytes.Index(lines(b)[line-1], []byte(sub))
	if i < 0 {
		t.Fatalf("%q not in line %d", sub, line)
	}
	return off + i
}

func flip(t testing.TB, b []byte, off int) []byte {
	t.Helper()
	c := bytes.Clone(b)
	c[off] ^= 0x01
	return c
}

// chain encodes recs as a log, setting each Prev to the hash of the line
// before, so that tests can build logs Append would refuse to write.
func chain(t testing.TB, recs ...audit.Record) []byte {
	t.Helper()
	var out []byte
	prev := audit.Genesis
	for _, r := range recs {
		if r.Prev == "" {
			r.Prev = prev
		}
		if r.Time.IsZero() {
			r.Time = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(line)
		prev = hex.EncodeToString(sum[:])
		out = append(append(out, line...), '\n')
	}
	return out
}

func TestVerifyGood(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			recs := sampleRecords()[:n]
			_, b := writeLog(t, recs)
			if diff := cmp.Diff(verifyResult{N: n}, verify(t, b)); diff != "" {
				t.Errorf("Verify (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyTamper(t *testing.T) {
	t.Parallel()
	_, good := writeLog(t, sampleRecords()) // five lines
	ls := lines(good)
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	ev := func(e audit.EventType) audit.Record { return audit.Record{Event: e} }
	withSeq := func(seq uint64) audit.Record { r := ev(audit.EventSpawnStarted); r.Seq = seq; return r }

	tests := []struct {
		name string
		log  func(t *testing.T) []byte
		want verifyResult
	}{
		{
			name: "flip seq digit",
			log:  func(t *testing.T) []byte { return flip(t, good, offsetIn(t, good, 2, `"seq":2`)+6) },
			want: verifyResult{N: 1, Line: 2, Seq: 3},
		},
		{
			name: "flip argv byte",
			log:  func(t *testing.T) []byte { return flip(t, good, offsetIn(t, good, 2, `"npm"`)+1) },
			want: verifyResult{N: 2, Line: 3, Seq: 3},
		},
		{
			name: "flip prev byte",
			log:  func(t *testing.T) []byte { return flip(t, good, offsetIn(t, good, 3, `"prev":"`)+10) },
			want: verifyResult{N: 2, Line: 3, Seq: 3},
		},
		{
			name: "flip first prev byte",
			log:  func(t *testing.T) []byte { return flip(t, good, offsetIn(t, good, 1, `"prev":"`)+8) },
			want: verifyResult{N: 0, Line: 1, Seq: 1},
		},
		{
			name: "flip opening brace",
			log:  func(t *testing.T) []byte { return flip(t, good, 0) },
			want: verifyResult{N: 0, Line: 1},
		},
		{
			name: "flip time byte",
			log:  func(t *testing.T) []byte { return flip(t, good, offsetIn(t, good, 4, `"time":"2025`)+9) },
			want: verifyResult{N: 4, Line: 5, Seq: 5},
		},
		{
			name: "flip exit",
			log:  func(t *testing.T) []byte { return flip(t, good, offsetIn(t, good, 4, `"exit":0`)+7) },
			want: verifyResult{N: 4, Line: 5, Seq: 5},
		},
		{
			name: "flip a newline",
			log:  func(t *testing.T) []byte { return flip(t, good, len(ls[0])-1) },
			want: verifyResult{N: 0, Line: 1},
		},
		{
			name: "delete middle line",
			log:  func(*testing.T) []byte { return join(ls[0], ls[1], ls[3], ls[4]) },
			want: verifyResult{N: 2, Line: 3, Seq: 4},
		},
		{
			name: "delete first line",
			log:  func(*testing.T) []byte { return join(ls[1:]...) },
			want: verifyResult{N: 0, Line: 1, Seq: 2},
		},
		{
			name: "swap adjacent lines",
			log:  func(*testing.T) []byte { return join(ls[0], ls[2], ls[1], ls[3], ls[4]) },
			want: verifyResult{N: 1, Line: 2, Seq: 3},
		},
		{
			name: "swap distant lines",
			log:  func(*testing.T) []byte { return join(ls[0], ls[3], ls[2], ls[1], ls[4]) },
			want: verifyResult{N: 1, Line: 2, Seq: 4},
		},
		{
			name: "duplicate line",
			log:  func(*testing.T) []byte { return join(ls[0], ls[1], ls[1], ls[2]) },
			want: verifyResult{N: 2, Line: 3, Seq: 2},
		},
		{
			name: "truncate mid-line",
			log:  func(*testing.T) []byte { return good[:len(good)-len(ls[4])/2] },
			want: verifyResult{N: 4, Line: 5},
		},
		{
			name: "truncate the final newline",
			log:  func(*testing.T) []byte { return good[:len(good)-1] },
			want: verifyResult{N: 4, Line: 5},
		},
		{
			name: "truncate mid-log",
			log:  func(*testing.T) []byte { return join(ls[0], ls[1][:20], ls[2]) },
			want: verifyResult{N: 1, Line: 2},
		},
		{
			name: "unknown field",
			log: func(*testing.T) []byte {
				return join(ls[0], bytes.Replace(ls[1], []byte(`{`), []byte(`{"extra":1,`), 1), ls[2])
			},
			want: verifyResult{N: 1, Line: 2},
		},
		{
			name: "unknown trace field",
			log: func(*testing.T) []byte {
				return join(ls[0], ls[1], ls[2], bytes.Replace(ls[3], []byte(`"complete":true`), []byte(`"complete":true,"x":1`), 1))
			},
			want: verifyResult{N: 3, Line: 4},
		},
		{
			name: "unknown event",
			log: func(*testing.T) []byte {
				return join(ls[0], bytes.Replace(ls[1], []byte(`spawn.requested`), []byte(`spawn.exploded`), 1))
			},
			want: verifyResult{N: 1, Line: 2},
		},
		{
			name: "blank line",
			log:  func(*testing.T) []byte { return join(ls[0], ls[1], []byte("\n"), ls[2]) },
			want: verifyResult{N: 2, Line: 3},
		},
		{
			name: "trailing data after a record",
			log:  func(*testing.T) []byte { return join(ls[0], bytes.Replace(ls[1], []byte("}\n"), []byte("} {}\n"), 1)) },
			want: verifyResult{N: 1, Line: 2},
		},
		{
			name: "not json",
			log:  func(*testing.T) []byte { return []byte("hello\n") },
			want: verifyResult{Line: 1},
		},
		{
			name: "seq starts at 2",
			log:  func(t *testing.T) []byte { return chain(t, withSeq(2), withSeq(3)) },
			want: verifyResult{Line: 1, Seq: 2},
		},
		{
			name: "seq skips",
			log:  func(t *testing.T) []byte { return chain(t, withSeq(1), withSeq(2), withSeq(4)) },
			want: verifyResult{N: 2, Line: 3, Seq: 4},
		},
		{
			name: "seq zero",
			log:  func(t *testing.T) []byte { return chain(t, withSeq(0)) },
			want: verifyResult{Line: 1},
		},
		{
			name: "missing event",
			log: func(t *testing.T) []byte {
				ls := lines(chain(t, withSeq(1), withSeq(2)))
				return join(ls[0], bytes.Replace(ls[1], []byte(`"event":"spawn.started",`), nil, 1))
			},
			want: verifyResult{N: 1, Line: 2},
		},
		{
			name: "first prev not genesis",
			log: func(t *testing.T) []byte {
				r := withSeq(1)
				r.Prev = strings.Repeat("1", 64)
				return chain(t, r, withSeq(2))
			},
			want: verifyResult{Line: 1, Seq: 1},
		},
		{
			name: "line too long",
			log: func(t *testing.T) []byte {
				r := withSeq(1)
				r.Argv = []string{strings.Repeat("a", audit.MaxRecordBytes)}
				return chain(t, r)
			},
			want: verifyResult{Line: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, verify(t, tt.log(t))); diff != "" {
				t.Errorf("Verify (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVerifyFlipEveryByte flips each byte of a log in turn. A flip in a
// record that has a successor is caught at that record or the next; a flip
// in the last record is caught against an anchor.
func TestVerifyFlipEveryByte(t *testing.T) {
	t.Parallel()
	path, good := writeLog(t, sampleRecords())
	anchor := readAnchor(t, path)
	ls := lines(good)
	off := 0
	for i, l := range ls {
		line := i + 1
		for j := range l {
			b := flip(t, good, off+j)
			var got verifyResult
			if line < len(ls) {
				got = verify(t, b)
			} else {
				got = result(audit.VerifyAgainst(bytes.NewReader(b), anchor))
			}
			last := line == len(ls)
			if got.Err || got.Line != line && (last || got.Line != line+1) {
				t.Errorf("flipping byte %d (line %d, %q): got %+v, want a *VerifyError at line %d or, before the last line, %d", off+j, line, l[j], got, line, line+1)
			}
		}
		off += len(l)
	}
}

func readAnchor(t *testing.T, path string) audit.Anchor {
	t.Helper()
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Anchor()
}

func TestVerifyAgainst(t *testing.T) {
	t.Parallel()
	path, good := writeLog(t, sampleRecords())
	head := readAnchor(t, path)
	ls := lines(good)
	mid := audit.Anchor{Seq: 3, Hash: hashLine(ls[2])}

	tests := []struct {
		name   string
		log    []byte
		anchor audit.Anchor
		want   verifyResult
	}{
		{"head", good, head, verifyResult{N: 5}},
		{"middle anchor, log grew since", good, mid, verifyResult{N: 5}},
		{"empty log, genesis anchor", nil, audit.Anchor{Hash: audit.Genesis}, verifyResult{}},
		{"genesis anchor", good, audit.Anchor{Hash: audit.Genesis}, verifyResult{N: 5}},
		{"last line deleted", bytes.Join(ls[:4], nil), head, verifyResult{N: 4, Line: 5, Seq: 5}},
		{"all lines deleted", nil, head, verifyResult{Line: 1, Seq: 5}},
		{"last line edited", bytes.Replace(good, []byte(`unknown role`), []byte(`unknown rolf`), 1), head, verifyResult{N: 4, Line: 5, Seq: 5}},
		{"anchor of another log", good, audit.Anchor{Seq: 3, Hash: strings.Repeat("a", 64)}, verifyResult{N: 2, Line: 3, Seq: 3}},
		{"chain broken before the anchor", bytes.Join([][]byte{ls[0], ls[2]}, nil), mid, verifyResult{N: 1, Line: 2, Seq: 3}},
		{"malformed anchor", good, audit.Anchor{Seq: 1, Hash: "abc"}, verifyResult{Err: true}},
		{"seq 0 anchor not genesis", good, audit.Anchor{Hash: strings.Repeat("a", 64)}, verifyResult{Err: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := result(audit.VerifyAgainst(bytes.NewReader(tt.log), tt.anchor))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("VerifyAgainst (-want +got):\n%s", diff)
			}
		})
	}
}

func hashLine(l []byte) string {
	sum := sha256.Sum256(bytes.TrimSuffix(l, []byte("\n")))
	return hex.EncodeToString(sum[:])
}

func TestReaderAnchorMatchesLog(t *testing.T) {
	t.Parallel()
	path, good := writeLog(t, sampleRecords())
	rd := audit.NewReader(bytes.NewReader(good))
	for range 5 {
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(readAnchor(t, path), rd.Anchor()); diff != "" {
		t.Errorf("Anchor (-want +got):\n%s", diff)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestVerifyReadError(t *testing.T) {
	t.Parallel()
	got := result(audit.Verify(failingReader{}))
	if diff := cmp.Diff(verifyResult{Err: true}, got); diff != "" {
		t.Errorf("Verify (-want +got):\n%s", diff)
	}
}
