package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report/sariftest"
)

func sampleContext() (*Context, *probe.Registry) {
	reg := registry()
	c := &Context{
		SchemaVersion: SchemaVersion, Codegenie: "t", Repo: "/repo with space",
		Assessments: map[string]probe.Assessment{"distroless_readiness": {
			Verdict: probe.Blocked,
			Blockers: []probe.Blocker{{ID: "stub.warned", Kind: probe.ShellAtRuntime, Title: "t",
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

func TestSARIFValidatesAgainstTheSchema(t *testing.T) {
	t.Parallel()
	schema := sariftest.Schema(t)
	c, reg := sampleContext()
	var buf bytes.Buffer
	if err := EncodeSARIF(&buf, c, reg); err != nil {
		t.Fatal(err)
	}
	sariftest.Validate(t, buf.Bytes())
	// The validator must be able to fail: a log without runs is invalid.
	bad, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"version": "2.1.0"}`)))
	if err := schema.Validate(bad); err == nil {
		t.Fatal("the schema accepted a log without runs: the validation proves nothing")
	}
}

func TestSARIFContent(t *testing.T) {
	t.Parallel()
	c, reg := sampleContext()
	var buf bytes.Buffer
	if err := EncodeSARIF(&buf, c, reg); err != nil {
		t.Fatal(err)
	}
	var log sarifLog
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
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
