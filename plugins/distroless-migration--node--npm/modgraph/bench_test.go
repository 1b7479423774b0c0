package modgraph

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkScan reads 2,000 modules' worth of typical CommonJS and ESM
// text: mostly code that loads nothing, with a few loads each. Compare two
// revisions with benchstat.
func BenchmarkScan(b *testing.B) {
	var sb strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&sb, "'use strict';\nconst dep%d = require('dep-%d');\nimport { a%d } from './local-%d.js';\n", i, i, i, i)
		sb.WriteString("/** Re-export the helpers, see https://example.com/docs */\n")
		for j := range 10 {
			fmt.Fprintf(&sb, "function helper%d_%d(value, options = {}) {\n  if (!value) { return options.fallback ?? null; }\n  const out = [];\n  for (const item of value.items) { out.push(String(item).trim()); }\n  return out.join(';');\n}\n", i, j)
		}
		fmt.Fprintf(&sb, "function lazy%d() {\n  return require(name + '%d');\n}\nexport * from './more-%d';\n", i, i, i)
	}
	src := []byte(sb.String())
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Scan(src)
	}
}
