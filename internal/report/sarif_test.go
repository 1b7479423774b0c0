package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report/sariftest"
)

func sampleContext() (*Context, *probe.Registry) {
	reg := registry()
	c := &Context{
		SchemaVersion: SchemaVersion, Codegenie: "t", Repo: "/repo with space",
		Image: &probe.ImageRef{Dockerfile: "Dockerfile", Target: "1", Why: "the only Dockerfile; its last stage"},
		Assessments: map[string]probe.Assessment{"distroless_readiness": {
			Verdict: probe.Blocked,
			Blockers: []probe.Blocker{{ID: "stub.warned", Kind: probe.ShellAtRuntime, Title: "t", Rule: "exec_form", Fix: "CMD [\"node\", \"server.js\"]",
				Evidence: []probe.Evidence{{File: "Dockerfile", Line: 3}}}},
		}},
		Probes: []probe.Result{{
			Probe: "stub", Version: "1", Confidence: probe.High, Facts: json.RawMessage(`{}`),
			Warnings: []probe.Warning{
				{ID: "stub.warned", Message: "shell-form CMD", Evidence: []probe.Evidence{{File: "Dockerfile", Line: 3}}},
				{ID: "stub.warned", Message: "in a trace", Evidence: []probe.Evidence{{Trace: &probe.TraceRef{Phase: "boot", PID: 1}}}},
				{ID: "stub.warned", Message: "a file", Evidence: []probe.Evidence{{File: "docker/a b.sh"}}},
			},
		}},
	}
	return c, reg
}

// npmStartContext has a blocker whose evidence spans the Dockerfile and
// two package.json scripts, behind a warning that cites only the CMD.
func npmStartContext() (*Context, *probe.Registry) {
	c, reg := sampleContext()
	c.Assessments = map[string]probe.Assessment{"distroless_readiness": {
		Verdict: probe.ReadyAfterRewrite,
		Blockers: []probe.Blocker{{ID: "stub.warned", Kind: probe.ShellAtRuntime, Title: "npm start", Removable: true, Rule: "script_argv",
			Evidence: []probe.Evidence{
				{File: "Dockerfile", Line: 9},
				{File: "package.json", Line: 6, Note: "prestart: node migrate.js"},
				{File: "package.json", Line: 7, Note: "start: node server.js"},
			}}},
	}}
	c.Probes = []probe.Result{{
		Probe: "stub", Version: "1", Confidence: probe.High, Facts: json.RawMessage(`{}`),
		Warnings: []probe.Warning{{ID: "stub.warned", Message: `CMD ["npm", "start"] runs a script through sh`,
			Evidence: []probe.Evidence{{File: "Dockerfile", Line: 9, Note: "CMD"}}}},
	}}
	return c, reg
}

// traceFacts are facts in the shape the trace probe writes.
const traceFacts = `{"execs": 4, "trace_complete": true, "invocations": [
  {"phase": "boot", "index": 3, "pid": 12, "ppid": 11, "ancestry": ["node /usr/local/bin/npm start", "sh -c npm run prestart"],
   "binary": "/bin/sh", "argv": ["sh", "-c", "node migrate.js"], "uid": 0, "by": "binary", "shell": "sh",
   "cause": {"kind": "npm_script", "detail": "prestart", "file": "package.json", "line": 6}},
  {"phase": "build:builder:step 2", "index": 1, "pid": 5, "ppid": 0, "binary": "/bin/sh", "argv": ["/bin/sh", "-c", "npm ci"],
   "uid": 0, "by": "binary", "shell": "sh", "attempted": true, "cause": {"kind": "unknown"}}
]}`

