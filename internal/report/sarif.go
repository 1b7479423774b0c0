package report

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
)

// HelpBase is where each warning ID's documentation lives; a rule's helpUri
// is HelpBase + "#" + the ID.
const HelpBase = "https://github.com/codegenie/codegenie/blob/main/docs/warnings.md"

// SARIF 2.1.0 types: only the parts codegenie writes.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool              sarifTool                   `json:"tool"`
	OriginalURIBaseID map[string]sarifArtifactLoc `json:"originalUriBaseIds,omitempty"`
	Results           []sarifResult               `json:"results"`
	Properties        map[string]any              `json:"properties,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string         `json:"id"`
	ShortDescription sarifMessage   `json:"shortDescription"`
	HelpURI          string         `json:"helpUri"`
	Properties       map[string]any `json:"properties,omitempty"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations,omitempty"`
	Properties map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLoc `json:"artifactLocation"`
	Region           *sarifRegion     `json:"region,omitempty"`
}

type sarifArtifactLoc struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// EncodeSARIF writes c as a SARIF 2.1.0 log: one rule per registered
// warning ID, one result per probe warning, located at its evidence. A
// warning behind a blocker that a rewrite cannot remove is an error, one
// behind a removable blocker a warning, any other a note.
func EncodeSARIF(w io.Writer, c *Context, reg *probe.Registry) error {
	rules := reg.Warnings().All()
	index := map[string]int{}
	run := sarifRun{Results: []sarifResult{}}
	run.Tool.Driver = sarifDriver{Name: "codegenie", Version: c.Codegenie, InformationURI: "https://github.com/codegenie/codegenie"}
	for i, r := range rules {
		index[r.ID] = i
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: r.ID, ShortDescription: sarifMessage{r.Summary}, HelpURI: HelpBase + "#" + anchor(r.ID)})
	}
	root := filepath.ToSlash(c.Repo)
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	run.OriginalURIBaseID = map[string]sarifArtifactLoc{"REPOROOT": {URI: (&url.URL{Scheme: "file", Path: root}).String()}}
	levels := blockerLevels(c)
	for _, res := range c.Probes {
		for _, warn := range res.Warnings {
			idx, ok := index[warn.ID]
			if !ok {
				return fmt.Errorf("encoding SARIF: warning %s is not registered", warn.ID)
			}
			sr := sarifResult{RuleID: warn.ID, RuleIndex: idx, Level: "note", Message: sarifMessage{Text: warn.Message},
				Properties: map[string]any{"probe": res.Probe}}
			for _, e := range warn.Evidence {
				if lv, ok := levels[key(warn.ID, e)]; ok && rank(lv) > rank(sr.Level) {
					sr.Level = lv
				}
				if e.File == "" {
					continue
				}
				loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: uriPath(e.File), URIBaseID: "REPOROOT"}}}
				if e.Line > 0 {
					loc.PhysicalLocation.Region = &sarifRegion{StartLine: e.Line, StartColumn: e.Column}
				}
				sr.Locations = append(sr.Locations, loc)
			}
			if sr.Message.Text == "" {
				sr.Message.Text = warn.ID
			}
			run.Results = append(run.Results, sr)
		}
	}
	if len(c.Assessments) > 0 {
		run.Properties = map[string]any{}
		names := make([]string, 0, len(c.Assessments))
		for n := range c.Assessments {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			run.Properties[n] = string(c.Assessments[n].Verdict)
		}
	}
	b, err := probe.Marshal(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
	if err != nil {
		return fmt.Errorf("encoding SARIF: %w", err)
	}
	return writeIndented(w, b)
}

func key(id string, e probe.Evidence) string { return fmt.Sprintf("%s@%s:%d", id, e.File, e.Line) }

func blockerLevels(c *Context) map[string]string {
	levels := map[string]string{}
	for _, a := range c.Assessments {
		for _, b := range a.Blockers {
			lv := "error"
			if b.Removable {
				lv = "warning"
			}
			for _, e := range b.Evidence {
				if k := key(b.ID, e); rank(lv) > rank(levels[k]) {
					levels[k] = lv
				}
			}
		}
	}
	return levels
}

func rank(level string) int {
	switch level {
	case "error":
		return 3
	case "warning":
		return 2
	case "note":
		return 1
	}
	return 0
}

// anchor turns a warning ID into a Markdown heading anchor.
func anchor(id string) string { return strings.ReplaceAll(id, ".", "") }

func uriPath(p string) string { return (&url.URL{Path: filepath.ToSlash(p)}).EscapedPath() }
