package shellcmd

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wordValue is the value of a word that involves no expansion, as sh reads
// it: quotes removed, a backslash outside quotes escaping the character
// after it, and a backslash inside double quotes escaping only $, `, ",
// \ and newline (POSIX 2.2.3). ok is false when the word expands (a
// parameter, a command substitution, arithmetic, $'...' or $"..."
// quoting); part is then the first part that does. A glob or tilde in the
// word is left as it is: the caller decides.
func wordValue(w *syntax.Word) (v string, part syntax.WordPart, ok bool) {
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			sb.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", p, false
			}
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", p, false
			}
			for _, q := range p.Parts {
				lit, isLit := q.(*syntax.Lit)
				if !isLit {
					return "", q, false
				}
				sb.WriteString(unescapeQuoted(lit.Value))
			}
		default:
			return "", p, false
		}
	}
	return sb.String(), nil, true
}

// unescape removes the backslashes of an unquoted literal: each escapes
// the character after it, and a backslash-newline is a line continuation,
// which goes altogether.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// unescapeQuoted removes the backslashes of a literal inside double
// quotes, where a backslash escapes only $, `, ", \ and newline and is
// otherwise an ordinary character.
func unescapeQuoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}
