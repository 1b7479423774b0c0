package nodenpm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/migrate"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/gates"
)

// TestMigrateNonRootWrites: a service that ran as root and writes its
// settings into /app/config, a folder COPY made, moves to :nonroot (uid
// 65532). The recipe's rewrite chowns the folder in a files stage and
// passes every gate, which boot it as 65532. The control is the same
// rewrite without its chown step: booted as 65532 it cannot write the
// folder, and boots fails, which shows the gates check what the chown is
// for.
func TestMigrateNonRootWrites(t *testing.T) {
	e := setupTrace(t)
	dir, o, m := migrateProven(t, e, "nonroot-config", "gcr.io/distroless/nodejs22-debian13:nonroot@sha256:")
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	// The control: the chown step goes.
	src, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(src), "\n") {
		if !strings.Contains(l, "chown -R 65532:65532 /app/config") {
			kept = append(kept, l)
		}
	}
	if len(kept) == len(strings.SplitAfter(string(src), "\n")) {
		t.Fatalf("the rewrite has no chown of /app/config:\n%s", src)
	}
	controlFailsBoots(t, e, o, dir, []byte(strings.Join(kept, "")))
}

// controlFailsBoots writes control as dir's Dockerfile, runs the gates on
// it, and checks that boots fails with EACCES: the service cannot write
// where it writes.
func controlFailsBoots(t *testing.T, e *traceEnv, o migrate.Options, dir string, control []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), control, 0o644); err != nil {
		t.Fatal(err)
	}
	parsed, err := dockerfile.Parse("Dockerfile", control)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := gates.Run(t.Context(), e.sandbox, gates.Spec{Migrated: dir, Dockerfile: "Dockerfile", BootFor: o.BootFor,
		RegistryMirrors: o.RegistryMirrors, Timeout: 3 * time.Minute}, parsed, parsed.Final)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed {
		t.Fatalf("the gates passed the control, which cannot write where the service writes:\n%s", control)
	}
	for _, g := range rep.Gates {
		if g.Gate != "boots" {
			continue
		}
		out := g.Detail + "\n" + strings.Join(g.Evidence, "\n")
		if g.Status != gates.Failed || !strings.Contains(out, "EACCES") {
			t.Fatalf("control boots: %s %q, want failed with EACCES", g.Status, out)
		}
		return
	}
	t.Fatal("no boots gate")
}

// TestMigrateLowPortRoot: a service that ran as root on port 80 moves to
// the root variant, distroless :latest, pinned, and passes every gate.
// There is no failing control: the sandbox, like Docker 20.10 and later,
// lets any user bind port 80 (a :nonroot rewrite served there too), so
// only a runtime that keeps ports below 1024 privileged would show the
// failure; the rule decides
// (docs/gates/nonroot.md).
func TestMigrateLowPortRoot(t *testing.T) {
	migrateProven(t, setupTrace(t), "nonroot-low-port", "gcr.io/distroless/nodejs22-debian13:latest@sha256:")
}

// migrateProven migrates a copy of the migrate-e2e fixture name, and
// checks that the rewrite targets an image pinned with the prefix target
// and that every gate passed (but healthcheck: the fixtures have none).
func migrateProven(t *testing.T, e *traceEnv, name, target string) (string, migrate.Options, *migrate.Migration) {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "migrate-e2e", name), dir)
	o := migrateOptions(e)
	m, err := migrate.Run(t.Context(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Result.Refused() || m.Gates == nil {
		t.Fatalf("refused %+v, gates %v", m.Result.Refusals, m.Gates != nil)
	}
	if !strings.HasPrefix(m.Result.Target.Pinned(), target) {
		t.Fatalf("target %s, want %s…", m.Result.Target.Pinned(), target)
	}
	for _, g := range m.Gates.Gates {
		want := gates.Passed
		if g.Gate == "healthcheck" {
			want = gates.Skipped // no HEALTHCHECK
		}
		if g.Status != want {
			t.Errorf("gate %s: %s (%s %v), want %s", g.Gate, g.Status, g.Detail, g.Evidence, want)
		}
	}
	if !m.Proven {
		t.Fatal("the rewrite is not proven")
	}
	return dir, o, m
}

// TestMigrateWorkdirUser: a service whose USER made its WORKDIR owns its
// app directory, and makes a folder there when it starts. The rewrite
// sets that USER before the runtime stage's WORKDIR and passes every gate.
// The control is the same rewrite with the USER after the copies, as
// rewrites were before: the WORKDIR is then made as the target's user,
// node cannot make its folder, and boots fails with EACCES.
func TestMigrateWorkdirUser(t *testing.T) {
	e := setupTrace(t)
	dir, o, m := migrateProven(t, e, "workdir-user", "gcr.io/distroless/nodejs22-debian13:nonroot@sha256:")
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// The control: the USER line that precedes the runtime's WORKDIR moves
	// after the COPY that follows it.
	lines := strings.SplitAfter(string(src), "\n")
	moved := false
	for i := 0; i+2 < len(lines); i++ {
		if lines[i] == "USER node\n" && strings.HasPrefix(lines[i+1], "WORKDIR ") && strings.HasPrefix(lines[i+2], "COPY --from=") {
			lines[i], lines[i+1], lines[i+2] = lines[i+1], lines[i+2], lines[i]
			moved = true
			break
		}
	}
	if !moved {
		t.Fatalf("the rewrite sets no USER before its runtime WORKDIR:\n%s", src)
	}
	controlFailsBoots(t, e, o, dir, []byte(strings.Join(lines, "")))
}
