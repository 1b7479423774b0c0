package readiness

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
)

// Fallback is a child_process call in an npm package that is known not to
// run, or not to fail, on a distroless image: a last resort after checks
// that answer there (detect-libc asks the shell for the libc only when
// process.report does not tell). Such a call blocks nothing; readiness
// notes it. Source and Says say where that is shown.
//
// An entry with RunsWhen is an opt-in instead: the call runs only when the
// deployment's configuration (a credentials file that names a command, an
// environment variable that allows it) or the app's own code (a
// sendmail: true transport) turns it on. It blocks when the image's ENV
// sets one of EnabledBy; otherwise readiness notes it with its condition,
// for the reader to check against the app and its deployment.
type Fallback struct {
	// Package is the npm package, or "*" for an entry that names a Shape
	// instead: code of that shape in any package.
	Package string `json:"package"`
	// Shape is the known shape of generated or copied code the call must
	// be part of (childprocess.Finding.Shape), which the probe recognises
	// by its structure.
	Shape string `json:"shape,omitempty"`
	// Versions is the range of the package's versions the entry holds
	// for: space-separated comparisons (>=2.0.0 <3.0.0); "" is every
	// version.
	Versions string `json:"versions,omitempty"`
	// File is the file inside the package (Files, when the call is in
	// several, as a package's CommonJS and ES builds), and Functions the
	// child_process functions called there.
	File      string   `json:"file,omitempty"`
	Files     []string `json:"files,omitempty"`
	Functions []string `json:"functions"`
	// Command, when set, is the literal command the call must have.
	Command string `json:"command,omitempty"`
	Why     string `json:"why"`
	Source  string `json:"source"`
	Says    string `json:"says"`
	// RunsWhen is what turns an opt-in call on.
	RunsWhen string `json:"runs_when,omitempty"`
	// EnabledBy are the image ENV settings that turn it on: NAME (set to
	// anything) or NAME=value.
	EnabledBy []string `json:"enabled_by,omitempty"`
}

// label names the entry in a note: the package and its versions, or the
// shape and the package it was found in.
func (f Fallback) label() string {
	switch {
	case f.Shape != "" && f.Package == "*":
		return f.Shape + " (in any package)"
	case f.Shape != "":
		return f.Package + " " + f.Shape
	}
	return f.Package + " " + f.Versions
}

// files are the entry's files inside its package.
func (f Fallback) files() []string {
	if f.File != "" {
		return append([]string{f.File}, f.Files...)
	}
	return f.Files
}

// enabledIn returns the setting of env (the image's ENV) that turns an
// opt-in entry on, if one does.
func (f Fallback) enabledIn(env map[string]string) (string, bool) {
	for _, e := range f.EnabledBy {
		name, want, exact := strings.Cut(e, "=")
		v, set := env[name]
		if set && v != "" && (!exact || v == want) {
			return name + "=" + v, true
		}
	}
	return "", false
}

//go:embed fallbacks.json
var fallbacksJSON []byte

// Fallbacks is the table of known fallback calls, from fallbacks.json.
var Fallbacks = mustFallbacks(fallbacksJSON)

func mustFallbacks(data []byte) []Fallback {
	fs, err := parseFallbacks(data)
	if err != nil {
		panic("readiness: fallbacks.json: " + err.Error())
	}
	return fs
}

func parseFallbacks(data []byte) ([]Fallback, error) {
	var doc struct {
		About     string     `json:"about"`
		Fallbacks []Fallback `json:"fallbacks"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	for _, f := range doc.Fallbacks {
		switch {
		case f.Package == "*" && (f.Shape == "" || len(f.Functions) == 0):
			return nil, fmt.Errorf("an entry for any package (*) must name a shape and the functions")
		case f.Package != "*" && (f.Package == "" || len(f.files()) == 0 || len(f.Functions) == 0):
			return nil, fmt.Errorf("an entry (%q) must name a package, a file and the functions", f.Package)
		case len(f.EnabledBy) > 0 && f.RunsWhen == "":
			return nil, fmt.Errorf("%s: enabled_by is for opt-in entries, which say when the call runs (runs_when)", f.Package)
		case !strings.HasPrefix(f.Source, "https://") || f.Says == "" || f.Why == "":
			return nil, fmt.Errorf("%s: every entry needs a source (an https URL), what it says and why the call is harmless", f.Package)
		}
		if _, err := parseRange(f.Versions); err != nil {
			return nil, fmt.Errorf("%s: versions %q: %w", f.Package, f.Versions, err)
		}
	}
	return doc.Fallbacks, nil
}

// knownFallback returns the entry a dependency's finding matches.
func knownFallback(fd childprocess.Finding) (Fallback, bool) {
	if fd.Origin != childprocess.OriginDependency || fd.Package == "" {
		return Fallback{}, false
	}
	for _, f := range Fallbacks {
		if f.Shape != "" {
			if fd.Shape == f.Shape && slices.Contains(f.Functions, fd.Function) && (f.Package == "*" || f.Package == fd.Package) {
				return f, true
			}
			continue
		}
		inFile := slices.ContainsFunc(f.files(), func(file string) bool {
			return strings.HasSuffix(fd.File, "node_modules/"+f.Package+"/"+file)
		})
		if f.Package != fd.Package || !inFile ||
			!slices.Contains(f.Functions, fd.Function) || f.Command != "" && f.Command != fd.Command {
			continue
		}
		if f.Versions != "" {
			r, _ := parseRange(f.Versions)
			if !r.holds(fd.PackageVersion) {
				continue
			}
		}
		return f, true
	}
	return Fallback{}, false
}

// versionRange is a conjunction of comparisons with versions.
type versionRange []comparison

type comparison struct {
	op string
	v  [3]int
}

// parseRange reads ">=2.0.0 <3.0.0": comparisons (>=, >, <=, <, =) with
// versions of up to three numbers, all of which must hold.
func parseRange(s string) (versionRange, error) {
	var r versionRange
	for _, f := range strings.Fields(s) {
		i := strings.IndexAny(f, "0123456789")
		if i < 0 {
			return nil, fmt.Errorf("%q: want a comparison and a version", f)
		}
		op := f[:i]
		switch op {
		case ">=", ">", "<=", "<", "=":
		default:
			return nil, fmt.Errorf("%q: want a comparison >=, >, <=, < or = and a version", f)
		}
		v, ok := parseVersion(f[len(op):])
		if !ok {
			return nil, fmt.Errorf("%q: not a version", f)
		}
		r = append(r, comparison{op, v})
	}
	return r, nil
}

// parseVersion reads MAJOR[.MINOR[.PATCH]], ignoring a prerelease or
// build suffix.
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	s, _, _ = strings.Cut(s, "+")
	s, _, _ = strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// holds reports whether version is in the range; a version that cannot
// be read is in no range, nor is a prerelease (16.0.0-canary.3): the
// entries were read on releases, and, as npm's ranges do, a range of
// releases holds no prerelease.
func (r versionRange) holds(version string) bool {
	v, ok := parseVersion(version)
	if !ok || strings.ContainsAny(strings.SplitN(version, "+", 2)[0], "-") {
		return false
	}
	for _, c := range r {
		d := 0
		for i := range 3 {
			if v[i] < c.v[i] {
				d = -1
				break
			}
			if v[i] > c.v[i] {
				d = 1
				break
			}
		}
		var ok bool
		switch c.op {
		case ">=":
			ok = d >= 0
		case ">":
			ok = d > 0
		case "<=":
			ok = d <= 0
		case "<":
			ok = d < 0
		case "=":
			ok = d == 0
		}
		if !ok {
			return false
		}
	}
	return true
}
