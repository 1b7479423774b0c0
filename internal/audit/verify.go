package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
)

// VerifyError names the first record of a log that breaks the format or the
// chain.
type VerifyError struct {
	// Line is the 1-based line number of the bad record.
	Line int
	// Seq is the bad record's sequence number, or 0 when it did not decode.
	Seq uint64
	// Reason says what is wrong.
	Reason string
	// Err, when set, is the sentinel error the reason stands for, such as
	// ErrBadCheckpoint.
	Err error
}

// Unwrap returns Err.
func (e *VerifyError) Unwrap() error { return e.Err }

func (e *VerifyError) Error() string {
	if e.Seq == 0 {
		return fmt.Sprintf("audit log line %d: %s", e.Line, e.Reason)
	}
	return fmt.Sprintf("audit log line %d (seq %d): %s", e.Line, e.Seq, e.Reason)
}

// Anchor pins one record of a log: its sequence number and the hex SHA-256
// of its line. The anchor of an empty log is {0, Genesis}. Kept where the
// log's writer cannot change it, an anchor lets VerifyAgainst detect what a
// chain alone cannot: removed or edited records at the end of the log.
type Anchor struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// Reader reads records from a log in order, checking the format and the
// chain as it goes. It is not safe for concurrent use.
type Reader struct {
	br     *bufio.Reader
	buf    []byte
	line   int
	anchor Anchor
	err    error
}

// NewReader returns a Reader of the log in r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReader(r), anchor: Anchor{Hash: Genesis}}
}

// Next returns the next record. It returns io.EOF after the last complete
// record, a *VerifyError at the first bad one, and any error from the
// underlying reader, wrapped. After an error, Next keeps returning it.
func (rd *Reader) Next() (Record, error) {
	if rd.err != nil {
		return Record{}, rd.err
	}
	r, err := rd.next()
	if err != nil {
		rd.err = err
		return Record{}, err
	}
	return r, nil
}

// Anchor returns the anchor of the last record Next returned, or {0,
// Genesis} before the first.
func (rd *Reader) Anchor() Anchor { return rd.anchor }

func (rd *Reader) next() (Record, error) {
	line, err := rd.readLine()
	if err != nil {
		return Record{}, err
	}
	bad := func(seq uint64, format string, args ...any) error {
		return &VerifyError{Line: rd.line, Seq: seq, Reason: fmt.Sprintf(format, args...)}
	}
	r, err := decode(line)
	if err != nil {
		return Record{}, bad(0, "decoding record: %v", err)
	}
	if want := rd.anchor.Seq + 1; r.Seq != want {
		return Record{}, bad(r.Seq, "seq is %d, want %d: a record was removed, inserted or moved", r.Seq, want)
	}
	if r.Prev != rd.anchor.Hash {
		if rd.anchor.Seq == 0 {
			return Record{}, bad(r.Seq, "prev is %q, want genesis %s", r.Prev, Genesis)
		}
		return Record{}, bad(r.Seq, "prev does not match the hash of line %d: that line or this prev was changed", rd.line-1)
	}
	rd.anchor = Anchor{Seq: r.Seq, Hash: lineHash(line)}
	return r, nil
}

