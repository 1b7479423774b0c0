package shellcmd

import (
	"path"
	"regexp"
	"strings"
)

// Grep is a grep that a health check pipes its request's output into
// ("curl -fs URL | grep -q ok"): it exits 0 when a line of what it reads
// matches, and that is the line's status.
type Grep struct {
	// Argv is the grep command as written.
	Argv []string `json:"argv"`
	// Regexp matches a line as the pattern does, in the syntax that Go's
	// regexp and JavaScript's RegExp read alike (a fixed string quoted,
	// and only ".", ".*", a leading "^" and a trailing "$" kept as
	// operators); IgnoreCase is -i.
	Regexp     string `json:"regexp"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
}

// grepFlags are grep's options that take no value and change nothing a
// check's status depends on (output only), or that ParseGrep reads.
var grepFlags = map[string]string{
	"-q": "", "--quiet": "", "--silent": "", "-s": "", "--no-messages": "",
	"-i": "i", "--ignore-case": "i", "-y": "i",
	"-F": "F", "--fixed-strings": "F", "-G": "G", "--basic-regexp": "G", "-E": "E", "--extended-regexp": "E",
	"-x": "x", "--line-regexp": "x",
	"-c": "", "--count": "", "-o": "", "--only-matching": "", "-n": "", "--line-number": "",
	"-a": "", "--text": "", "-H": "", "-h": "", "--no-filename": "", "--color=never": "", "--colour=never": "",
}

// ParseGrep reads a grep that reads its standard input with one pattern
// ParseGrep can carry. ok is false, with why, for anything else: a file
// operand, an inverted or word match, several patterns, a bracket
// expression or repetition other than ".*".
func ParseGrep(argv []string) (g Grep, why string, ok bool) {
	if len(argv) == 0 {
		return g, "the pipe feeds no command", false
	}
	mode := map[string]bool{}
	switch path.Base(argv[0]) {
	case "grep":
	case "egrep":
		mode["E"] = true
	case "fgrep":
		mode["F"] = true
	default:
		return g, "the pipe feeds " + argv[0] + ", not grep", false
	}
	var pattern *string
	var operands []string
	set := func(p string) bool {
		if pattern != nil {
			return false
		}
		pattern = &p
		return true
	}
	args := argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case a == "-e" || a == "--regexp":
			if i+1 == len(args) {
				return g, "grep " + a + " names no pattern", false
			}
			if !set(args[i+1]) {
				return g, "grep has more than one pattern", false
			}
			i++
		case strings.HasPrefix(a, "--regexp="):
			if !set(strings.TrimPrefix(a, "--regexp=")) {
				return g, "grep has more than one pattern", false
			}
		case strings.HasPrefix(a, "--"):
			m, known := grepFlags[a]
			if !known {
				return g, "grep " + a + " changes what matches, or is not known to codegenie", false
			}
			mode[m] = true
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// Combined short options: -qi, -qF, -qe PATTERN.
			for j := 1; j < len(a); j++ {
				o := "-" + a[j:j+1]
				if o == "-e" {
					p := a[j+1:]
					if p == "" {
						if i+1 == len(args) {
							return g, "grep -e names no pattern", false
						}
						i++
						p = args[i]
					}
					if !set(p) {
						return g, "grep has more than one pattern", false
					}
					break
				}
				m, known := grepFlags[o]
				if !known {
					return g, "grep " + o + " changes what matches, or is not known to codegenie", false
				}
				mode[m] = true
			}
		default:
			operands = append(operands, a)
		}
	}
	if pattern == nil {
		if len(operands) == 0 {
			return g, "grep names no pattern", false
		}
		pattern, operands = &operands[0], operands[1:]
	}
	if len(operands) > 0 {
		return g, "grep reads " + operands[0] + ", not the request's output", false
	}
	if strings.Contains(*pattern, "\n") {
		return g, "the grep pattern holds a newline, which makes it several patterns", false
	}
	var re string
	if mode["F"] {
		re = regexp.QuoteMeta(*pattern)
	} else {
		var why string
		if re, why = carryPattern(*pattern, mode["E"]); why != "" {
			return g, why, false
		}
	}
	if mode["x"] {
		re = "^(?:" + re + ")$"
	}
	return Grep{Argv: argv, Regexp: re, IgnoreCase: mode["i"]}, "", true
}

// carryPattern rewrites a basic or extended grep pattern into the common
// syntax of Go's and JavaScript's regular expressions. It carries
// literal text, ".", ".*", a leading "^" and a trailing "$", and an
// extended pattern's alternatives of those; anything else that is an
// operator in the pattern's syntax is refused.
func carryPattern(p string, extended bool) (string, string) {
	if extended && strings.Contains(p, "|") && !strings.Contains(p, `\`) {
		// Alternatives (pass|ok|up): a line matches when one of them
		// matches, in grep -E as in Go and JavaScript, and each carries
		// its own anchors; each is carried on its own.
		var alts []string
		for _, a := range strings.Split(p, "|") {
			if a == "" {
				return "", "the grep pattern " + quoteForWhy(p) + " has an empty alternative, which a generated check does not carry"
			}
			re, why := carryPattern(a, true)
			if why != "" {
				return "", why
			}
			alts = append(alts, re)
		}
		return strings.Join(alts, "|"), ""
	}
	var b strings.Builder
	rest := p
	if strings.HasPrefix(rest, "^") {
		b.WriteString("^")
		rest = rest[1:]
	}
	end := ""
	if strings.HasSuffix(rest, "$") && !strings.HasSuffix(rest, `\$`) {
		end, rest = "$", rest[:len(rest)-1]
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case c == '.' && i+1 < len(rest) && rest[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '.':
			b.WriteString(".")
		case c == '\\' && i+1 < len(rest) && strings.IndexByte(`.*[]^$\/`, rest[i+1]) >= 0:
			// An escaped operator is the character itself.
			b.WriteString(regexp.QuoteMeta(rest[i+1 : i+2]))
			i++
		case c == '\\', c == '[', c == '*', c == '^', c == '$',
			extended && strings.IndexByte("+?|(){}", c) >= 0:
			return "", "the grep pattern " + quoteForWhy(p) + " uses " + string(c) + ", which a generated check does not carry"
		default:
			// A byte of the pattern as it is: the bytes of a UTF-8
			// character stay together, and only ASCII is quoted.
			b.WriteString(regexp.QuoteMeta(rest[i : i+1]))
		}
	}
	b.WriteString(end)
	return b.String(), ""
}

func quoteForWhy(s string) string { return `"` + s + `"` }
