package portfolio

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/codegenie/codegenie/internal/atomicfile"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// SchemaVersion is the version of portfolio.json. It changes when a field
// changes meaning or disappears.
const SchemaVersion = 1

// Output file names in the portfolio folder.
const (
	JSONFile   = "portfolio.json"
	SARIFDir   = "sarif"
	PatchDir   = "patches"
	MergedFile = "portfolio.sarif"
	HTMLFile   = "report.html"
)

// Document is portfolio.json.
type Document struct {
	SchemaVersion int       `json:"schema_version"`
	Codegenie     string    `json:"codegenie_version"`
	Generated     time.Time `json:"generated"`
	// Tiers is "static" or "static+sandbox".
	Tiers    string        `json:"tiers"`
	Totals   Totals        `json:"totals"`
	Blockers []KindSummary `json:"blockers_by_kind"`
	Services []Entry       `json:"services"`
}

// Totals count services by state and judged services by verdict.
type Totals struct {
	Services  int            `json:"services"`
	ByState   map[string]int `json:"by_state"`
	ByVerdict map[string]int `json:"by_verdict"`
	// Migrated counts the services --migrate rewrote and proved.
	Migrated int `json:"migrated,omitempty"`
	// Images sum what the migrations do to the images; nil when no
	// migration's gates ran.
	Images *ImageTotals `json:"images,omitempty"`
}

// KindSummary is one blocker kind across the portfolio.
type KindSummary struct {
	Kind probe.BlockerKind `json:"kind"`
	// Services counts the services it blocks; Unblocks those it alone
	// blocks, which fixing it would make ready.
	Services int `json:"services"`
	Unblocks int `json:"unblocks"`
	// Blockers counts its occurrences, Removable those a rewrite removes.
	Blockers  int `json:"blockers"`
	Removable int `json:"removable"`
}

// Entry is one service in portfolio.json.
type Entry struct {
	ID         string        `json:"id"`
	Repo       string        `json:"repo"`
	Dockerfile string        `json:"dockerfile"`
	Target     string        `json:"target"`
	Context    string        `json:"context"`
	State      State         `json:"state"`
	Verdict    probe.Verdict `json:"verdict,omitempty"`
	Confirmed  bool          `json:"confirmed"`
	// Reason says why a service was skipped or failed, or why its verdict
	// is unknown.
	Reason   string           `json:"reason,omitempty"`
	Blockers []probe.Blocker  `json:"blockers,omitempty"`
	Notes    []probe.Note     `json:"notes,omitempty"`
	Evidence []probe.Evidence `json:"evidence,omitempty"`
	// SARIF is the service's SARIF file, relative to the portfolio folder.
	SARIF string `json:"sarif,omitempty"`
	// Migration is the dry-run migration (--migrate), and Patch its patch
	// file, relative to the portfolio folder.
	Migration *Migration `json:"migration,omitempty"`
	Patch     string     `json:"patch,omitempty"`
	Attempts  int        `json:"attempts"`
	Timings   Timings    `json:"timings"`
}

// NewDocument summarises records.
func NewDocument(version, tiers string, now time.Time, recs []Record) *Document {
	d := &Document{SchemaVersion: SchemaVersion, Codegenie: version, Generated: now.UTC(), Tiers: tiers,
		Totals:   Totals{Services: len(recs), ByState: map[string]int{}, ByVerdict: map[string]int{}},
		Blockers: []KindSummary{}, Services: make([]Entry, 0, len(recs))}
	kinds := map[probe.BlockerKind]*KindSummary{}
	for _, r := range recs {
		d.Totals.ByState[r.State.String()]++
		// Redacted again at the boundary: a record from an older store, or
		// a reason that quotes a URL, shows no credentials.
		e := Entry{ID: r.Service.ID, Repo: Redact(r.Service.Repo), Dockerfile: r.Service.Dockerfile, Target: r.Service.Target,
			Context: r.Service.Context, State: r.State, Reason: Redact(r.Reason), Attempts: r.Attempts, Timings: r.Timings}
		if r.State == StateDone && r.Result != nil {
			res := r.Result
			e.Verdict, e.Confirmed, e.Blockers, e.Notes = res.Verdict, res.Confirmed, res.Blockers, res.Notes
			if res.Reason != "" {
				e.Reason = Redact(res.Reason)
			}
			e.Evidence = evidenceOf(res.Blockers)
			e.SARIF = SARIFDir + "/" + SARIFName(r.Service.ID)
			if m := r.Migration; m != nil {
				e.Migration = m
				if m.Patch != "" {
					e.Patch = PatchDir + "/" + PatchName(r.Service.ID)
				}
				if m.Migrated {
					d.Totals.Migrated++
				}
			}
			d.Totals.ByVerdict[string(res.Verdict)]++
			seen := map[probe.BlockerKind]bool{}
			for _, b := range res.Blockers {
				k := kinds[b.Kind]
				if k == nil {
					k = &KindSummary{Kind: b.Kind}
					kinds[b.Kind] = k
				}
				k.Blockers++
				if b.Removable {
					k.Removable++
				}
				if !seen[b.Kind] {
					seen[b.Kind] = true
					k.Services++
				}
			}
			if len(seen) == 1 && res.Verdict != probe.Unknown {
				for k := range seen {
					kinds[k].Unblocks++
				}
			}
		}
		d.Services = append(d.Services, e)
	}
	d.Totals.Images = imageTotals(d.Services)
	for _, k := range kinds {
		d.Blockers = append(d.Blockers, *k)
	}
	sort.Slice(d.Blockers, func(i, j int) bool {
		a, b := d.Blockers[i], d.Blockers[j]
		if a.Services != b.Services {
			return a.Services > b.Services
		}
		return a.Kind < b.Kind
	})
	return d
}

