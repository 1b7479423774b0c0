package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
)

type facts struct {
	Name string `json:"name"`
}

type stub struct{}

func (stub) Desc() probe.Desc {
	return probe.Desc{Name: "stub", Version: "1", Heaviness: probe.Light, CacheStrategy: probe.CacheNone,
		NewFacts: func() any { return new(facts) }}
}
func (stub) Run(context.Context, *probe.Repo, *probe.Context) (probe.Output, error) {
	return probe.Output{Confidence: probe.High}, nil
}

func registry() *probe.Registry {
	reg := probe.NewRegistry()
	reg.MustRegister(stub{})
	reg.Warnings().MustRegister(probe.WarningDesc{ID: "stub.warned", Summary: "s"})
	return reg
}

const good = `{
  "schema_version": 1,
  "codegenie_version": "t",
  "repo": "/r",
  "probes": [
    {"probe": "stub", "version": "1", "confidence": "high", "facts": {"name": "x"},
     "warnings": [{"id": "stub.warned", "message": "m"}]}
  ]
}`

func TestDecode(t *testing.T) {
	t.Parallel()
	c, err := Decode(strings.NewReader(good), registry())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Probes) != 1 || c.Probes[0].Probe != "stub" {
		t.Fatalf("decoded %+v", c)
	}
	// Encoding what was decoded gives the same document back.
	raws := [][]byte{}
	for _, p := range c.Probes {
		b, err := probe.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, b)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, c, raws); err != nil {
		t.Fatal(err)
	}
	c2, err := Decode(&buf, registry())
	if err != nil {
		t.Fatalf("decoding the re-encoded context: %v", err)
	}
	if c2.Probes[0].Confidence != probe.High {
		t.Fatalf("round trip lost data: %+v", c2)
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"unknown top-level field": strings.Replace(good, `"repo": "/r",`, `"repo": "/r", "extra": 1,`, 1),
		"unknown result field":    strings.Replace(good, `"version": "1",`, `"version": "1", "extra": 1,`, 1),
		"unknown facts field":     strings.Replace(good, `{"name": "x"}`, `{"name": "x", "extra": 1}`, 1),
		"wrong facts type":        strings.Replace(good, `{"name": "x"}`, `{"name": 5}`, 1),
		"unknown probe":           strings.Replace(good, `"probe": "stub"`, `"probe": "other"`, 1),
		"unknown confidence":      strings.Replace(good, `"confidence": "high"`, `"confidence": "sure"`, 1),
		"low without reason":      strings.Replace(good, `"confidence": "high"`, `"confidence": "low"`, 1),
		"unregistered warning":    strings.Replace(good, `"stub.warned"`, `"stub.other"`, 1),
		"schema version":          strings.Replace(good, `"schema_version": 1`, `"schema_version": 2`, 1),
		"trailing data":           good + "{}",
		"unknown evidence field":  strings.Replace(good, `"message": "m"`, `"message": "m", "evidence": [{"file": "f", "extra": 1}]`, 1),
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := Decode(strings.NewReader(doc), registry()); err == nil {
				t.Errorf("Decode accepted a context with %s", name)
			}
		})
	}
}
