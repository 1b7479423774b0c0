package cli

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/audit"
)

// followPoll is how often audit tail --follow looks for new records.
const followPoll = 250 * time.Millisecond

func newCmdAudit(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check and read gate-control's hash-chained audit log",
		Example: `  codegenie audit verify /var/lib/codegenie/audit.log
  codegenie audit tail -n 20 --follow /var/lib/codegenie/audit.log`,
		Args: exactArgs(0, "a subcommand: verify or tail"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdAuditVerify(g), newCmdAuditTail(g))
	return cmd
}

func newCmdAuditVerify(g *globals) *cobra.Command {
	var anchorFlag, pubkey string
	var allowTail, acceptAdopted bool
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check every record of an audit log, its hash chain and its signed checkpoints",
		Long: `verify reads the whole log and checks that every line is a strictly decoded
record, that the sequence numbers count up from 1, and that each record holds
the hash of the one before. It names the first bad record and exits 1, or
prints the count and the anchor of the last record and exits 0.

A chain alone only proves order: anyone who can write the file can append
records, or rewrite it, with a valid chain. gate-control signs the chain:
every N records and at shutdown it writes a checkpoint holding the count and
head hash, signed with its ed25519 audit key. With --pubkey (the PEM file
serve writes beside the key as audit-key.pub, or "gate-control audit-pubkey"),
verify checks every checkpoint, and reports the records after the last one
as the "unsigned tail": they are never verified, and verify exits 1 unless
--allow-unsigned-tail (for a gate-control that is still running). Records that
gate-control found unsigned when it started are signed as "adopted": a crash
leaves such records, but so does anyone who wrote the log while gate-control
was stopped, and the signature cannot tell them apart. verify names them and
exits 1 unless --accept-adopted (once they have been checked: gate-control
also logged a warning naming them when it started).

Neither the chain nor the checkpoints can tell that records were cut from the
end together with the checkpoints after them. Keep the printed anchor
(SEQ:HASH) where the log's writer cannot change it, and pass it back with
--anchor.`,
		Example: `  codegenie audit verify --pubkey /etc/codegenie/audit-key.pub /var/lib/codegenie/audit.log
  codegenie audit verify --pubkey audit-key.pub --allow-unsigned-tail /var/lib/codegenie/audit.log
  codegenie audit verify --pubkey audit-key.pub --accept-adopted /var/lib/codegenie/audit.log   # adopted records checked after a crash
  codegenie audit verify --anchor 1042:5f0c…e9 /var/lib/codegenie/audit.log`,
		Args: exactArgs(1, "exactly one FILE, the audit log"),
		RunE: func(_ *cobra.Command, args []string) error {
			var anchor *audit.Anchor
			if anchorFlag != "" {
				a, err := parseAnchor(anchorFlag)
				if err != nil {
					return usageErr("--anchor: %v", err)
				}
				anchor = &a
			}
			if allowTail && pubkey == "" {
				return usageErr("--allow-unsigned-tail needs --pubkey")
			}
			if acceptAdopted && pubkey == "" {
				return usageErr("--accept-adopted needs --pubkey")
			}
			if pubkey != "" {
				pub, err := audit.ReadPublicKey(pubkey)
				if err != nil {
					return usageErr("--pubkey: %v", err)
				}
				return runAuditVerifySigned(g, args[0], pub, anchor, allowTail, acceptAdopted)
			}
			return runAuditVerify(g, args[0], anchor)
		},
	}
	cmd.Flags().StringVar(&anchorFlag, "anchor", "", "SEQ:HASH of a record the log must still hold, from an earlier verify")
	cmd.Flags().StringVar(&pubkey, "pubkey", "", "PEM public key of gate-control's audit key: check the signed checkpoints")
	cmd.Flags().BoolVar(&allowTail, "allow-unsigned-tail", false, "with --pubkey, exit 0 despite records after the last checkpoint (still reported as unsigned)")
	cmd.Flags().BoolVar(&acceptAdopted, "accept-adopted", false, "with --pubkey, exit 0 despite records gate-control signed as adopted at a start (still reported as adopted)")
	return cmd
}

// runAuditVerifySigned is verify with --pubkey.
func runAuditVerifySigned(g *globals, file string, pub ed25519.PublicKey, anchor *audit.Anchor, allowTail, acceptAdopted bool) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := audit.VerifySigned(f, pub)
	if err != nil {
		return badLog(file, err)
	}
	if anchor != nil {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := audit.VerifyAgainst(f, *anchor); err != nil {
			return badLog(file, err)
		}
	}
	if rep.Signed == 0 {
		fmt.Fprintf(g.stdout, "%s: chain ok, %d records; no checkpoint signed by key %s\n", file, rep.Records, audit.KeyID(pub))
	} else {
		fmt.Fprintf(g.stdout, "%s: ok, %d records; records 1-%d signed by key %s in %d checkpoints; anchor %d:%s\n",
			file, rep.Records, rep.Signed, audit.KeyID(pub), rep.Checkpoints, rep.Head.Seq, rep.Head.Hash)
	}
	var adopted []string
	for _, a := range rep.Adopted {
		fmt.Fprintf(g.stdout, "%s: records %s were found unsigned by gate-control when it started (a crash, or writes while it was stopped), and signed as adopted\n", file, seqRange(a))
		adopted = append(adopted, seqRange(a))
	}
	var errs []error
	if len(adopted) > 0 && !acceptAdopted {
		errs = append(errs, fmt.Errorf("%s: adopted records %s: signed, not vouched for; check them, then pass --accept-adopted", file, strings.Join(adopted, ", ")))
	}
	if rep.Tail.Len() > 0 {
		tail := fmt.Errorf("%s: unsigned tail: records %s follow the last checkpoint; no signature covers them", file, seqRange(rep.Tail))
		if allowTail {
			fmt.Fprintln(g.stdout, tail)
		} else {
			errs = append(errs, tail)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &ExitError{Code: ExitNotReady, Err: err}
	}
	return nil
}

