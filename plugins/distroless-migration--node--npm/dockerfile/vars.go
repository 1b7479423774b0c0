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
// value the Dockerfile gives. A stage's scope lies over its base stage's
// (parent), which it never changes, so a long FROM chain copies nothing.
type scope struct {
	parent  *scope
	known   map[string]string
	unknown map[string]string // name → why
	// below caches what the scopes below this one say of a name, so that
	// each name walks a long FROM chain once.
	below map[string]found
}

// found is what a lookup found of a name.
type found struct {
	val, why     string
	known, found bool
}

func newScope() *scope {
	return &scope{known: map[string]string{}, unknown: map[string]string{}}
}

// child returns a scope that starts as s and changes on its own.
func (s *scope) child() *scope {
	c := newScope()
	c.parent = s
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

// lookup finds k in s or the scopes below it: its value, or why it is
// unknown; found is false when no scope has it.
func (s *scope) lookup(k string) (val, why string, known, ok bool) {
	r := s.find(k)
	return r.val, r.why, r.known, r.found
}

func (s *scope) find(k string) found {
	var walked []*scope
	var r found
	for c := s; c != nil; c = c.parent {
		if v, ok := c.known[k]; ok {
			r = found{val: v, known: true, found: true}
			break
		}
		if w, ok := c.unknown[k]; ok {
			r = found{why: w, found: true}
			break
		}
		if m, ok := c.below[k]; ok {
			r = m
			break
		}
		walked = append(walked, c)
	}
	// A scope's base stages are finished when it is made, so what lies
	// below each walked scope stays as found.
	for _, c := range walked {
		if c.below == nil {
			c.below = map[string]found{}
		}
		c.below[k] = r
	}
	return r
}

// Get makes scope a shell.EnvGetter over its known values.
func (s *scope) Get(k string) (string, bool) {
	v, _, known, _ := s.lookup(k)
	return v, known
}

// Keys returns the names of the known values, sorted.
func (s *scope) Keys() []string {
	seen := map[string]bool{}
	var ks []string
	for c := s; c != nil; c = c.parent {
		for k := range c.known {
			if _, _, known, _ := s.lookup(k); known && !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	sort.Strings(ks)
	return ks
}

// why says why a variable's value is unknown.
func (s *scope) why(k string) string {
	if _, w, known, found := s.lookup(k); found && !known {
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
	return s.process(lex, word, escape)
}

// process is expand for every word, one with no variable too: its quotes
// and escapes are removed as the shell does (USER "node" runs as node).
func (s *scope) process(lex *shell.Lex, word string, escape rune) (string, []string, bool) {
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
	case *instructions.UserCommand:
		// buildkit reads USER as one shell word: quotes removed.
		if v, bad, ok := s.process(lex, in.Args[0], escape); ok {
			in.Args[0] = v
		} else {
			note(bad)
		}
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
		// Every value of one ENV expands in the environment before it:
		// all are expanded before any is set.
		type result struct {
			v  string
			ok bool
		}
		results := make([]result, len(c.Env))
		for k, kv := range c.Env {
			v, bad, ok := s.expand(lex, kv.Value, escape)
			if !ok {
				note(bad)
			}
			results[k] = result{v, ok}
		}
		for k, kv := range c.Env {
			if !results[k].ok {
				s.setUnknown(kv.Key, whyUnknownDef)
				continue
			}
			in.Args[k] = kv.Key + "=" + results[k].v
			s.set(kv.Key, results[k].v)
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
			default:
				gv, gwhy, gknown, gfound := "", "", false, false
				if global != nil {
					gv, gwhy, gknown, gfound = global.lookup(kv.Key)
				}
				switch {
				case gknown:
					s.set(kv.Key, gv)
				case gfound:
					s.setUnknown(kv.Key, gwhy)
				default:
					if _, _, _, found := s.lookup(kv.Key); !found {
						// An ENV of the same name keeps its value.
						s.setUnknown(kv.Key, whyNoDefault)
					}
				}
			}
		}
	}
}
