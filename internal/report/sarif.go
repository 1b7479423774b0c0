package report

import (
	"encoding/json"
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
	RuleID           string          `json:"ruleId"`
	RuleIndex        int             `json:"ruleIndex"`
	Level            string          `json:"level"`
	Message          sarifMessage    `json:"message"`
	Locations        []sarifLocation `json:"locations,omitempty"`
	RelatedLocations []sarifLocation `json:"relatedLocations,omitempty"`
	CodeFlows        []sarifCodeFlow `json:"codeFlows,omitempty"`
	Properties       map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	// ID is 1-based in relatedLocations, which messages link to as
	// [text](ID); zero (omitted) elsewhere.
	ID               int            `json:"id,omitempty"`
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	Message          *sarifMessage  `json:"message,omitempty"`
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

type sarifCodeFlow struct {
	Message     *sarifMessage     `json:"message,omitempty"`
	ThreadFlows []sarifThreadFlow `json:"threadFlows"`
}

type sarifThreadFlow struct {
	Locations []sarifThreadFlowLocation `json:"locations"`
}

type sarifThreadFlowLocation struct {
	Location       sarifLocation `json:"location"`
	NestingLevel   int           `json:"nestingLevel"`
	ExecutionOrder int           `json:"executionOrder"`
	Kinds          []string      `json:"kinds,omitempty"`
	Properties     *stepProps    `json:"properties,omitempty"`
}

// stepProps is the property bag of one process in a trace's code flow.
type stepProps struct {
	Phase string `json:"phase,omitempty"`
	// PID is zero when the trace's facts do not name the process's pid
	// (the ancestry records only labels above the parent).
	PID int32 `json:"pid,omitempty"`
	// Argv is the process's arguments; Command is its label ("npm start")
	// when only that is known.
	Argv      []string `json:"argv,omitempty"`
	Command   string   `json:"command,omitempty"`
	Attempted bool     `json:"attempted,omitempty"`
	Cause     string   `json:"cause,omitempty"`
}

// imageVerdicts is one image's entry in the run's "images" property.
type imageVerdicts struct {
	Dockerfile string                  `json:"dockerfile"`
	Target     string                  `json:"target"`
	Why        string                  `json:"why,omitempty"`
	Verdicts   map[string]imageVerdict `json:"verdicts"`
}

type imageVerdict struct {
	Verdict   probe.Verdict  `json:"verdict"`
	Reason    string         `json:"reason,omitempty"`
	Confirmed bool           `json:"confirmed"`
	Blockers  []blockerBrief `json:"blockers,omitempty"`
}

type blockerBrief struct {
	ID        string `json:"id"`
	Rule      string `json:"rule,omitempty"`
	Removable bool   `json:"removable"`
	Fix       string `json:"fix,omitempty"`
	WhyNot    string `json:"why_not,omitempty"`
}

// EncodeSARIF writes c as a SARIF 2.1.0 log: one rule per registered
// warning ID, one result per probe warning. A result is located at its
// first file evidence; every file evidence of the finding (the warning's
// and that of the blockers it stands behind) is a related location with
// its note as the message, and each trace event it cites is a code flow
// from the root of the process ancestry down to the shell, whose last step
// points at the instruction or script that caused it.
//
// A warning behind a blocker that a rewrite cannot remove is an error, one
// behind a removable blocker a warning, any other a note. The run's
// properties hold each assessment's verdict by name, and under "images"
// the verdicts of every judged image.
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
	invs := invocations(c.Probes)
	for _, res := range c.Probes {
		for _, warn := range res.Warnings {
			idx, ok := index[warn.ID]
			if !ok {
				return fmt.Errorf("encoding SARIF: warning %s is not registered", warn.ID)
			}
			sr := sarifResult{RuleID: warn.ID, RuleIndex: idx, Level: "note", Message: sarifMessage{Text: warn.Message},
				Properties: map[string]any{"probe": res.Probe}}
			if sr.Message.Text == "" {
				sr.Message.Text = warn.ID
			}
			for _, e := range warn.Evidence {
				if lv, ok := levels[key(warn.ID, e)]; ok && rank(lv) > rank(sr.Level) {
					sr.Level = lv
				}
			}
			files, traces := findingEvidence(warn, c)
			for _, e := range traces {
				sr.CodeFlows = append(sr.CodeFlows, codeFlow(*e.Trace, e.Note, invs))
			}
			if len(files) > 0 {
				sr.Locations = []sarifLocation{{PhysicalLocation: physical(files[0])}}
			}
			var links []string
			for i, e := range files {
				loc := sarifLocation{ID: i + 1, PhysicalLocation: physical(e)}
				if e.Note != "" {
					loc.Message = &sarifMessage{Text: e.Note}
				}
				sr.RelatedLocations = append(sr.RelatedLocations, loc)
				links = append(links, fmt.Sprintf("[%s](%d)", escapeLink(fileLine(e)), i+1))
			}
			if len(links) > 1 {
				sr.Message.Text = escapeLink(sr.Message.Text) + " (evidence: " + strings.Join(links, ", ") + ")"
			}
			run.Results = append(run.Results, sr)
		}
	}
	run.Properties = runProperties(c)
	b, err := probe.Marshal(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
	if err != nil {
		return fmt.Errorf("encoding SARIF: %w", err)
	}
	return writeIndented(w, b)
}

// findingEvidence returns the file and the trace evidence of a warning,
// each followed by that of every blocker of c's assessments that stands
// behind it (same ID, a shared file and line): a static finding shows the
// trace events its verdict cites. Each file and line, and each trace
// event, comes once.
func findingEvidence(warn probe.Warning, c *Context) (files, traces []probe.Evidence) {
	var out []probe.Evidence
	seen := map[string]int{}
	seenTrace := map[probe.TraceRef]bool{}
	add := func(e probe.Evidence) {
		if e.Trace != nil && !seenTrace[*e.Trace] {
			seenTrace[*e.Trace] = true
			traces = append(traces, e)
		}
		if e.File == "" {
			return
		}
		k := fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
		if i, ok := seen[k]; ok {
			if out[i].Note == "" {
				out[i].Note = e.Note
			}
			return
		}
		seen[k] = len(out)
		out = append(out, e)
	}
	mine := map[string]bool{}
	for _, e := range warn.Evidence {
		add(e)
		if e.File != "" {
			mine[key(warn.ID, e)] = true
		}
	}
	names := make([]string, 0, len(c.Assessments))
	for n := range c.Assessments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, b := range c.Assessments[n].Blockers {
			if b.ID != warn.ID || !sharesEvidence(b, mine) {
				continue
			}
			for _, e := range b.Evidence {
				add(e)
			}
		}
	}
	return out, traces
}

