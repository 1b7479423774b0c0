package probe

import (
	"fmt"
	"sort"
	"sync"
)

// Registry holds the probes and the warnings they may raise. It is safe for
// concurrent use. Make one with NewRegistry; builtin.Register fills it.
type Registry struct {
	mu        sync.RWMutex
	probes    map[string]Probe
	warnings  *Warnings
	assessors map[string]Assessor
	selectors map[string]ImageSelector
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{probes: make(map[string]Probe), warnings: new(Warnings), assessors: make(map[string]Assessor), selectors: make(map[string]ImageSelector)}
}

// Warnings returns the registry's warning registry.
func (r *Registry) Warnings() *Warnings { return r.warnings }

// Register adds p. It fails on an invalid descriptor or a duplicate name.
func (r *Registry) Register(p Probe) error {
	if p == nil {
		return fmt.Errorf("registering a nil probe")
	}
	d := p.Desc()
	if err := d.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.probes[d.Name]; dup {
		return fmt.Errorf("probe %s registered twice", d.Name)
	}
	r.probes[d.Name] = p
	return nil
}

// MustRegister is Register for wiring code; it panics on error.
func (r *Registry) MustRegister(ps ...Probe) {
	for _, p := range ps {
		if err := r.Register(p); err != nil {
			panic(err)
		}
	}
}

// Lookup returns the probe named name.
func (r *Registry) Lookup(name string) (Probe, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.probes[name]
	return p, ok
}

// All returns every probe, sorted by name.
func (r *Registry) All() []Probe {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ps := make([]Probe, 0, len(r.probes))
	for _, p := range r.probes {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Desc().Name < ps[j].Desc().Name })
	return ps
}

// RegisterAssessor adds an assessor. It fails on an invalid or duplicate
// name.
func (r *Registry) RegisterAssessor(a Assessor) error {
	if a == nil || !nameRE.MatchString(a.Name()) {
		return fmt.Errorf("assessor name must match %s", nameRE)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.assessors[a.Name()]; dup {
		return fmt.Errorf("assessor %s registered twice", a.Name())
	}
	r.assessors[a.Name()] = a
	return nil
}

// Assessors returns the assessors for task (all when task is empty),
// sorted by name.
func (r *Registry) Assessors(task string) []Assessor {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var as []Assessor
	for _, a := range r.assessors {
		if task == "" || a.Task() == task {
			as = append(as, a)
		}
	}
	sort.Slice(as, func(i, j int) bool { return as[i].Name() < as[j].Name() })
	return as
}

// RegisterImageSelector sets the image selector of task. It fails on a
// second selector for the same task.
func (r *Registry) RegisterImageSelector(task string, s ImageSelector) error {
	if s == nil {
		return fmt.Errorf("registering a nil image selector for %q", task)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.selectors[task]; dup {
		return fmt.Errorf("image selector for task %q registered twice", task)
	}
	r.selectors[task] = s
	return nil
}

// ImageSelector returns task's image selector, if it has one.
func (r *Registry) ImageSelector(task string) (ImageSelector, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.selectors[task]
	return s, ok
}
