package modgraph

import "sort"

// Files are the reached files, sorted: every file node loads from the
// entries.
func (g *Graph) Files() []string {
	if g == nil {
		return nil
	}
	out := make([]string, 0, len(g.parent))
	for f := range g.parent {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
