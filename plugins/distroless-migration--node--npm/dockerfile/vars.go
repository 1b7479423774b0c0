package dockerfile

import (
	"sort"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// UnknownVar is a variable an instruction uses whose value the Dockerfile
// does not give, so the words that use it were left as written.
type UnknownVar struct {
	Name string `json:"name"`
	// Why says where the value would come from.
	Why string `json:"why"`
}

// The reasons a variable's value is unknown.
const (
	whyNoDefault  = "an ARG without a default: its value comes from --build-arg at build time, which the Dockerfile does not give"
	whyUndeclared = "declared by no ARG or ENV in this stage (a global ARG is visible in a stage only when the stage declares it again): if set at all, it comes from the base image's ENV"
	whyUnknownDef = "its default uses a variable whose value is unknown"
	whyPlatform   = "set by the builder from the build's platforms"
)

// platformArgs are the ARGs buildkit sets in the global scope from the
// build and target platforms.
var platformArgs = []string{"BUILDPLATFORM", "BUILDOS", "BUILDARCH", "BUILDVARIANT", "TARGETPLATFORM", "TARGETOS", "TARGETARCH", "TARGETVARIANT"}

// scope is the variables a stage's instructions expand, as buildkit keeps
// them: ARG values and ENV values in one environment, where the later one
// wins, inherited by a stage built FROM this one. A name in unknown has no
// value the Dockerfile gives.
type scope struct {
	known   map[string]string
	unknown map[string]string // name → why
}

func newScope() *scope {
	return &scope{known: map[string]string{}, unknown: map[string]string{}}
}

func (s *scope) clone() *scope {
	c := newScope()
	for k, v := range s.known {
		c.known[k] = v
	}
	for k, v := range s.unknown {
		c.unknown[k] = v
	}
	return c
}

func (s *scope) set(k, v string) {
	s.known[k] = v
	delete(s.unknown, k)
}

func (s *scope) setUnknown(k, why string) {
	delete(s.known, k)
	s.unknown[k] = why
}

// Get and Keys make scope a shell.EnvGetter over its known values.
func (s *scope) Get(k string) (string, bool) { v, ok := s.known[k]; return v, ok }

// Keys returns the names of the known values.
func (s *scope) Keys() []string {
	ks := make([]string, 0, len(s.known))
	for k := range s.known {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// why says why a variable's value is unknown.
func (s *scope) why(k string) string {
	if w, ok := s.unknown[k]; ok {
		return w
	}
	return whyUndeclared
}

// expand expands word as buildkit does for COPY, ADD, WORKDIR and ENV.
// ok is false when the result depends on a variable whose value is
// unknown: a bare $VAR or ${VAR} (or a pattern form such as ${VAR%x}) of
// an unset variable. ${VAR:-default} and ${VAR:+x} of one are known: the
// Dockerfile's own default applies when no --build-arg is given, as an
// ARG's default does. The unknown variables are returned.
func (s *scope) expand(lex *shell.Lex, word string, escape rune) (string, []string, bool) {
	if !strings.Contains(word, "$") {
		return word, nil, true
	}
	res, err := lex.ProcessWordWithMatches(word, s)
	if err != nil {
		// ${VAR:?message} of an unset variable, or a malformed word.
		return word, unsetNames(word, escape), false
	}
	if len(res.Unmatched) == 0 {
		return res.Result, nil, true
	}
	var bad []string
	for _, name := range valueRefs(word, escape) {
		if _, unmatched := res.Unmatched[name]; unmatched {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		return word, bad, false
	}
	return res.Result, nil, true
}

// unsetNames lists every variable word names, for a word that did not
// expand.
func unsetNames(word string, escape rune) []string {
	var out []string
	scanRefs(word, escape, func(name string, _ bool) { out = append(out, name) })
	return out
}

// valueRefs lists the variables whose value word uses: $VAR, ${VAR} and
// the forms that transform the value (${VAR%x}, ${VAR#x}, ${VAR/x/y},
// ${VAR:?x}); not ${VAR:-x}, ${VAR-x}, ${VAR:+x} or ${VAR+x}, which use
// only whether it is set.
func valueRefs(word string, escape rune) []string {
	var out []string
	scanRefs(word, escape, func(name string, usesValue bool) {
		if usesValue {
			out = append(out, name)
		}
	})
	return out
}

// scanRefs calls fn for each variable reference of word outside single
// quotes and not escaped.
func scanRefs(word string, escape rune, fn func(name string, usesValue bool)) {
	rs := []rune(word)
	inSingle := false
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == escape && !inSingle:
			i++
			continue
		case r == '\'':
			inSingle = !inSingle
			continue
		case r != '$' || inSingle || i+1 >= len(rs):
			continue
		}
		if rs[i+1] == '{' {
			j := i + 2
			for j < len(rs) && isNameRune(rs[j], j == i+2) {
				j++
			}
			if j == i+2 {
				continue
			}
			name := string(rs[i+2 : j])
			usesValue := true
			if j < len(rs) {
				rest := string(rs[j:])
				for _, op := range []string{":-", ":+", "-", "+"} {
					if strings.HasPrefix(rest, op) {
						usesValue = false
					}
				}
			}
			fn(name, usesValue)
			i = j - 1
			continue
		}
		j := i + 1
		for j < len(rs) && isNameRune(rs[j], j == i+1) {
			j++
		}
		if j > i+1 {
			fn(string(rs[i+1:j]), true)
			i = j - 1
		}
	}
}

func isNameRune(r rune, first bool) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || !first && r >= '0' && r <= '9'
}

// expandInstruction expands the words buildkit expands in c, in scope s,
// into in.Args, and applies the ARG and ENV it sets to s. Words whose
// value is unknown stay as written, and in.Unknown names their variables.
func expandInstruction(lex *shell.Lex, escape rune, s *scope, global *scope, c instructions.Command, in *Instruction) {
	seen := map[string]bool{}
	note := func(names []string) {
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				in.Unknown = append(in.Unknown, UnknownVar{Name: n, Why: s.why(n)})
			}
		}
	}
	switch c := c.(type) {
	case *instructions.CopyCommand, *instructions.AddCommand, *instructions.WorkdirCommand:
		for k, a := range in.Args {
			v, bad, ok := s.expand(lex, a, escape)
			if !ok {
				note(bad)
				continue
			}
			in.Args[k] = v
		}
	case *instructions.EnvCommand:
		// Every value of one ENV expands in the environment before it.
		before := s.clone()
		for k, kv := range c.Env {
			v, bad, ok := before.expand(lex, kv.Value, escape)
			if !ok {
				note(bad)
				s.setUnknown(kv.Key, whyUnknownDef)
				continue
			}
			in.Args[k] = kv.Key + "=" + v
			s.set(kv.Key, v)
		}
	case *instructions.ArgCommand:
		// Each ARG of one instruction sees the ones before it.
		for _, kv := range c.Args {
			switch {
			case kv.Value != nil:
				v, bad, ok := s.expand(lex, *kv.Value, escape)
				if !ok {
					note(bad)
					s.setUnknown(kv.Key, whyUnknownDef)
					continue
				}
				s.set(kv.Key, v)
			case global != nil && hasKnown(global, kv.Key):
				s.set(kv.Key, global.known[kv.Key])
			case global != nil && hasUnknown(global, kv.Key):
				s.setUnknown(kv.Key, global.unknown[kv.Key])
			default:
				if !hasKnown(s, kv.Key) && !hasUnknown(s, kv.Key) {
					// An ENV of the same name keeps its value.
					s.setUnknown(kv.Key, whyNoDefault)
				}
			}
		}
	}
}

func hasKnown(s *scope, k string) bool   { _, ok := s.known[k]; return ok }
func hasUnknown(s *scope, k string) bool { _, ok := s.unknown[k]; return ok }