func seqRange(r audit.Range) string {
	if r.From == r.To {
		return strconv.FormatUint(r.From, 10)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// parseAnchor parses SEQ:HASH.
func parseAnchor(s string) (audit.Anchor, error) {
	seq, hash, ok := strings.Cut(s, ":")
	if !ok {
		return audit.Anchor{}, fmt.Errorf("%q is not SEQ:HASH", s)
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return audit.Anchor{}, fmt.Errorf("%q is not SEQ:HASH: bad sequence number", s)
	}
	if len(hash) != len(audit.Genesis) {
		return audit.Anchor{}, fmt.Errorf("%q is not SEQ:HASH: the hash is not 64 hex digits", s)
	}
	return audit.Anchor{Seq: n, Hash: hash}, nil
}

func runAuditVerify(g *globals, file string, anchor *audit.Anchor) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	rd := audit.NewReader(f)
	n := 0
	for {
		_, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return badLog(file, err)
		}
		n++
		if anchor != nil && rd.Anchor().Seq == anchor.Seq && rd.Anchor().Hash != anchor.Hash {
			break // VerifyAgainst below names it
		}
	}
	if anchor != nil {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := audit.VerifyAgainst(f, *anchor); err != nil {
			return badLog(file, err)
		}
	}
	last := rd.Anchor()
	fmt.Fprintf(g.stdout, "%s: ok, %d records; anchor %d:%s\n", file, n, last.Seq, last.Hash)
	return nil
}

// badLog is the exit-1 error of a log that fails verification: one line
// that names the first bad record.
func badLog(file string, err error) error {
	var ve *audit.VerifyError
	if errors.As(err, &ve) {
		return &ExitError{Code: ExitNotReady, Err: fmt.Errorf("%s is not intact: %w", file, err)}
	}
	return err
}

func newCmdAuditTail(g *globals) *cobra.Command {
	var n int
	var follow bool
	cmd := &cobra.Command{
		Use:   "tail FILE",
		Short: "Print the last records of an audit log, one line each",
		Long: `tail checks the log's chain as it reads it and prints the last -n records,
one line each, with strings from requesters quoted. With --follow it keeps
printing records as gate-control appends them, until interrupted. A bad record
stops it with exit 1, after the good records before it.`,
		Example: `  codegenie audit tail /var/lib/codegenie/audit.log
  codegenie audit tail -n 100 --follow /var/lib/codegenie/audit.log`,
		Args: exactArgs(1, "exactly one FILE, the audit log"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return usageErr("-n must not be negative")
			}
			return runAuditTail(cmd.Context(), g, args[0], n, follow)
		},
	}
	cmd.Flags().IntVarP(&n, "lines", "n", 10, "how many of the last records to print")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing records as they are appended")
	return cmd
}

func runAuditTail(ctx context.Context, g *globals, file string, n int, follow bool) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var ring []audit.Record
	caughtUp := false
	flush := func() error {
		for _, r := range ring {
			if err := audit.Format(g.stdout, r); err != nil {
				return err
			}
		}
		ring = nil
		caughtUp = true
		return nil
	}
	var src io.Reader = f
	var fr *followReader
	if follow {
		fr = &followReader{done: ctx.Done(), f: f, onIdle: flush}
		src = fr
	}
	rd := audit.NewReader(src)
	for {
		r, err := rd.Next()
		if fr != nil && fr.err != nil {
			return fr.err
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			if follow && ctx.Err() != nil {
				return nil // interrupted in the middle of a line
			}
			return badLog(file, err)
		}
		if caughtUp {
			if err := audit.Format(g.stdout, r); err != nil {
				return err
			}
			continue
		}
		ring = append(ring, r)
		if len(ring) > n {
			ring = ring[1:]
		}
	}
	return flush()
}

// followReader reads a growing file: at its end it waits for more until
// done is closed, and only then reports io.EOF. The first time it reaches the
// end it calls onIdle, on the reading goroutine: by then every complete
// line read so far has been handed to the audit.Reader's caller.
type followReader struct {
	done   <-chan struct{}
	f      *os.File
	onIdle func() error
	idled  bool
	err    error // from onIdle
}

func (r *followReader) Read(p []byte) (int, error) {
	for {
		n, err := r.f.Read(p)
		if n > 0 || !errors.Is(err, io.EOF) {
			return n, err
		}
		if !r.idled {
			r.idled = true
			if r.err = r.onIdle(); r.err != nil {
				return 0, io.EOF
			}
		}
		t := time.NewTimer(followPoll)
		select {
		case <-r.done:
			t.Stop()
			return 0, io.EOF
		case <-t.C:
		}
	}
}