// readLine returns the next line without its newline, io.EOF at a clean end,
// or a *VerifyError for a partial or oversized line.
func (rd *Reader) readLine() ([]byte, error) {
	rd.buf = rd.buf[:0]
	for {
		frag, err := rd.br.ReadSlice('\n')
		if len(rd.buf)+len(frag) > MaxRecordBytes+1 {
			rd.line++
			return nil, &VerifyError{Line: rd.line, Reason: fmt.Sprintf("line longer than %d bytes", MaxRecordBytes)}
		}
		rd.buf = append(rd.buf, frag...)
		switch {
		case err == nil:
			rd.line++
			line := rd.buf[:len(rd.buf)-1]
			if len(bytes.TrimSpace(line)) == 0 {
				return nil, &VerifyError{Line: rd.line, Reason: "empty line"}
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(rd.buf) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			rd.line++
			return nil, &VerifyError{Line: rd.line, Reason: "truncated line: no newline at the end of the log"}
		default:
			return nil, fmt.Errorf("reading audit log: %w", err)
		}
	}
}

// Verify reads a whole log from r and checks that every line is a strictly
// decoded record, that Seq counts up by one from 1, and that every Prev
// matches the previous line. It returns the number of good records before
// the end or the first bad record, which it reports as a *VerifyError. See
// the package documentation for what a chain alone cannot detect.
func Verify(r io.Reader) (n int, err error) {
	rd := NewReader(r)
	for {
		if _, err := rd.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		n++
	}
}

// VerifyAgainst is Verify that also checks the log against an anchor taken
// earlier: the record numbered a.Seq must exist and hash to a.Hash. Records
// appended after the anchor are verified by the chain as usual. An anchor
// that is malformed is an error, but not a *VerifyError.
func VerifyAgainst(r io.Reader, a Anchor) (n int, err error) {
	if !validHash(a.Hash) || (a.Seq == 0 && a.Hash != Genesis) {
		return 0, fmt.Errorf("checking audit anchor: invalid anchor {%d %q}", a.Seq, a.Hash)
	}
	rd := NewReader(r)
	for {
		_, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
		n++
		if got := rd.Anchor(); got.Seq == a.Seq && got.Hash != a.Hash {
			return n - 1, &VerifyError{Line: rd.line, Seq: got.Seq, Reason: fmt.Sprintf("record hash %s does not match the anchor %s", got.Hash, a.Hash)}
		}
	}
	if got := rd.Anchor(); got.Seq < a.Seq {
		return n, &VerifyError{Line: rd.line + 1, Seq: a.Seq, Reason: fmt.Sprintf("log ends at seq %d before the anchor at seq %d: records were removed from the end", got.Seq, a.Seq)}
	}
	return n, nil
}

func validHash(s string) bool {
	if len(s) != len(Genesis) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerHex(s[i]) {
			return false
		}
	}
	return true
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// Range is a run of records by sequence number, From to To inclusive. The
// zero Range is empty.
type Range struct {
	From, To uint64
}

// Len returns the number of records in r.
func (r Range) Len() uint64 {
	if r.From == 0 {
		return 0
	}
	return r.To - r.From + 1
}

// SignedReport is what VerifySigned found in a log whose chain holds.
type SignedReport struct {
	// Records is the number of records, checkpoints included.
	Records uint64
	// Checkpoints is the number of checkpoints, all of them valid.
	Checkpoints int
	// Signed is the count of the last checkpoint: records 1 to Signed are
	// signed, and the checkpoint record after them carries the signature.
	Signed uint64
	// Adopted are the records a checkpoint signed only as found by the
	// writer when it opened the log (a crash, or writes while it was
	// stopped): signed, but not vouched for.
	Adopted []Range
	// Tail is the unsigned tail: the records after the last checkpoint
	// record, which no signature covers. Anyone who can write the file
	// can have appended them.
	Tail Range
	// Head is the anchor of the last record.
	Head Anchor
}

// VerifySigned is Verify that also checks every checkpoint against pub:
// each must be signed by pub and hold the count and head of the records
// before it. A bad checkpoint is a *VerifyError matching ErrBadCheckpoint
// or ErrCheckpointMismatch. Records after the last checkpoint are not an
// error; they are reported as the Tail, and never count as signed.
//
// Like a chain, checkpoints cannot show that records were cut from the end
// of the log together with the checkpoints after them: keep an Anchor for
// that (VerifyAgainst).
func VerifySigned(r io.Reader, pub ed25519.PublicKey) (SignedReport, error) {
	if len(pub) != ed25519.PublicKeySize {
		return SignedReport{}, fmt.Errorf("checking audit checkpoints: public key of %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	var rep SignedReport
	var lastCPSeq uint64
	rd := NewReader(r)
	for {
		before := rd.Anchor()
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, err
		}
		rep.Records++
		cp := rec.Checkpoint
		if cp == nil {
			continue
		}
		if err := cp.check(pub, before, rep.Signed); err != nil {
			return rep, &VerifyError{Line: rd.line, Seq: rec.Seq, Reason: err.Error(), Err: err}
		}
		rep.Checkpoints++
		if cp.Adopted > 0 {
			rep.Adopted = append(rep.Adopted, Range{From: cp.Count - min(cp.Adopted, cp.Count) + 1, To: cp.Count})
		}
		rep.Signed, lastCPSeq = cp.Count, rec.Seq
	}
	rep.Head = rd.Anchor()
	if rep.Head.Seq > lastCPSeq {
		rep.Tail = Range{From: lastCPSeq + 1, To: rep.Head.Seq}
	}
	return rep, nil
}
