package recipe

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/codegenie/codegenie/internal/udiff"
)

// edit replaces lines [from, to] (1-based, inclusive) of the original
// bytes with text; from == to+1 inserts text before line from. text ends
// with a newline unless it is empty.
type edit struct {
	from, to int
	text     string
}

// lines splits data into lines that keep their newline.
func lines(data []byte) [][]byte {
	var out [][]byte
	for _, l := range udiff.Lines(data) {
		out = append(out, []byte(l))
	}
	return out
}

// apply makes the edits on data. Edits must not overlap; insertions at the
// same place keep their order.
func apply(data []byte, edits []edit) ([]byte, error) {
	ls := lines(data)
	if n := len(ls); n > 0 && !bytes.HasSuffix(ls[n-1], []byte("\n")) {
		ls[n-1] = append(append([]byte{}, ls[n-1]...), '\n')
	}
	sorted := append([]edit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].from != sorted[j].from {
			return sorted[i].from < sorted[j].from
		}
		// Insertions before the replacement of the same line.
		return sorted[i].to < sorted[i].from && sorted[j].to >= sorted[j].from
	})
	var out bytes.Buffer
	next := 1 // the next original line to copy
	for _, e := range sorted {
		if e.from < next || e.to > len(ls) || e.to < e.from-1 {
			return nil, fmt.Errorf("recipe: edit of lines %d-%d overlaps another or leaves the file (%d lines)", e.from, e.to, len(ls))
		}
		for ; next < e.from; next++ {
			out.Write(ls[next-1])
		}
		out.WriteString(e.text)
		if e.to >= next {
			next = e.to + 1
		}
	}
	for ; next <= len(ls); next++ {
		out.Write(ls[next-1])
	}
	return out.Bytes(), nil
}
