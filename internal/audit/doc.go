// Package audit provides gate-control's audit log: an append-only file of
// JSON lines, one Record per state change of a spawn, where every record
// carries the SHA-256 of the previous record's line. Log appends and fsyncs
// records; Reader and Verify check a log and name the first bad record;
// Format prints a record for people.
//
// With WithCheckpoints, Log also signs the chain: every N records and at
// Close it appends an EventCheckpoint record holding an ed25519 signature
// over the count and head hash of the records before it, and VerifySigned
// checks those signatures and reports the records after the last one as
// the unsigned tail. LoadOrCreateKey keeps the signing key in a file.
//
// It does not rotate files or ship them anywhere, and it is not a general
// event bus: gate-control decides what to record.
//
// # Format
//
// Each record is one line: the JSON encoding of Record followed by "\n".
// Unknown fields are an error when decoding. Records are numbered from 1
// (Record.Seq) and each Record.Prev is the lowercase hex SHA-256 of the
// previous record's line bytes, without its newline. The first record's Prev
// is Genesis, 64 zeros. A record's own hash (the next record's Prev) is
// reported by Reader.Anchor and Log.Anchor.
//
// # What the chain detects, and what it does not
//
// Verify detects any edited byte in a record that has a successor (the
// successor's Prev no longer matches), any record deleted or inserted
// before the last one, two records swapped, a line cut short, and unknown
// fields. A chain alone cannot detect:
//
//   - deleting the last records of the log: what remains is a valid, shorter
//     chain;
//   - editing the last record so that it still decodes and keeps its Seq and
//     Prev;
//   - rewriting the whole file: the chain is not keyed, so anyone who can
//     write the file can compute a new, valid chain.
//
// Signed checkpoints catch the last two, and any append: a writer without
// the signing key cannot make a checkpoint that VerifySigned accepts, so
// whatever it appends or edits after the last checkpoint stays in the
// unsigned tail, and whatever it changes before one breaks that
// checkpoint's head. Records that the signer finds after the last
// checkpoint when it opens the log (a crash leaves them; so would writes
// while it was stopped) are signed as Adopted, and reported as such.
//
// Deleting the last records, checkpoints and all, is caught only by
// keeping an Anchor (the sequence number and hash of a record, from
// Log.Anchor) somewhere the log's writer cannot change, and checking the
// log with VerifyAgainst.
//
// # Durability
//
// Append writes each line with a single write(2) on a file opened with
// O_APPEND and fsyncs it before returning. A crash during that write can
// leave a partial last line; Open then refuses the file, naming that line,
// rather than append onto a broken chain. An operator who has inspected it
// can cut the partial line off (a record that was never acknowledged) and
// open the log again.
package audit
