package readiness

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// Wrapper is an npm package known to run a program, or load a system
// library, at run time: when it is a production dependency, an OS package
// that installs the program is used. Source says where that is said.
type Wrapper struct {
	Package string `json:"package"`
	// Programs are the programs it runs, by name.
	Programs []string `json:"programs,omitempty"`
	// Libraries are system libraries it loads (libvips), by soname stem.
	Libraries []string `json:"libraries,omitempty"`
	// Bundled are programs or libraries it ships itself, so that an OS
	// package that installs them is not needed for it.
	Bundled []string `json:"bundled,omitempty"`
	Source  string   `json:"source"`
	Says    string   `json:"says"`
}

//go:embed wrappers.json
var wrappersJSON []byte

// Wrappers is the table of known dependency wrappers, from wrappers.json,
// the one list of them.
var Wrappers = mustWrappers(wrappersJSON)

var wrappersByPackage = func() map[string]Wrapper {
	m := make(map[string]Wrapper, len(Wrappers))
	for _, w := range Wrappers {
		m[w.Package] = w
	}
	return m
}()

// mustWrappers decodes the table; a malformed table is a build defect, so
// it panics, naming what is wrong.
func mustWrappers(data []byte) []Wrapper {
	ws, err := parseWrappers(data)
	if err != nil {
		panic("readiness: wrappers.json: " + err.Error())
	}
	return ws
}

func parseWrappers(data []byte) ([]Wrapper, error) {
	var doc struct {
		About    string    `json:"about"`
		Wrappers []Wrapper `json:"wrappers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, w := range doc.Wrappers {
		switch {
		case w.Package == "":
			return nil, fmt.Errorf("an entry names no package")
		case seen[w.Package]:
			return nil, fmt.Errorf("%s is listed twice", w.Package)
		case !strings.HasPrefix(w.Source, "https://") || w.Says == "":
			return nil, fmt.Errorf("%s: every entry needs a source (an https URL) and what it says", w.Package)
		case len(w.Programs)+len(w.Libraries)+len(w.Bundled) == 0:
			return nil, fmt.Errorf("%s: names no program, library or bundled one", w.Package)
		}
		seen[w.Package] = true
	}
	return doc.Wrappers, nil
}

// libraryStem is the name an OS package or a library is known by, without
// a lib prefix, a development or version suffix: libvips42, libvips-dev
// and vips-dev are all vips.
func libraryStem(name string) string {
	name = strings.TrimSuffix(strings.TrimSuffix(name, "-dev"), "-devel")
	name = strings.TrimRight(name, "0123456789.")
	return strings.TrimPrefix(name, "lib")
}
