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

// TestEachDockerfileIsItsOwnImage: every Dockerfile is listed, and only
// the judged image's instructions are flagged, each image in its turn.
func TestEachDockerfileIsItsOwnImage(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile":                     "FROM node:22\nCMD node server.js\n",
		"api.Dockerfile":                 "FROM node:22\nHEALTHCHECK CMD curl -f localhost || exit 1\nCMD [\"node\", \"a.js\"]\n",
		"docker/Dockerfile.prod":         "FROM node:22 AS builder\nRUN npm ci\nFROM node:22-slim\nSHELL [\"/bin/bash\", \"-c\"]\nRUN echo hi\nENTRYPOINT node x.js\n",
		"docker/Dockerfile.dockerignore": "node_modules\n",
		"node_modules/x/Dockerfile":      "FROM scratch\n",
	})
	type finding struct {
		ID   string
		File string
		Line int
	}
	for _, tc := range []struct {
		ref  probe.ImageRef
		want []finding
	}{
		{probe.ImageRef{Dockerfile: "Dockerfile", Target: "0"}, []finding{{WarnShellFormCmd, "Dockerfile", 2}}},
		{probe.ImageRef{Dockerfile: "api.Dockerfile", Target: "0"}, []finding{{WarnShellFormHealth, "api.Dockerfile", 2}}},
		{probe.ImageRef{Dockerfile: "docker/Dockerfile.prod", Target: "1"}, []finding{
			{WarnShellFormEntry, "docker/Dockerfile.prod", 6},
			{WarnShellInstruction, "docker/Dockerfile.prod", 4},
			{WarnShellFormRunFinal, "docker/Dockerfile.prod", 5},
		}},
		// The builder target alone: its RUN is in the final stage now.
		{probe.ImageRef{Dockerfile: "docker/Dockerfile.prod", Target: "builder"}, []finding{{WarnShellFormRunFinal, "docker/Dockerfile.prod", 2}}},
	} {
		out := probetest.RunImage(t, New(), repo, tc.ref)
		f := out.Facts.(*Facts)
		var paths []string
		for _, file := range f.Files {
			paths = append(paths, file.Path)
		}
		if diff := cmp.Diff([]string{"Dockerfile", "api.Dockerfile", "docker/Dockerfile.prod"}, paths); diff != "" {
			t.Errorf("%s: files (-want +got):\n%s", tc.ref.Key(), diff)
		}
		if f.Image == nil || f.Image.Dockerfile != tc.ref.Dockerfile || f.Image.Target != tc.ref.Target {
			t.Errorf("%s: judged image %+v", tc.ref.Key(), f.Image)
		}
		var got []finding
		for _, w := range out.Warnings {
			got = append(got, finding{w.ID, w.Evidence[0].File, w.Evidence[0].Line})
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: findings (-want +got):\n%s", tc.ref.Key(), diff)
		}
		if out.Confidence != probe.High {
			t.Errorf("%s: confidence %s", tc.ref.Key(), out.Confidence)
		}
	}
}

// TestOtherImagesParseErrorKeepsConfidence: a Dockerfile that does not
// parse lowers confidence only when it is the judged one.
func TestOtherImagesParseErrorKeepsConfidence(t *testing.T) {
	t.Parallel()
	repo := probetest.Repo(t, map[string]string{
		"Dockerfile":      "FROM node:22\nCMD [\"node\", \"a.js\"]\n",
		"test.Dockerfile": "FROM node:22\nCOPY onlyone\n",
	})
	out := probetest.Run(t, New(), repo)
	if out.Confidence != probe.High {
		t.Errorf("confidence %s (%s), want high: the broken Dockerfile is another image", out.Confidence, out.Detail)
	}
	if ids := probetest.WarningIDs(out); len(ids) != 1 || ids[0] != WarnParseError {
		t.Errorf("warnings %v, want one %s", ids, WarnParseError)
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
