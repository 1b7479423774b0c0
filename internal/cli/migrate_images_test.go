package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/migrate"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/report/sariftest"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/gates"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// imagesMigration is a proven migration whose original image could not be
// built here: its facts are unknown, the rewritten image's are known.
func imagesMigration(before *sandbox.ImageFacts) *migrate.Migration {
	after := &sandbox.ImageFacts{Bytes: 130_541_056, Layers: 3, Packages: 16, PackageDBs: []string{sandbox.PackageDBDpkg}}
	im := &report.ImageChange{Before: before, After: after}
	if before == nil {
		im.BeforeUnknown = "the image was not built here: pull:node:22-alpine failed with exit 125"
	}
	return &migrate.Migration{
		SchemaVersion: migrate.SchemaVersion, Repo: "/src/svc",
		Result: &recipe.Result{Dockerfile: "Dockerfile", Target: recipe.Target{Ref: "gcr.io/distroless/nodejs22-debian13:nonroot"},
			Files: []recipe.File{{Path: "Dockerfile", Old: []byte("FROM node:22\n"), New: []byte("FROM gcr.io/distroless/nodejs22-debian13:nonroot\n")}}},
		Gates:  &gates.Report{Passed: true, Gates: []gates.Outcome{{Gate: "builds", Status: gates.Passed, Detail: "built"}}, Images: im},
		Proven: true, Migrated: true,
	}
}

// TestMigrationImages: migrate's text, JSON and SARIF carry the images
// before and after; an unknown original says unknown, never zero, and the
// SARIF log still validates.
func TestMigrationImages(t *testing.T) {
	t.Parallel()
	before := &sandbox.ImageFacts{Bytes: 316_000_000, Layers: 9, Packages: 65, PackageDBs: []string{sandbox.PackageDBDpkg},
		SetuidCount: 2, Setuid: []string{"/bin/su", "/usr/bin/passwd"}, ShellCount: 2, Shells: []sandbox.Shell{{Path: "/bin/bash"}, {Path: "/bin/sh", Target: "dash"}}}
	for _, tc := range []struct {
		name   string
		before *sandbox.ImageFacts
		text   []string
	}{
		{"known", before, []string{"image, original → rewritten", "size           316 MB → 131 MB (-59%)", "OS packages    65 (dpkg) → 16 (dpkg)",
			"setuid/setgid  2 (/bin/su, /usr/bin/passwd) → none", "shells         2 (/bin/bash, /bin/sh -> dash) → none"}},
		{"unknown original", nil, []string{"size           unknown → 131 MB\n", "OS packages    unknown → 16 (dpkg)",
			"the original image's facts are unknown: the image was not built here: pull:node:22-alpine"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := imagesMigration(tc.before)
			var text bytes.Buffer
			printMigration(&text, m)
			for _, want := range tc.text {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text output lacks %q:\n%s", want, text.String())
				}
			}
			js, err := json.Marshal(migrationJSON(m))
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Gates struct {
					Images struct {
						Before        *sandbox.ImageFacts `json:"before"`
						BeforeUnknown string              `json:"before_unknown"`
						After         *sandbox.ImageFacts `json:"after"`
					} `json:"images"`
				} `json:"gates"`
			}
			if err := json.Unmarshal(js, &out); err != nil {
				t.Fatal(err)
			}
			im := out.Gates.Images
			if im.After == nil || im.After.Bytes != 130_541_056 || (im.Before == nil) != (tc.before == nil) || (im.Before == nil) == (im.BeforeUnknown == "") {
				t.Errorf("json images %+v", im)
			}
			if tc.before == nil && !strings.Contains(string(js), `"before":null`) {
				t.Errorf("json: want before null (unknown), not zeros:\n%s", js)
			}
			var sarif bytes.Buffer
			if err := encodeMigrationSARIF(&sarif, m); err != nil {
				t.Fatal(err)
			}
			sariftest.Validate(t, sarif.Bytes())
			var log struct {
				Runs []struct {
					Properties struct {
						Images *report.ImageChange `json:"images"`
					} `json:"properties"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(sarif.Bytes(), &log); err != nil {
				t.Fatal(err)
			}
			if len(log.Runs) != 1 || log.Runs[0].Properties.Images == nil || log.Runs[0].Properties.Images.After == nil ||
				(log.Runs[0].Properties.Images.Before == nil) != (tc.before == nil) {
				t.Errorf("SARIF run properties lack the images:\n%s", sarif.String())
			}
		})
	}
}

// TestMigrationTextSaysABuildFailureOnce: the gates a failed build leaves
// unchecked say so by naming the gate that gave the reason, not by
// repeating it (seven copies of a long build failure, RoboShop1/r-user);
// JSON keeps each gate's whole detail.
func TestMigrationTextSaysABuildFailureOnce(t *testing.T) {
	t.Parallel()
	m := imagesMigration(nil)
	why := "build:build:step 4 failed with exit -1: the step ran past the step timeout"
	m.Gates = &gates.Report{Gates: []gates.Outcome{
		{Gate: "builds", Status: gates.Failed, Detail: why},
		{Gate: "boots", Status: gates.Failed, Detail: "not checked: " + why},
		{Gate: "no_shell", Status: gates.Failed, Detail: "not checked: " + why},
		{Gate: "serves", Status: gates.Failed, Detail: "not checked: another reason"},
	}}
	m.Proven, m.Migrated = false, false
	var text bytes.Buffer
	printMigration(&text, m)
	out := text.String()
	if n := strings.Count(out, why); n != 1 {
		t.Errorf("the build failure is said %d times, want once:\n%s", n, out)
	}
	for _, want := range []string{"boots           not checked: as builds says", "no_shell        not checked: as builds says", "not checked: another reason"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}
