package portfolio

import "strings"

// Redact removes the userinfo (user, password, token) of every URL in s:
// "https://x-access-token:TOKEN@host/o/r.git" becomes
// "https://host/o/r.git", in a bare URL or in a message that quotes one.
// Everything the portfolio stores or shows passes through it: a
// service's repository, clone errors (git's own output included), the
// report and the progress lines. scp-like "git@host:path" is left alone:
// its user is not a secret. Redact is idempotent.
func Redact(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		start := i + len("://")
		b.WriteString(s[:start])
		s = s[start:]
		if i == 0 || !isSchemeChar(b.String()[b.Len()-len("://")-1]) {
			continue
		}
		// The authority ends at the path, query or fragment, or where a
		// quoted or spaced URL does.
		end := strings.IndexFunc(s, func(r rune) bool {
			return r == '/' || r == '?' || r == '#' || r == '\'' || r == '"' || r == '`' || r == '<' || r == '>' ||
				r == ' ' || r == '\t' || r == '\n' || r == '\r'
		})
		if end < 0 {
			end = len(s)
		}
		if at := strings.LastIndex(s[:end], "@"); at >= 0 {
			s = s[at+1:]
		}
	}
	b.WriteString(s)
	return b.String()
}

func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}