func traceContext() (*Context, *probe.Registry) {
	c, reg := sampleContext()
	// The verdict cites the boot's shell beside the static finding.
	c.Assessments = map[string]probe.Assessment{"distroless_readiness": {Verdict: probe.Blocked, Confirmed: true,
		Blockers: []probe.Blocker{{ID: "stub.warned", Kind: probe.ShellAtRuntime, Title: "npm start",
			Evidence: []probe.Evidence{{File: "Dockerfile", Line: 9}, {Trace: &probe.TraceRef{Phase: "boot", PID: 12, Index: 3}, Note: "sh -c node migrate.js"}}}}}}
	c.Probes = []probe.Result{{
		Probe: "static", Version: "1", Confidence: probe.High, Facts: json.RawMessage(`{}`),
		Warnings: []probe.Warning{{ID: "stub.warned", Message: "npm start", Evidence: []probe.Evidence{{File: "Dockerfile", Line: 9}}}},
	}, {
		Probe: "stub", Version: "1", Confidence: probe.High, Facts: json.RawMessage(traceFacts),
		Warnings: []probe.Warning{
			{ID: "stub.warned", Message: "boot: shell", Evidence: []probe.Evidence{
				{Trace: &probe.TraceRef{Phase: "boot", PID: 12, Index: 3}, Note: "sh -c node migrate.js"},
				{File: "package.json", Line: 6, Note: "npm_script"},
			}},
			{ID: "stub.warned", Message: "build: shell", Evidence: []probe.Evidence{{Trace: &probe.TraceRef{Phase: "build:builder:step 2", PID: 5, Index: 1}}}},
			{ID: "stub.warned", Message: "not in the facts", Evidence: []probe.Evidence{{Trace: &probe.TraceRef{Phase: "boot", PID: 40, Index: 9}, Note: "sh -c true"}}},
		},
	}}
	return c, reg
}

func allImagesContext() (*Context, *probe.Registry) {
	c, reg := sampleContext()
	worker := probe.ImageRef{Dockerfile: "worker/Dockerfile", Target: "run", Why: "--all-images"}
	c.Images = []ImageAssessments{
		{Image: *c.Image, Assessments: c.Assessments},
		{Image: worker, Assessments: map[string]probe.Assessment{"distroless_readiness": {Verdict: probe.Ready, Confirmed: true}}},
	}
	return c, reg
}

func encodeSARIF(t *testing.T, c *Context, reg *probe.Registry) (sarifLog, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := EncodeSARIF(&buf, c, reg); err != nil {
		t.Fatal(err)
	}
	var log sarifLog
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	return log, buf.Bytes()
}

