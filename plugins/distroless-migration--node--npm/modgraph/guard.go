package modgraph

import (
	"bytes"
	"context"
	"path"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/jsplatform"
)

// A load that a process.platform test for another system guards is never
// made in a Linux image, so the walk does not follow it:
//
//	switch (process.platform) {
//	case 'darwin': impl = (await import('./getMachineId-darwin.js')).getMachineId; break
//	case 'linux':  impl = (await import('./getMachineId-linux.js')).getMachineId; break
//	}
//
// (@opentelemetry/resources, whose darwin, bsd and win32 modules run
// ioreg, kenv and REG QUERY through a shell). Only files that mention
// "platform" are parsed; one the grammar cannot read without errors keeps
// every load.

// platformWord is the cheap test for a file that may hold a guard.
var platformWord = []byte("platform")

// unguarded returns the loads of file f (source data) that no platform
// guard keeps from running on Linux, and the number it dropped.
func (w *walker) unguarded(ctx context.Context, f string, src *source, imps []Import, dyn []Dynamic) ([]Import, []Dynamic, int) {
	mode, inMode := w.modeFor(f, src.data)
	if len(imps)+len(dyn) == 0 || !bytes.Contains(src.data, platformWord) && !inMode {
		return imps, dyn, 0
	}
	root := src.root(ctx)
	if root == nil {
		return imps, dyn, 0
	}
	text := src.text
	guarded := func(off int) bool {
		n := root.NamedDescendantForPointRange(pointAt(src.data, off), pointAt(src.data, off+1))
		return n != nil && (jsplatform.Guard(n, text) != "" || inMode && jsplatform.GuardWith(n, text, mode.condition) != "")
	}
	keptI, n := unguardedOf(imps, func(i Import) bool { return guarded(i.Offset) })
	keptD, m := unguardedOf(dyn, func(d Dynamic) bool { return guarded(d.Offset) })
	return keptI, keptD, n + m
}

// source is a file being walked, parsed at most once, and only when a
// load in it needs its syntax tree.
type source struct {
	file   string
	data   []byte
	w      *walker
	parsed bool
	tree   *sitter.Tree
}

// root is the file's syntax tree; nil when the grammar cannot read it
// without errors, which keeps every load as the text scan found it.
func (s *source) root(ctx context.Context) *sitter.Node {
	if !s.parsed {
		s.parsed = true
		lang := javascript.GetLanguage()
		switch path.Ext(s.file) {
		case ".ts", ".mts", ".cts":
			lang = typescript.GetLanguage()
		case ".tsx":
			lang = tsx.GetLanguage()
		}
		if s.w.parsers == nil {
			s.w.parsers = map[*sitter.Language]*sitter.Parser{}
		}
		p, ok := s.w.parsers[lang]
		if !ok {
			p = sitter.NewParser()
			p.SetLanguage(lang)
			s.w.parsers[lang] = p
		}
		if tree, err := p.ParseCtx(ctx, nil, s.data); err == nil {
			if tree.RootNode().HasError() {
				tree.Close()
			} else {
				s.tree = tree
			}
		}
	}
	if s.tree == nil {
		return nil
	}
	return s.tree.RootNode()
}

func (s *source) text(n *sitter.Node) string {
	if n == nil {
		return ""
	}
	return n.Content(s.data)
}

// close frees the syntax tree.
func (s *source) close() {
	if s.tree != nil {
		s.tree.Close()
		s.tree = nil
	}
}

// unguardedOf returns the loads that guarded does not hold, in order, and
// how many it dropped.
func unguardedOf[T any](loads []T, guarded func(T) bool) ([]T, int) {
	kept := make([]T, 0, len(loads))
	for _, l := range loads {
		if !guarded(l) {
			kept = append(kept, l)
		}
	}
	return kept, len(loads) - len(kept)
}

// pointAt is the row and byte column of offset off in data.
func pointAt(data []byte, off int) sitter.Point {
	off = min(off, len(data))
	row := bytes.Count(data[:off], []byte{'\n'})
	col := off - (bytes.LastIndexByte(data[:off], '\n') + 1)
	return sitter.Point{Row: uint32(row), Column: uint32(col)}
}
