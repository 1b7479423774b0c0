// Package nodeproject is the node_project probe: it reads package.json and
// reports the facts later probes build on: the package name, engines.node,
// scripts, dependencies, bin entries and which lockfile the repository
// uses. It reads files only.
package nodeproject

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
)

// Name is the probe's name.
const Name = "node_project"

// Reasons this probe gives for low confidence.
const (
	ReasonInvalidPackageJSON probe.Reason = "invalid_package_json"
)

// Warning IDs.
const (
	WarnInvalidPackageJSON = "node_project.invalid_package_json"
	WarnMissingPackageJSON = "node_project.missing_package_json"
	WarnMultipleLockfiles  = "node_project.multiple_lockfiles"
)

// Warnings are the warnings this probe raises.
var Warnings = []probe.WarningDesc{
	{ID: WarnInvalidPackageJSON, Summary: "package.json is not valid JSON or has fields of the wrong type"},
	{ID: WarnMissingPackageJSON, Summary: "the repository has no package.json at its root"},
	{ID: WarnMultipleLockfiles, Summary: "more than one package manager lockfile is present; the package manager is ambiguous"},
}

// Lockfiles maps each lockfile name to its package manager, in the order
// package managers are preferred when several are present.
var lockfiles = []struct{ file, kind string }{
	{"package-lock.json", "npm"},
	{"npm-shrinkwrap.json", "npm"},
	{"yarn.lock", "yarn"},
	{"pnpm-lock.yaml", "pnpm"},
}

// Facts are the node_project facts.
type Facts struct {
	Present         bool              `json:"present"`
	Name            string            `json:"name,omitempty"`
	Version         string            `json:"version,omitempty"`
	Main            string            `json:"main,omitempty"`
	Type            string            `json:"type,omitempty"`
	PackageManager  string            `json:"package_manager,omitempty"` // the packageManager field (corepack)
	EnginesNode     string            `json:"engines_node,omitempty"`
	Scripts         map[string]string `json:"scripts,omitempty"`
	Dependencies    []Dependency      `json:"dependencies,omitempty"`
	DevDependencies []Dependency      `json:"dev_dependencies,omitempty"`
	Bin             []Bin             `json:"bin,omitempty"`
	// Lockfile is npm, yarn or pnpm, or empty when there is none.
	Lockfile  string   `json:"lockfile,omitempty"`
	Lockfiles []string `json:"lockfiles,omitempty"`
}

// Dependency is one declared dependency.
type Dependency struct {
	Name  string `json:"name"`
	Range string `json:"range"`
}

// Bin is one executable the package declares.
type Bin struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Probe is the node_project probe.
type Probe struct{}

// New returns the probe.
func New() *Probe { return &Probe{} }

var _ probe.Probe = (*Probe)(nil)

// Desc describes the probe.
func (*Probe) Desc() probe.Desc {
	inputs := []string{"package.json"}
	for _, l := range lockfiles {
		inputs = append(inputs, l.file)
	}
	return probe.Desc{
		Name:           Name,
		Version:        "1",
		Heaviness:      probe.Light,
		CacheStrategy:  probe.CacheContent,
		DeclaredInputs: inputs,
		NewFacts:       func() any { return new(Facts) },
	}
}

// Run reads package.json and the lockfiles' presence.
func (*Probe) Run(_ context.Context, repo *probe.Repo, _ *probe.Context) (probe.Output, error) {
	facts := &Facts{}
	for _, l := range lockfiles {
		if repo.Exists(l.file) {
			facts.Lockfiles = append(facts.Lockfiles, l.file)
			if facts.Lockfile == "" {
				facts.Lockfile = l.kind
			}
		}
	}
	out := probe.Output{Confidence: probe.High, Facts: facts}
	if len(facts.Lockfiles) > 1 {
		out.Warnings = append(out.Warnings, probe.Warning{
			ID:      WarnMultipleLockfiles,
			Message: fmt.Sprintf("lockfiles %s are all present; assuming %s", strings.Join(facts.Lockfiles, ", "), facts.Lockfile),
		})
	}
	data, err := repo.ReadFile("package.json")
	if errors.Is(err, fs.ErrNotExist) {
		out.Warnings = append(out.Warnings, probe.Warning{ID: WarnMissingPackageJSON, Message: "no package.json at the repository root"})
		return out, nil
	}
	if err != nil {
		return probe.Output{}, fmt.Errorf("reading package.json: %w", err)
	}
	facts.Present = true
	if err := Parse(data, facts); err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			return probe.Output{}, err
		}
		ev := probe.Evidence{File: "package.json", Line: pe.Line, Column: pe.Column}
		return probe.Output{
			Confidence: probe.Low,
			Reason:     ReasonInvalidPackageJSON,
			Detail:     pe.Error(),
			Facts:      &Facts{Present: true, Lockfile: facts.Lockfile, Lockfiles: facts.Lockfiles},
			Warnings:   append(out.Warnings, probe.Warning{ID: WarnInvalidPackageJSON, Message: pe.Error(), Evidence: []probe.Evidence{ev}}),
			Evidence:   []probe.Evidence{ev},
		}, nil
	}
	out.Evidence = []probe.Evidence{{File: "package.json", Line: 1}}
	return out, nil
}