func TestSARIFValidatesAgainstTheSchema(t *testing.T) {
	t.Parallel()
	schema := sariftest.Schema(t)
	for _, tc := range []struct {
		name string
		ctx  func() (*Context, *probe.Registry)
	}{
		{"sample", sampleContext},
		{"multi-evidence blocker", npmStartContext},
		{"trace code flows", traceContext},
		{"all images", allImagesContext},
		{"no image", func() (*Context, *probe.Registry) {
			c, reg := sampleContext()
			c.Image, c.Assessments = nil, nil
			return c, reg
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, reg := tc.ctx()
			_, b := encodeSARIF(t, c, reg)
			sariftest.Validate(t, b)
		})
	}
	// The validator must be able to fail: a log without runs is invalid.
	bad, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"version": "2.1.0"}`)))
	if err := schema.Validate(bad); err == nil {
		t.Fatal("the schema accepted a log without runs: the validation proves nothing")
	}
}

func TestSARIFContent(t *testing.T) {
	t.Parallel()
	c, reg := sampleContext()
	log, _ := encodeSARIF(t, c, reg)
	run := log.Runs[0]
	if len(run.Tool.Driver.Rules) != len(reg.Warnings().All()) {
		t.Errorf("%d rules for %d registered warnings", len(run.Tool.Driver.Rules), len(reg.Warnings().All()))
	}
	for _, r := range run.Tool.Driver.Rules {
		if r.HelpURI == "" || r.ShortDescription.Text == "" {
			t.Errorf("rule %s lacks help or a description", r.ID)
		}
	}
	if len(run.Results) != 3 {
		t.Fatalf("%d results, want 3", len(run.Results))
	}
	if got := run.Results[0]; got.Level != "error" || got.Locations[0].PhysicalLocation.Region.StartLine != 3 {
		t.Errorf("blocker finding = %+v, want an error at line 3", got)
	}
	if got := run.Results[1]; got.Level != "note" || len(got.Locations) != 0 {
		t.Errorf("trace-only finding = %+v, want a note without a physical location", got)
	}
	if got := run.Results[2].Locations[0].PhysicalLocation.ArtifactLocation.URI; got != "docker/a%20b.sh" {
		t.Errorf("artifact URI = %q, want it escaped", got)
	}
	if got := run.OriginalURIBaseID["REPOROOT"].URI; got != "file:///repo%20with%20space/" {
		t.Errorf("REPOROOT = %q", got)
	}
}

func loc(id int, file string, line int, note string) sarifLocation {
	l := sarifLocation{ID: id, PhysicalLocation: &sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: file, URIBaseID: "REPOROOT"}}}
	if line > 0 {
		l.PhysicalLocation.Region = &sarifRegion{StartLine: line}
	}
	if note != "" {
		l.Message = &sarifMessage{Text: note}
	}
	return l
}

func TestSARIFRelatedLocations(t *testing.T) {
	t.Parallel()
	c, reg := npmStartContext()
	log, _ := encodeSARIF(t, c, reg)
	res := log.Runs[0].Results[0]
	if diff := cmp.Diff([]sarifLocation{loc(0, "Dockerfile", 9, "")}, res.Locations); diff != "" {
		t.Errorf("locations (-want +got):\n%s", diff)
	}
	want := []sarifLocation{
		loc(1, "Dockerfile", 9, "CMD"),
		loc(2, "package.json", 6, "prestart: node migrate.js"),
		loc(3, "package.json", 7, "start: node server.js"),
	}
	if diff := cmp.Diff(want, res.RelatedLocations); diff != "" {
		t.Errorf("related locations (-want +got):\n%s", diff)
	}
	wantMsg := `CMD \["npm", "start"\] runs a script through sh (evidence: [Dockerfile:9](1), [package.json:6](2), [package.json:7](3))`
	if res.Message.Text != wantMsg {
		t.Errorf("message = %q, want %q", res.Message.Text, wantMsg)
	}
	if res.Level != "warning" {
		t.Errorf("level = %q, want warning (a removable blocker)", res.Level)
	}

	// A single file evidence is related too, and the message stays as is.
	c, reg = sampleContext()
	log, _ = encodeSARIF(t, c, reg)
	res = log.Runs[0].Results[0]
	if diff := cmp.Diff([]sarifLocation{loc(1, "Dockerfile", 3, "")}, res.RelatedLocations); diff != "" {
		t.Errorf("single evidence: related locations (-want +got):\n%s", diff)
	}
	if res.Message.Text != "shell-form CMD" {
		t.Errorf("single evidence: message = %q", res.Message.Text)
	}
}

func TestSARIFCodeFlows(t *testing.T) {
	t.Parallel()
	c, reg := traceContext()
	log, _ := encodeSARIF(t, c, reg)
	results := log.Runs[0].Results
	msg := func(s string) *sarifMessage { return &sarifMessage{Text: s} }
	npmFlow := sarifCodeFlow{
		Message: msg("boot: node /usr/local/bin/npm start → sh -c npm run prestart → sh -c node migrate.js"),
		ThreadFlows: []sarifThreadFlow{{Locations: []sarifThreadFlowLocation{
			{Location: sarifLocation{Message: msg("boot: node /usr/local/bin/npm start")}, NestingLevel: 0, ExecutionOrder: 1, Kinds: []string{"call"},
				Properties: &stepProps{Phase: "boot", Command: "node /usr/local/bin/npm start"}},
			{Location: sarifLocation{Message: msg("boot: pid 11: sh -c npm run prestart")}, NestingLevel: 1, ExecutionOrder: 2, Kinds: []string{"call"},
				Properties: &stepProps{Phase: "boot", PID: 11, Command: "sh -c npm run prestart"}},
			{Location: sarifLocation{PhysicalLocation: loc(0, "package.json", 6, "").PhysicalLocation, Message: msg("boot: pid 12 ran sh -c node migrate.js (cause: npm_script)")},
				NestingLevel: 2, ExecutionOrder: 3, Kinds: []string{"call"},
				Properties: &stepProps{Phase: "boot", PID: 12, Argv: []string{"sh", "-c", "node migrate.js"}, Cause: "npm_script"}},
		}}},
	}
	tests := []struct {
		name string
		res  int
		want []sarifCodeFlow
	}{
		{"ancestry to the npm script", 1, []sarifCodeFlow{npmFlow}},
		{"a static finding shows the trace event its verdict cites", 0, []sarifCodeFlow{npmFlow}},
		{"an attempt with no ancestry or known cause", 2, []sarifCodeFlow{{
			Message: msg("build:builder:step 2: /bin/sh -c npm ci"),
			ThreadFlows: []sarifThreadFlow{{Locations: []sarifThreadFlowLocation{
				{Location: sarifLocation{Message: msg("build:builder:step 2: pid 5 tried to run /bin/sh -c npm ci (cause: unknown)")}, ExecutionOrder: 1, Kinds: []string{"call"},
					Properties: &stepProps{Phase: "build:builder:step 2", PID: 5, Argv: []string{"/bin/sh", "-c", "npm ci"}, Attempted: true, Cause: "unknown"}},
			}}},
		}}},
		{"an event the facts do not hold", 3, []sarifCodeFlow{{
			ThreadFlows: []sarifThreadFlow{{Locations: []sarifThreadFlowLocation{
				{Location: sarifLocation{Message: msg("boot: pid 40: sh -c true")}, ExecutionOrder: 1, Kinds: []string{"call"},
					Properties: &stepProps{Phase: "boot", PID: 40, Command: "sh -c true"}},
			}}},
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, results[tc.res].CodeFlows); diff != "" {
				t.Errorf("code flows (-want +got):\n%s", diff)
			}
		})
	}
	if got := results[1].RelatedLocations; len(got) != 1 || got[0].PhysicalLocation.ArtifactLocation.URI != "package.json" {
		t.Errorf("the cause's file evidence is not a related location: %+v", got)
	}
}

func TestSARIFRunProperties(t *testing.T) {
	t.Parallel()
	blocked := imageVerdict{Verdict: probe.Blocked,
		Blockers: []blockerBrief{{ID: "stub.warned", Rule: "exec_form", Fix: `CMD ["node", "server.js"]`}}}
	root := imageVerdicts{Dockerfile: "Dockerfile", Target: "1", Why: "the only Dockerfile; its last stage",
		Verdicts: map[string]imageVerdict{"distroless_readiness": blocked}}
	tests := []struct {
		name       string
		ctx        func() (*Context, *probe.Registry)
		wantImages []imageVerdicts
		wantTop    string
	}{
		{"the judged image", sampleContext, []imageVerdicts{root}, "blocked"},
		{"every image", allImagesContext, []imageVerdicts{root, {Dockerfile: "worker/Dockerfile", Target: "run", Why: "--all-images",
			Verdicts: map[string]imageVerdict{"distroless_readiness": {Verdict: probe.Ready, Confirmed: true}}}}, "blocked"},
		{"no Dockerfile", func() (*Context, *probe.Registry) {
			c, reg := sampleContext()
			c.Image = nil
			c.Assessments = map[string]probe.Assessment{"distroless_readiness": {Verdict: probe.Unknown, Reason: "no Dockerfile"}}
			return c, reg
		}, nil, "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, reg := tc.ctx()
			_, b := encodeSARIF(t, c, reg)
			var log struct {
				Runs []struct {
					Properties struct {
						Readiness string          `json:"distroless_readiness"`
						Images    []imageVerdicts `json:"images"`
					} `json:"properties"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(b, &log); err != nil {
				t.Fatal(err)
			}
			p := log.Runs[0].Properties
			if p.Readiness != tc.wantTop {
				t.Errorf("distroless_readiness = %q, want %q", p.Readiness, tc.wantTop)
			}
			if diff := cmp.Diff(tc.wantImages, p.Images); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
}
