package modgraph

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// A package.json's "exports" and "imports" map subpaths to files, and
// more than one key may match a subpath: node picks one by a rule, not by
// the keys' order. The walk once took whichever key a Go map gave first,
// so it loaded different files from run to run (groq-sdk 0.19's
// "./_shims/auto/*" and "./*" both match ./_shims/auto/runtime; node
// takes the longer pattern, whose "node" condition loads runtime-node.js
// and the form-data packages behind it).

// loadModes are the conditions node matches when it loads a package: for
// a require(), then for an import. The walk does not tell the two loads
// apart, so it lists the target each would take, the require's first.
// module-sync is matched by both on node 22.10 and later.
var loadModes = [][]string{
	{"node", "require", "module-sync", "default"},
	{"node", "import", "module-sync", "default"},
}

// exportTargets lists the files an exports (or imports) value maps "." to,
// for each load mode the target node takes (conditionTargets).
func exportTargets(raw json.RawMessage) []string {
	var out []string
	for _, mode := range loadModes {
		ts, _ := conditionTargets(raw, mode)
		for _, t := range ts {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// conditionTargets resolves a target as node does for the conditions
// conds: a string is the file; null exports nothing; an array lists its
// fallbacks; a conditions object takes the first key, in the file's
// order, that conds holds and whose value resolves, so a "default" before
// "node" wins over it (a key order the walk once ignored). matched is
// false when no condition matched, and node tries the next key of the
// object around it.
func conditionTargets(raw json.RawMessage, conds []string) (targets []string, matched bool) {
	var s *string
	if json.Unmarshal(raw, &s) == nil {
		if s == nil || *s == "" {
			return nil, true // null: the subpath is not exported
		}
		return []string{*s}, true
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		for _, a := range arr {
			ts, ok := conditionTargets(a, conds)
			matched = matched || ok
			targets = append(targets, ts...)
		}
		return targets, matched
	}
	keys, obj := orderedObject(raw)
	if dot, ok := obj["."]; ok {
		return conditionTargets(dot, conds)
	}
	for _, k := range keys {
		if !slices.Contains(conds, k) {
			continue
		}
		if ts, ok := conditionTargets(obj[k], conds); ok {
			return ts, true
		}
	}
	return nil, false
}

// orderedObject decodes a JSON object with its keys in the file's order
// (a Go map forgets it). Anything else gives no keys.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil
	}
	var keys []string
	obj := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, nil
		}
		if _, dup := obj[k]; !dup {
			keys = append(keys, k)
		}
		obj[k] = v
	}
	return keys, obj
}

// subpathTargets lists the files a subpath map (exports, or imports)
// gives for sub ("./x/y", "#x"), as node matches it: the key equal to sub,
// else the pattern key with the longest part before its "*" (then the
// longest key) whose parts sub starts and ends with, its targets with the
// "*" replaced by what sub has in its place.
func subpathTargets(raw json.RawMessage, sub string) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	if v, ok := obj[sub]; ok && !strings.Contains(sub, "*") && !strings.HasSuffix(sub, "/") {
		return exportTargets(v)
	}
	// At most one key wins: two that tie on both lengths and match the
	// same subpath are the same key.
	best, star := "", ""
	for key := range obj {
		base, trailer, isPattern := strings.Cut(key, "*")
		if !isPattern || strings.Contains(trailer, "*") || !strings.HasPrefix(sub, base) ||
			len(sub) < len(key) || !strings.HasSuffix(sub, trailer) {
			continue
		}
		if best == "" || patternBefore(key, best) {
			best, star = key, sub[len(base):len(sub)-len(trailer)]
		}
	}
	if best == "" {
		return nil
	}
	var out []string
	for _, t := range exportTargets(obj[best]) {
		out = append(out, strings.ReplaceAll(t, "*", star))
	}
	return out
}

// patternBefore reports whether pattern key a wins over b: a longer part
// before the "*", else a longer key (node's PATTERN_KEY_COMPARE).
func patternBefore(a, b string) bool {
	ba, bb := strings.Index(a, "*"), strings.Index(b, "*")
	if ba != bb {
		return ba > bb
	}
	return len(a) > len(b)
}