func sharesEvidence(b probe.Blocker, keys map[string]bool) bool {
	for _, e := range b.Evidence {
		if e.File != "" && keys[key(b.ID, e)] {
			return true
		}
	}
	return false
}

func physical(e probe.Evidence) *sarifPhysical {
	p := &sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: uriPath(e.File), URIBaseID: "REPOROOT"}}
	if e.Line > 0 {
		p.Region = &sarifRegion{StartLine: e.Line, StartColumn: e.Column}
	}
	return p
}

func fileLine(e probe.Evidence) string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return e.File
}

// escapeLink escapes the characters that SARIF gives a meaning in a
// message with embedded links.
func escapeLink(s string) string {
	return strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// traceInvocation is the part of a traced shell invocation, as probes
// that trace record it in their facts' "invocations", that a code flow
// shows. Facts of other shapes decode to nothing.
type traceInvocation struct {
	Phase     string   `json:"phase"`
	Index     int      `json:"index"`
	PID       int32    `json:"pid"`
	PPID      int32    `json:"ppid"`
	Ancestry  []string `json:"ancestry"`
	Binary    string   `json:"binary"`
	Argv      []string `json:"argv"`
	Attempted bool     `json:"attempted"`
	Cause     struct {
		Kind   string `json:"kind"`
		Detail string `json:"detail"`
		File   string `json:"file"`
		Line   int    `json:"line"`
	} `json:"cause"`
}

type traceKey struct {
	phase string
	pid   int32
	index int
}

// invocations indexes the traced invocations in every result's facts by
// the trace event they name.
func invocations(results []probe.Result) map[traceKey]traceInvocation {
	out := map[traceKey]traceInvocation{}
	for _, r := range results {
		if !hasTraceEvidence(r) {
			continue
		}
		var f struct {
			Invocations []traceInvocation `json:"invocations"`
		}
		if json.Unmarshal(r.Facts, &f) != nil {
			continue
		}
		for _, inv := range f.Invocations {
			out[traceKey{inv.Phase, inv.PID, inv.Index}] = inv
		}
	}
	return out
}

func hasTraceEvidence(r probe.Result) bool {
	for _, w := range r.Warnings {
		for _, e := range w.Evidence {
			if e.Trace != nil {
				return true
			}
		}
	}
	return false
}

// codeFlow shows a trace event as one thread flow: each ancestor of the
// process, root first, then the process itself. Without the invocation in
// the facts, the flow is the event alone, its note taken as its command.
func codeFlow(ref probe.TraceRef, note string, invs map[traceKey]traceInvocation) sarifCodeFlow {
	phase := ref.Phase
	if phase == "" {
		phase = "trace"
	}
	inv, ok := invs[traceKey{ref.Phase, ref.PID, ref.Index}]
	if !ok {
		step := sarifThreadFlowLocation{Location: sarifLocation{Message: &sarifMessage{Text: fmt.Sprintf("%s: pid %d: %s", phase, ref.PID, note)}},
			ExecutionOrder: 1, Kinds: []string{"call"}, Properties: &stepProps{Phase: ref.Phase, PID: ref.PID, Command: note}}
		return sarifCodeFlow{ThreadFlows: []sarifThreadFlow{{Locations: []sarifThreadFlowLocation{step}}}}
	}
	var steps []sarifThreadFlowLocation
	for i, label := range inv.Ancestry {
		p := &stepProps{Phase: inv.Phase, Command: label}
		text := fmt.Sprintf("%s: %s", phase, label)
		if i == len(inv.Ancestry)-1 && inv.PPID != 0 {
			p.PID = inv.PPID
			text = fmt.Sprintf("%s: pid %d: %s", phase, inv.PPID, label)
		}
		steps = append(steps, sarifThreadFlowLocation{Location: sarifLocation{Message: &sarifMessage{Text: text}},
			NestingLevel: i, ExecutionOrder: i + 1, Kinds: []string{"call"}, Properties: p})
	}
	verb := "ran"
	if inv.Attempted {
		verb = "tried to run"
	}
	argv := strings.Join(inv.Argv, " ")
	if argv == "" {
		argv = inv.Binary
	}
	text := fmt.Sprintf("%s: pid %d %s %s", phase, inv.PID, verb, argv)
	if inv.Cause.Kind != "" {
		text += " (cause: " + inv.Cause.Kind + ")"
	}
	last := sarifThreadFlowLocation{Location: sarifLocation{Message: &sarifMessage{Text: text}},
		NestingLevel: len(inv.Ancestry), ExecutionOrder: len(inv.Ancestry) + 1, Kinds: []string{"call"},
		Properties: &stepProps{Phase: inv.Phase, PID: inv.PID, Argv: inv.Argv, Attempted: inv.Attempted, Cause: inv.Cause.Kind}}
	if inv.Cause.File != "" {
		last.Location.PhysicalLocation = physical(probe.Evidence{File: inv.Cause.File, Line: inv.Cause.Line})
	}
	steps = append(steps, last)
	chain := append(append([]string{}, inv.Ancestry...), argv)
	return sarifCodeFlow{Message: &sarifMessage{Text: phase + ": " + strings.Join(chain, " → ")},
		ThreadFlows: []sarifThreadFlow{{Locations: steps}}}
}

// runProperties are each assessment's verdict by name and, under
// "images", the verdicts of every judged image: all of them with
// gather --all-images, else the one judged.
func runProperties(c *Context) map[string]any {
	if len(c.Assessments) == 0 && len(c.Images) == 0 {
		return nil
	}
	props := map[string]any{}
	for n, a := range c.Assessments {
		props[n] = string(a.Verdict)
	}
	var images []imageVerdicts
	switch {
	case len(c.Images) > 0:
		for _, ia := range c.Images {
			images = append(images, verdictsOf(ia.Image, ia.Assessments))
		}
	case c.Image != nil && len(c.Assessments) > 0:
		images = append(images, verdictsOf(*c.Image, c.Assessments))
	}
	if images != nil {
		props["images"] = images
	}
	return props
}

func verdictsOf(ref probe.ImageRef, as map[string]probe.Assessment) imageVerdicts {
	iv := imageVerdicts{Dockerfile: ref.Dockerfile, Target: ref.Target, Why: ref.Why, Verdicts: map[string]imageVerdict{}}
	for n, a := range as {
		v := imageVerdict{Verdict: a.Verdict, Reason: a.Reason, Confirmed: a.Confirmed}
		for _, b := range a.Blockers {
			v.Blockers = append(v.Blockers, blockerBrief{ID: b.ID, Rule: b.Rule, Removable: b.Removable, Fix: b.Fix, WhyNot: b.WhyNot})
		}
		iv.Verdicts[n] = v
	}
	return iv
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

// Finding is one result of a SARIF log that EncodeFindings writes: a rule,
// a level (error, warning or note), a message and its evidence.
type Finding struct {
	RuleID   string
	Level    string
	Message  string
	Evidence []probe.Evidence
}

// FindingRule describes a rule of EncodeFindings' log.
type FindingRule struct {
	ID, Summary, HelpURI string
}

// EncodeFindings writes a SARIF 2.1.0 log of findings with repository-
// relative locations under REPOROOT (repo), for results that are not
// probe warnings (migrate's changes, refusals and gates). Every finding's
// rule must be among rules.
func EncodeFindings(w io.Writer, version, repo string, rules []FindingRule, findings []Finding, props map[string]any) error {
	index := map[string]int{}
	run := sarifRun{Results: []sarifResult{}, Properties: props}
	run.Tool.Driver = sarifDriver{Name: "codegenie", Version: version, InformationURI: "https://github.com/codegenie/codegenie", Rules: []sarifRule{}}
	for i, r := range rules {
		index[r.ID] = i
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: r.ID, ShortDescription: sarifMessage{r.Summary}, HelpURI: r.HelpURI})
	}
	root := filepath.ToSlash(repo)
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	run.OriginalURIBaseID = map[string]sarifArtifactLoc{"REPOROOT": {URI: (&url.URL{Scheme: "file", Path: root}).String()}}
	for _, f := range findings {
		idx, ok := index[f.RuleID]
		if !ok {
			return fmt.Errorf("encoding SARIF: rule %s is not listed", f.RuleID)
		}
		sr := sarifResult{RuleID: f.RuleID, RuleIndex: idx, Level: f.Level, Message: sarifMessage{Text: f.Message}}
		first := true
		for i, e := range f.Evidence {
			if e.File == "" {
				continue
			}
			if first {
				sr.Locations = []sarifLocation{{PhysicalLocation: physical(e)}}
				first = false
			}
			loc := sarifLocation{ID: i + 1, PhysicalLocation: physical(e)}
			if e.Note != "" {
				loc.Message = &sarifMessage{Text: e.Note}
			}
			sr.RelatedLocations = append(sr.RelatedLocations, loc)
		}
		run.Results = append(run.Results, sr)
	}
	b, err := probe.Marshal(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
	if err != nil {
		return fmt.Errorf("encoding SARIF: %w", err)
	}
	return writeIndented(w, b)
}