// ParseError locates a problem in package.json.
type ParseError struct {
	Line, Column int
	Msg          string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("package.json:%d:%d: %s", e.Line, e.Column, e.Msg)
}

type packageJSON struct {
	Name            string            `json:"name"`
	Version         string            `json:"version"`
	Main            string            `json:"main"`
	Type            string            `json:"type"`
	PackageManager  string            `json:"packageManager"`
	Engines         map[string]string `json:"engines"`
	Scripts         map[string]string `json:"scripts"`
	Dependencies    map[string]string `json:"dependencies"`
	DevDependencies map[string]string `json:"devDependencies"`
	Bin             json.RawMessage   `json:"bin"`
}

// Parse decodes package.json data into facts. Unknown fields are fine
// (package.json has many); fields this probe reads must have the right
// type. Errors are *ParseError with a 1-based line and column.
func Parse(data []byte, facts *Facts) error {
	var pj packageJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&pj); err != nil {
		return locate(data, err)
	}
	if _, err := dec.Token(); err == nil {
		return locateOffset(data, dec.InputOffset(), "unexpected data after the top-level value")
	}
	facts.Name, facts.Version, facts.Main, facts.Type = pj.Name, pj.Version, pj.Main, pj.Type
	facts.PackageManager = pj.PackageManager
	facts.EnginesNode = pj.Engines["node"]
	if len(pj.Scripts) > 0 {
		facts.Scripts = pj.Scripts
	}
	facts.Dependencies = deps(pj.Dependencies)
	facts.DevDependencies = deps(pj.DevDependencies)
	bins, err := parseBin(pj.Name, pj.Bin)
	if err != nil {
		return locateOffset(data, fieldOffset(data, "bin"), err.Error())
	}
	facts.Bin = bins
	return nil
}

func deps(m map[string]string) []Dependency {
	if len(m) == 0 {
		return nil
	}
	ds := make([]Dependency, 0, len(m))
	for n, r := range m {
		ds = append(ds, Dependency{Name: n, Range: r})
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
	return ds
}

// parseBin reads the bin field: a string (named after the package, without
// its scope) or an object of name → path.
func parseBin(pkg string, raw json.RawMessage) ([]Bin, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var single string
	if err := json.Unmarshal(raw, &single); err == nil {
		if pkg == "" {
			return nil, errors.New(`"bin" is a string but the package has no name`)
		}
		return []Bin{{Name: path.Base(pkg), Path: single}}, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New(`"bin" must be a string or an object of strings`)
	}
	bins := make([]Bin, 0, len(m))
	for n, p := range m {
		bins = append(bins, Bin{Name: n, Path: p})
	}
	sort.Slice(bins, func(i, j int) bool { return bins[i].Name < bins[j].Name })
	return bins, nil
}

func locate(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	// The decoder's offsets are just past the byte it choked on; point at
	// that byte instead.
	case errors.As(err, &se):
		return locateOffset(data, se.Offset-1, se.Error())
	case errors.As(err, &te):
		return locateOffset(data, te.Offset-1, fmt.Sprintf("field %q: expected %s, found JSON %s", te.Field, te.Type, te.Value))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return locateOffset(data, int64(len(data)), "unexpected end of JSON input")
	}
	return locateOffset(data, 0, err.Error())
}

// locateOffset converts a byte offset to a 1-based line and column.
func locateOffset(data []byte, off int64, msg string) *ParseError {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return &ParseError{Line: line, Column: col, Msg: msg}
}

// fieldOffset finds the offset of a top-level key's value, for locating
// errors that the decoder cannot place; 0 when it cannot be found.
func fieldOffset(data []byte, key string) int64 {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0
		}
		if k, _ := t.(string); k == key {
			off := dec.InputOffset()
			for off < int64(len(data)) && strings.ContainsRune(" \t\r\n:", rune(data[off])) {
				off++
			}
			return off
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0
		}
	}
	return 0
}

// ScriptLines returns the 1-based line of each key of package.json's
// top-level "scripts" object, for evidence. It returns what it found before
// any syntax error.
func ScriptLines(data []byte) map[string]int {
	lines := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return lines
	}
	lineAt := func(off int64) int { return bytes.Count(data[:off], []byte("\n")) + 1 }
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return lines
		}
		if k, _ := t.(string); k != "scripts" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return lines
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return lines
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return lines
			}
			name, _ := t.(string)
			lines[name] = lineAt(dec.InputOffset())
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return lines
			}
		}
		return lines
	}
	return lines
}
