package audit

import (
	"io"
	"strconv"
	"strings"
	"time"
)

// Format writes r to w as one line for people, ending in a newline: the
// time, the seq, the event, then the fields that are set. Strings that came
// from requesters are quoted when they hold anything but plain printable
// characters, so a record cannot forge extra lines or terminal escapes.
func Format(w io.Writer, r Record) error {
	var b strings.Builder
	b.WriteString(r.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	b.WriteString(" #")
	b.WriteString(strconv.FormatUint(r.Seq, 10))
	b.WriteByte(' ')
	b.WriteString(r.Event.String())
	field := func(name, value string) {
		if value == "" {
			return
		}
		b.WriteByte(' ')
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(quote(value))
	}
	field("role", r.Role)
	field("spawn", r.SpawnID)
	field("backend", r.Backend)
	field("key", r.KeyID)
	field("peer", r.Peer)
	if r.Count != 0 {
		b.WriteString(" count=")
		b.WriteString(strconv.FormatUint(r.Count, 10))
	}
	if !r.Since.IsZero() {
		b.WriteString(" since=")
		b.WriteString(r.Since.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	}
	if r.BodyBytes != 0 || r.BodyDigest != "" {
		b.WriteString(" body=")
		b.WriteString(strconv.FormatInt(r.BodyBytes, 10))
		b.WriteString("B")
		if r.BodyDigest != "" {
			b.WriteByte(',')
			b.WriteString(quote(r.BodyDigest))
		}
	}
	if r.Exit != nil {
		b.WriteString(" exit=")
		b.WriteString(strconv.Itoa(*r.Exit))
	}
	if r.DurationMS != 0 {
		b.WriteString(" duration=")
		b.WriteString((time.Duration(r.DurationMS) * time.Millisecond).String())
	}
	if t := r.Trace; t != nil {
		b.WriteString(" trace=events:")
		b.WriteString(strconv.Itoa(t.Events))
		b.WriteString(",shells:")
		b.WriteString(strconv.Itoa(t.Shells))
		if t.Dropped != 0 {
			b.WriteString(",dropped:")
			b.WriteString(strconv.FormatUint(t.Dropped, 10))
		}
		if t.Complete {
			b.WriteString(",complete")
		} else {
			b.WriteString(",incomplete")
		}
	}
	if r.Argv != nil {
		b.WriteString(" argv=[")
		for i, a := range r.Argv {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(quote(a))
		}
		b.WriteByte(']')
	}
	field("reason", r.Reason)
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// quote returns s as it is when it is non-empty and made only of
// characters that cannot be confused with the line's syntax, and as a Go
// quoted string otherwise.
func quote(s string) string {
	if s == "" {
		return `""`
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		plain := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("-_./:@+%,", c) >= 0
		if !plain {
			return strconv.Quote(s)
		}
	}
	return s
}