// evidenceOf lists the blockers' evidence, each file:line or trace event
// once.
func evidenceOf(bs []probe.Blocker) []probe.Evidence {
	var out []probe.Evidence
	seen := map[string]bool{}
	for _, b := range bs {
		for _, e := range b.Evidence {
			k := fmt.Sprintf("%s:%d:%v", e.File, e.Line, e.Trace)
			if e.Trace != nil {
				k = fmt.Sprintf("%s:%d:%s/%d/%d", e.File, e.Line, e.Trace.Phase, e.Trace.PID, e.Trace.Index)
			}
			if !seen[k] {
				seen[k] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// Encode writes d as indented JSON.
func (d *Document) Encode(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	if err := e.Encode(d); err != nil {
		return fmt.Errorf("encoding %s: %w", JSONFile, err)
	}
	return nil
}

// DecodeDocument reads portfolio.json strictly: an unknown field anywhere
// is an error, as is another schema version.
func DecodeDocument(r io.Reader) (*Document, error) {
	var d Document
	if err := strictjson.Decode(r, &d); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", JSONFile, err)
	}
	if d.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("decoding %s: schema version %d, want %d", JSONFile, d.SchemaVersion, SchemaVersion)
	}
	return &d, nil
}

// SARIFName is a service's SARIF file name: its ID made safe for a file
// name, and a short hash that keeps distinct IDs distinct.
func SARIFName(id string) string {
	sum := sha256.Sum256([]byte(id))
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, id)
	if len(safe) > 100 {
		safe = safe[:100]
	}
	return safe + "-" + hex.EncodeToString(sum[:4]) + ".sarif"
}

// PatchName is a service's patch file name in PatchDir.
func PatchName(id string) string { return strings.TrimSuffix(SARIFName(id), ".sarif") + ".patch" }

// writePatches writes patches/ from the document's migrations, and removes
// the patches of services that no longer have one.
func writePatches(dir string, d *Document) error {
	pdir := filepath.Join(dir, PatchDir)
	keep := map[string]bool{}
	for _, e := range d.Services {
		if e.Patch == "" {
			continue
		}
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", pdir, err)
		}
		name := filepath.Base(e.Patch)
		keep[name] = true
		if err := writeCopy(filepath.Join(pdir, name), []byte(e.Migration.Patch)); err != nil {
			return err
		}
	}
	ents, err := os.ReadDir(pdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s: %w", pdir, err)
	}
	for _, ent := range ents {
		if strings.HasSuffix(ent.Name(), ".patch") && !keep[ent.Name()] {
			if err := os.Remove(filepath.Join(pdir, ent.Name())); err != nil {
				return fmt.Errorf("removing a stale patch: %w", err)
			}
		}
	}
	return nil
}

// SARIFSource gives a service's stored SARIF log, or nil: the Store, or
// the shared result store of a Temporal run.
type SARIFSource interface {
	SARIF(id string) ([]byte, error)
}

// WriteOutputs writes portfolio.json, report.html, sarif/ (one log per
// done service, from the store) and the merged SARIF log into dir. Every file is written
// atomically; SARIF files of services no longer in the portfolio are
// removed.
func WriteOutputs(dir string, st SARIFSource, d *Document) error {
	sdir := filepath.Join(dir, SARIFDir)
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", sdir, err)
	}
	keep := map[string]bool{}
	// The merged log is written as it is read: each service's runs, raw.
	var merged bytes.Buffer
	merged.Grow(64 << 10)
	merged.WriteString("{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n  \"version\": \"2.1.0\",\n  \"runs\": [")
	nruns := 0
	for _, e := range d.Services {
		if e.SARIF == "" {
			continue
		}
		log, err := st.SARIF(e.ID)
		if err != nil {
			return err
		}
		if log == nil {
			continue
		}
		name := filepath.Base(e.SARIF)
		keep[name] = true
		if err := writeCopy(filepath.Join(sdir, name), log); err != nil {
			return err
		}
		var one struct {
			Runs []json.RawMessage `json:"runs"`
		}
		if err := json.Unmarshal(log, &one); err != nil {
			return fmt.Errorf("reading the SARIF log of %s: %w", e.ID, err)
		}
		for _, run := range one.Runs {
			if nruns > 0 {
				merged.WriteByte(',')
			}
			nruns++
			merged.WriteString("\n    ")
			merged.Write(run)
		}
	}
	merged.WriteString("\n  ]\n}\n")
	ents, err := os.ReadDir(sdir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", sdir, err)
	}
	for _, ent := range ents {
		stale := strings.HasSuffix(ent.Name(), ".sarif") && !keep[ent.Name()] || strings.HasSuffix(ent.Name(), ".sarif.tmp")
		if stale {
			if err := os.Remove(filepath.Join(sdir, ent.Name())); err != nil {
				return fmt.Errorf("removing a stale SARIF log: %w", err)
			}
		}
	}
	if err := WriteFile(filepath.Join(dir, MergedFile), func(w io.Writer) error {
		_, err := w.Write(merged.Bytes())
		return err
	}); err != nil {
		return err
	}
	if err := writePatches(dir, d); err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, HTMLFile), func(w io.Writer) error { return EncodeHTML(w, d) }); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, JSONFile), d.Encode)
}

// writeCopy writes a file that the store can give again (a service's SARIF
// log) through a renamed temporary file, without the fsync: a crash may
// lose it, never tear it, and the next run writes it again.
func writeCopy(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteFile writes path atomically (package atomicfile).
func WriteFile(path string, enc func(io.Writer) error) error { return atomicfile.Write(path, enc) }
