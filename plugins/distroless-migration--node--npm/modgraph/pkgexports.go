package modgraph

import (
	"encoding/json"
	"strings"
)

// A package.json's "exports" and "imports" map subpaths to files, and
// more than one key may match a subpath: node picks one by a rule, not by
// the keys' order. The walk once took whichever key a Go map gave first,
// so it loaded different files from run to run (groq-sdk 0.19's
// "./_shims/auto/*" and "./*" both match ./_shims/auto/runtime; node
// takes the longer pattern, whose "node" condition loads runtime-node.js
// and the form-data packages behind it).

// conditions are the export conditions node matches when it loads a
// package, in the order the walk tries their targets. node takes the
// first condition of the object that matches, in the file's order, and
// matches require for a require() and import for an import: the walk does
// not tell those apart, so it lists a condition's targets in this order
// and the first file the package holds is the one loaded.
var conditions = []string{"node", "require", "import", "module-sync", "default"}

// exportTargets lists the files an exports (or imports) value maps "." to:
// a string, each element of an array, each of a conditions object's
// matching conditions.
func exportTargets(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil // null: the subpath is not exported
		}
		return []string{s}
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		var out []string
		for _, a := range arr {
			out = append(out, exportTargets(a)...)
		}
		return out
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	if dot, ok := obj["."]; ok {
		return exportTargets(dot)
	}
	var out []string
	for _, k := range conditions {
		if v, ok := obj[k]; ok {
			out = append(out, exportTargets(v)...)
		}
	}
	return out
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
