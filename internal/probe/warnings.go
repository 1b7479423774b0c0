package probe

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// WarningIDPattern is the form every warning ID takes: probe.snake_case.
var WarningIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`)

// WarningDesc describes one registered warning.
type WarningDesc struct {
	ID string `json:"id"`
	// Summary is one line for `codegenie warnings` and SARIF rule text.
	Summary string `json:"summary"`
}

// Warnings is the one registry of warning IDs. It is safe for concurrent
// use. The zero value is ready to use.
type Warnings struct {
	mu   sync.RWMutex
	byID map[string]WarningDesc
}

// Register adds w. It fails on an invalid or duplicate ID, or an empty
// summary.
func (r *Warnings) Register(w WarningDesc) error {
	if !WarningIDPattern.MatchString(w.ID) {
		return fmt.Errorf("warning ID %q does not match %s", w.ID, WarningIDPattern)
	}
	if strings.TrimSpace(w.Summary) == "" || strings.Contains(w.Summary, "\n") {
		return fmt.Errorf("warning %s: the summary must be one non-empty line", w.ID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byID[w.ID]; dup {
		return fmt.Errorf("warning %s registered twice", w.ID)
	}
	if r.byID == nil {
		r.byID = make(map[string]WarningDesc)
	}
	r.byID[w.ID] = w
	return nil
}

// MustRegister is Register for wiring code; it panics on error, like
// database/sql.Register.
func (r *Warnings) MustRegister(ws ...WarningDesc) {
	for _, w := range ws {
		if err := r.Register(w); err != nil {
			panic(err)
		}
	}
}

// Lookup returns the warning registered under id.
func (r *Warnings) Lookup(id string) (WarningDesc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	w, ok := r.byID[id]
	return w, ok
}

// All returns every registered warning, sorted by ID.
func (r *Warnings) All() []WarningDesc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ws := make([]WarningDesc, 0, len(r.byID))
	for _, w := range r.byID {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	return ws
}
