package dockerfileprobe

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/probe/probetest"
)

func runOn(t *testing.T, files map[string]string) probe.Output {
	t.Helper()
	return probetest.Run(t, New(), probetest.Repo(t, files))
}

func TestEveryDockerfileIsReported(t *testing.T) {
	t.Parallel()
	out := runOn(t, map[string]string{
		"Dockerfile":                     "FROM node:22\nCMD node server.js\n",
		"api.Dockerfile":                 "FROM node:22\nHEALTHCHECK CMD curl -f localhost || exit 1\nCMD [\"node\", \"a.js\"]\n",
		"docker/Dockerfile.prod":         "FROM node:22 AS builder\nRUN npm ci\nFROM node:22-slim\nSHELL [\"/bin/bash\", \"-c\"]\nRUN echo hi\nENTRYPOINT node x.js\n",
		"docker/Dockerfile.dockerignore": "node_modules\n",
		"node_modules/x/Dockerfile":      "FROM scratch\n",
	})
	f := out.Facts.(*Facts)
	var paths []string
	for _, file := range f.Files {
		paths = append(paths, file.Path)
	}
	if diff := cmp.Diff([]string{"Dockerfile", "api.Dockerfile", "docker/Dockerfile.prod"}, paths); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	type finding struct {
		ID   string
		File string
		Line int
	}
	var got []finding
	for _, w := range out.Warnings {
		got = append(got, finding{w.ID, w.Evidence[0].File, w.Evidence[0].Line})
	}
	want := []finding{
		{WarnShellFormCmd, "Dockerfile", 2},
		{WarnShellFormHealth, "api.Dockerfile", 2},
		{WarnShellFormEntry, "docker/Dockerfile.prod", 6},
		{WarnShellInstruction, "docker/Dockerfile.prod", 4},
		{WarnShellFormRunFinal, "docker/Dockerfile.prod", 5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if out.Confidence != probe.High {
		t.Errorf("confidence %s", out.Confidence)
	}
}

func TestParseErrorIsLowConfidenceWithLine(t *testing.T) {
	t.Parallel()
	out := runOn(t, map[string]string{
		"Dockerfile":       "FROM node:22\nCOPY onlyone\n",
		"other.Dockerfile": "FROM node:22\nCMD [\"node\", \"a.js\"]\n",
	})
	if out.Confidence != probe.Low || out.Reason != ReasonParseError {
		t.Fatalf("got %s/%s, want low/%s", out.Confidence, out.Reason, ReasonParseError)
	}
	f := out.Facts.(*Facts)
	if len(f.Files) != 2 || f.Files[0].Error == nil || f.Files[0].Error.Line != 2 || f.Files[1].Parsed == nil {
		t.Fatalf("files = %+v", f.Files)
	}
	if out.Evidence[0] != (probe.Evidence{File: "Dockerfile", Line: 2}) {
		t.Errorf("evidence = %+v", out.Evidence)
	}
}

func TestNoDockerfile(t *testing.T) {
	t.Parallel()
	out := runOn(t, map[string]string{"package.json": "{}"})
	if len(out.Warnings) != 1 || out.Warnings[0].ID != WarnNoneFound || out.Confidence != probe.High {
		t.Fatalf("got %+v", out)
	}
}
