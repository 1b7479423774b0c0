package shellcmd

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// EnvPart is a piece of a word that the shell builds from the
// environment: literal Text, or the variable Env ($PORT, ${PORT},
// ${PORT:-3000}), whose value is Default when it is unset, or also when
// it is empty with Colon (":-").
type EnvPart struct {
	Text    string `json:"text,omitempty"`
	Env     string `json:"env,omitempty"`
	Default string `json:"default,omitempty"`
	Colon   bool   `json:"colon,omitempty"`
}

// EnvWord is a word of a check line built from the environment: Index is
// its place in CheckLine.Argv.
type EnvWord struct {
	Index int       `json:"index"`
	Parts []EnvPart `json:"parts"`
}

// Resolve is the word's value with env's variables (the image's ENV), and
// the defaults for the others.
func (w EnvWord) Resolve(env map[string]string) string {
	s, _ := resolveParts(w.Parts, env)
	return s
}

// resolveParts is parts' value with env's variables, and the defaults for
// the others; known is false when a variable has neither a value nor a
// default (it then adds nothing).
func resolveParts(parts []EnvPart, env map[string]string) (s string, known bool) {
	known = true
	var b strings.Builder
	for _, p := range parts {
		if p.Env == "" {
			b.WriteString(p.Text)
			continue
		}
		v, set := env[p.Env]
		if !set || p.Colon && v == "" {
			v = p.Default
			known = known && v != ""
		}
		b.WriteString(v)
	}
	return b.String(), known
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envWord reads a word whose only expansions are variables, with at most a
// literal default ($PORT, "${PORT:-3000}"): nothing else (a command
// substitution, a glob, ${#x}, ${x/a/b}) is carried. An unquoted variable
// is split into fields by the shell; the word is carried as one argument,
// which a port or a host name is.
func envWord(w *syntax.Word) ([]EnvPart, bool) {
	var parts []EnvPart
	text := func(s string) {
		if n := len(parts); n > 0 && parts[n-1].Env == "" {
			parts[n-1].Text += s
			return
		}
		parts = append(parts, EnvPart{Text: s})
	}
	param := func(pe *syntax.ParamExp) bool {
		if pe.Excl || pe.Length || pe.Width || pe.Index != nil || pe.Slice != nil || pe.Repl != nil || pe.Names != 0 ||
			pe.Param == nil || !envName.MatchString(pe.Param.Value) {
			return false
		}
		p := EnvPart{Env: pe.Param.Value}
		if e := pe.Exp; e != nil {
			if e.Op != syntax.DefaultUnset && e.Op != syntax.DefaultUnsetOrNull {
				return false
			}
			if e.Word != nil {
				d, ok := plainWord(e.Word)
				if !ok {
					return false
				}
				p.Default = d
			}
			p.Colon = e.Op == syntax.DefaultUnsetOrNull
		}
		parts = append(parts, p)
		return true
	}
	expanded := false
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[~") {
				return nil, false
			}
			text(unescape(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return nil, false
			}
			text(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return nil, false
			}
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					text(unescapeQuoted(q.Value))
				case *syntax.ParamExp:
					if !param(q) {
						return nil, false
					}
					expanded = true
				default:
					return nil, false
				}
			}
		case *syntax.ParamExp:
			if !param(p) {
				return nil, false
			}
			expanded = true
		default:
			return nil, false
		}
	}
	return parts, expanded
}
