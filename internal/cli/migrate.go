package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/migrate"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/udiff"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/gates"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

type migrateFlags struct {
	format      string
	dockerfile  string
	target      string
	targetImage string
	write       bool
	noGates     bool
	noCache     bool
	deps        string
	mirrors     string
	boot        bootFlags
	net         netFlags
	timeout     time.Duration
	probePaths  []string
	gc          gateControlFlags
}

func newCmdMigrate(g *globals) *cobra.Command {
	var f migrateFlags
	cmd := &cobra.Command{
		Use:   "migrate PATH",
		Short: "Rewrite a service's Dockerfile to a distroless image and prove it with gates",
		Long: `migrate rewrites the Dockerfile of the image at PATH (the one gather judges:
--dockerfile and --target pick it the same way) so that it runs on a distroless
Node image, and proves the rewrite. It prints a unified diff, then each gate's
result and evidence.

The rewrite carries out the rule table behind gather's verdict: a service that
gather calls ready_after_rewrite is rewritten; one it calls blocked is refused,
with each blocker and its evidence. Edits are line edits of the original file:
comments and untouched lines stay, and migrate on its own output changes
nothing. Generated files (a Node launcher for start chains, a Node health
check for curl/wget checks) are written beside the app.

The gates build and boot the rewritten image in the sandbox (role: gate,
through gate-control), trace every exec from outside it, and check that it
builds, boots, serves, runs no shell (none attempted either), ships no code
that reaches a shell from its entrypoint (the app and the node_modules read
back from the built image, so a dependency that shells on a path the boot
did not take is caught), passes its HEALTHCHECK, and answers requests as
the original image does. A migration is
done only when every gate passes. --no-gates skips them: the output then says
"unproven".

The gates' builds also measure both images, read from the built image and
never run: size (uncompressed layers), layer count, OS packages (dpkg or apk
database), setuid/setgid files and shells. The output shows them before and
after (JSON: .gates.images; SARIF: the run's "images" property); an original
that does not build here is "unknown", never zero.

--write applies the rewrite to PATH atomically, and only when nothing was
refused and every gate passed (or with --no-gates).

Exit codes:
  0  migrated, and every gate passed (or nothing to change)
  1  refused, or a gate failed
  2  bad usage or input`,
		Example: `  codegenie migrate ./my-service
  codegenie migrate --write ./my-service
  codegenie migrate --no-gates --format diff ./my-service > distroless.patch && git -C my-service apply ../distroless.patch
  codegenie migrate --deps lockfile ./my-service   # judge the dependencies the lockfile pins before rewriting
  codegenie migrate --target-image gcr.io/distroless/nodejs24-debian13 --probe-path /healthz ./my-service
  codegenie migrate --format json ./my-service | jq '.gates.gates[] | {gate, status}'`,
		Args: exactArgs(1, "exactly one PATH, the repository directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMigrate(cmd, g, &f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text (a unified diff, then the changes and gates), diff (the patch alone, for git apply), json or sarif")
	fl.StringVar(&f.dockerfile, "dockerfile", "", "the Dockerfile to rewrite, relative to PATH (default: as gather picks it)")
	fl.StringVar(&f.target, "target", "", "the stage that ships (default: as gather picks it)")
	fl.StringVar(&f.targetImage, "target-image", "", "the runtime image (default gcr.io/distroless/nodejs<major>-debian13:nonroot); one of the known distroless, Docker Hardened or Chainguard node images")
	fl.BoolVar(&f.write, "write", false, "apply the rewrite and its generated files to PATH atomically (only when every gate passed, or with --no-gates)")
	fl.BoolVar(&f.noGates, "no-gates", false, "skip the gates: the rewrite is printed as unproven")
	fl.BoolVar(&f.noCache, "no-cache", false, "gather without the cache")
	fl.StringVar(&f.deps, "deps", "none", depsUsage+"; as gather's --deps, so that the verdict the rewrite starts from is the one gather gives with the same flag")
	fl.StringVar(&f.mirrors, "registry-mirror", os.Getenv("CODEGENIE_REGISTRY_MIRRORS"), "registry mirrors, REGISTRY=HOST[:PORT],... (env CODEGENIE_REGISTRY_MIRRORS)")
	f.boot.register(fl, "each gate boot")
	f.net.register(fl)
	fl.DurationVar(&f.timeout, "timeout", pipeline.DefaultHeavyTimeout, "timeout of each gate spawn (build and boot)")
	fl.StringArrayVar(&f.probePaths, "probe-path", nil, "a URL path the gate boots request and compare (repeatable), beyond / and the HEALTHCHECK's")
	f.gc.register(fl, "gate-control that runs the gates")
	return cmd
}

func runMigrate(cmd *cobra.Command, g *globals, f *migrateFlags, dir string) error {
	switch f.format {
	case "text", "json", "sarif", "diff":
	default:
		return usageErr("unknown --format %q: want text, diff, json or sarif", f.format)
	}
	if f.timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	if err := f.boot.validate(); err != nil {
		return err
	}
	mirrors, err := image.ParseMirrors(f.mirrors)
	if err != nil {
		return usageErr("%v", err)
	}
	bn, err := f.net.settings()
	if err != nil {
		return err
	}
	f.gc.noSandbox = f.noGates
	f.gc.serveArgs = f.net.serveArgs()
	sb, release, err := sandboxFor(g, &f.gc, f.timeout)
	if err != nil {
		return err
	}
	defer release()
	if sb == nil && !f.noGates {
		return usageErr("the gates need a sandbox: pass --gate-control, run as root (a private gate-control starts), or pass --no-gates for an unproven rewrite")
	}
	var images image.Resolver = &image.Remote{Mirrors: mirrors}
	gopts := gather.Options{Registry: builtin.NewRegistry(), Version: Version, Task: nodenpm.Task, Dockerfile: f.dockerfile, Target: f.target,
		Logger: g.logger(), HeavyTimeout: f.timeout}
	if !f.noCache {
		if gopts.Cache, err = g.openCache(); err != nil {
			return err
		}
		images = &image.Memo{Resolver: images, Path: filepath.Join(gopts.Cache.Dir(), image.MemoFile), Config: mirrors.String(), Logger: gopts.Logger}
	}
	gopts.Images = images
	var releaseDeps func()
	if gopts.Deps, releaseDeps, err = depsFetcher(f.deps, gopts.Cache); err != nil {
		return err
	}
	defer releaseDeps()
	opts := migrate.Options{
		Gather: gopts,
		RewriteOptions: nodenpm.RewriteOptions{TargetImage: f.targetImage, Digest: images.Digest,
			MirroredBy: func(ref string) string { return strings.Join(mirrors.For(ref), ", ") }},
		Sandbox:         sb,
		NoGates:         f.noGates,
		BootFor:         f.boot.max,
		Settle:          f.boot.settle,
		StepTimeout:     f.boot.step,
		RegistryMirrors: mirrorMap(mirrors),
		ProbePaths:      f.probePaths,
		Timeout:         f.timeout,
		BuildNet:        bn,
	}
	ctx := cmd.Context()
	if g.stderrTTY && os.Getenv("CI") == "" {
		var stop func()
		ctx, _, stop = startLiveStatus(ctx, g.stderr)
		defer stop()
	}
	m, err := migrate.Run(ctx, dir, opts)
	if err != nil {
		var ie *gather.InputError
		var te *nodenpm.TargetError
		if errors.As(err, &ie) || errors.As(err, &te) {
			return &ExitError{Code: ExitUsage, Err: err}
		}
		return err
	}
	var werr error
	if f.write && !m.Result.Refused() && len(m.Result.Files) > 0 && (m.Proven || f.noGates) {
		werr = m.Write(dir)
	}
	switch f.format {
	case "json":
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(migrationJSON(m)); err != nil {
			return err
		}
	case "sarif":
		if err := encodeMigrationSARIF(g.stdout, m); err != nil {
			return err
		}
	case "diff":
		for _, file := range m.Result.Files {
			if _, err := io.WriteString(g.stdout, udiff.Diff(file.Path, file.Old, file.New)); err != nil {
				return err
			}
		}
		if m.Result.Refused() {
			for _, r := range m.Result.Refusals {
				fmt.Fprintf(g.stderr, "refused: %s: %s\n", r.Rule, r.Title)
			}
		}
	default:
		printMigration(g.stdout, m)
	}
	if werr != nil {
		return fmt.Errorf("--write: %w", werr)
	}
	switch {
	case m.Result.Refused():
		return &ExitError{Code: ExitNotReady, Err: errors.New("refused"), Silent: true}
	case m.Gates != nil && !m.Gates.Passed:
		return &ExitError{Code: ExitNotReady, Err: errors.New("a gate failed or was inconclusive"), Silent: true}
	}
	return nil
}

// migrationOut is Migration's JSON with each file's diff.
type migrationOut struct {
	*migrate.Migration
	Diffs []fileDiff `json:"diffs"`
}

type fileDiff struct {
	Path      string `json:"path"`
	Generated bool   `json:"generated,omitempty"`
	Diff      string `json:"diff"`
}

func migrationJSON(m *migrate.Migration) migrationOut {
	out := migrationOut{Migration: m, Diffs: []fileDiff{}}
	for _, f := range m.Result.Files {
		out.Diffs = append(out.Diffs, fileDiff{Path: f.Path, Generated: f.Generated, Diff: udiff.Diff(f.Path, f.Old, f.New)})
	}
	return out
}

// printMigration writes the diff, then the changes, refusals and gates.
func printMigration(w io.Writer, m *migrate.Migration) {
	res := m.Result
	for _, file := range res.Files {
		_, _ = io.WriteString(w, udiff.Diff(file.Path, file.Old, file.New))
	}
	if len(res.Files) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "image: %s (target %s), verdict before: %s\n", m.Image.Dockerfile, m.Image.Target, m.Before)
	if len(res.Changes) > 0 {
		fmt.Fprintf(w, "changes (runtime %s):\n", res.Target.Pinned())
		for _, g := range groupChanges(res.Changes) {
			where := ""
			if len(g.lines) > 0 {
				where = fmt.Sprintf(" %s:%s", res.Dockerfile, strings.Join(g.lines, ", "))
			}
			fmt.Fprintf(w, "  %s%s: %s\n", g.rule, where, g.what)
		}
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if res.Refused() {
		fmt.Fprintf(w, "refused: %d blocker(s) no rewrite removes\n", len(res.Refusals))
		for _, r := range res.Refusals {
			fmt.Fprintf(w, "  %s: %s\n    why: %s\n", r.Rule, r.Title, r.Why)
			for _, e := range r.Evidence {
				if e.File != "" {
					fmt.Fprintf(w, "    at %s:%d\n", e.File, e.Line)
				}
			}
		}
		return
	}
	if len(res.Files) == 0 {
		fmt.Fprintln(w, "nothing to change: the image is ready for distroless as it is")
	}
	if m.Gates == nil {
		if len(res.Files) > 0 {
			fmt.Fprintln(w, "unproven: the gates did not run (--no-gates)")
		}
		if m.Written {
			fmt.Fprintln(w, "written (unproven)")
		}
		return
	}
	fmt.Fprintln(w, "gates (role: gate, in the sandbox):")
	said := map[string]string{} // a detail, by the gate that said it first
	for _, o := range m.Gates.Gates {
		detail := o.Detail
		// A failed build leaves every later gate "not checked" for the
		// same reason: it is said once.
		if core, ok := strings.CutPrefix(detail, "not checked: "); ok && said[core] != "" {
			detail = "not checked: as " + said[core] + " says"
		} else if said[core] == "" {
			said[core] = o.Gate
		}
		fmt.Fprintf(w, "  %-12s %-15s %s\n", o.Status, o.Gate, detail)
		for _, e := range o.Evidence {
			fmt.Fprintf(w, "               %s\n", e)
		}
	}
	if im := m.Gates.Images; im != nil {
		fmt.Fprintln(w, "image, original → rewritten (as the gates built them):")
		for _, l := range im.Lines() {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	switch {
	case !m.Gates.Passed:
		var failed, inconclusive []string
		for _, o := range m.Gates.Gates {
			switch o.Status {
			case gates.Failed:
				failed = append(failed, o.Gate)
			case gates.Inconclusive:
				inconclusive = append(inconclusive, o.Gate)
			case gates.Passed, gates.Skipped:
			}
		}
		var why []string
		if len(failed) > 0 {
			why = append(why, fmt.Sprintf("gate(s) %s failed", strings.Join(failed, ", ")))
		}
		if len(inconclusive) > 0 {
			why = append(why, fmt.Sprintf("gate(s) %s inconclusive: the original image fails here too, or could not be built to compare (each gate's detail says which), so the rewrite is not proven", strings.Join(inconclusive, ", ")))
		}
		fmt.Fprintf(w, "not migrated: %s; nothing was written\n", strings.Join(why, "; "))
	case m.Written:
		fmt.Fprintln(w, "migrated: every gate passed; the rewrite is written")
	case len(res.Files) > 0:
		fmt.Fprintln(w, "migrated: every gate passed (run with --write to apply the rewrite)")
	default:
		fmt.Fprintln(w, "every gate passed")
	}
}

// encodeMigrationSARIF writes the refusals (errors), failed gates
// (errors), passed gates and changes (notes) as SARIF.
func encodeMigrationSARIF(w io.Writer, m *migrate.Migration) error {
	rules := []report.FindingRule{}
	seen := map[string]bool{}
	rule := func(id, summary, help string) {
		if !seen[id] {
			seen[id] = true
			rules = append(rules, report.FindingRule{ID: id, Summary: summary, HelpURI: help})
		}
	}
	var findings []report.Finding
	res := m.Result
	for _, c := range res.Changes {
		id := "rewrite." + c.Rule
		rule(id, readiness.RuleFor(c.Rule).Rewrite, report.HelpBase)
		f := report.Finding{RuleID: id, Level: "note", Message: c.What}
		if c.Line > 0 {
			f.Evidence = []probe.Evidence{{File: res.Dockerfile, Line: c.Line}}
		}
		findings = append(findings, f)
	}
	for _, r := range res.Refusals {
		id := "refused." + r.Rule
		rule(id, readiness.RuleFor(r.Rule).WhyNot, report.HelpBase)
		findings = append(findings, report.Finding{RuleID: id, Level: "error", Message: r.Title + ": " + r.Why, Evidence: r.Evidence})
	}
	if m.Gates != nil {
		for _, g := range gates.All {
			rule("gate."+g.Name, g.Description, "https://github.com/codegenie/codegenie/blob/main/"+g.Doc)
		}
		for _, o := range m.Gates.Gates {
			level := "note"
			switch o.Status {
			case gates.Failed:
				level = "error"
			case gates.Inconclusive:
				level = "warning"
			case gates.Passed, gates.Skipped:
			}
			msg := fmt.Sprintf("%s: %s", o.Status, o.Detail)
			if len(o.Evidence) > 0 {
				msg += " (" + strings.Join(o.Evidence, "; ") + ")"
			}
			findings = append(findings, report.Finding{RuleID: "gate." + o.Gate, Level: level, Message: msg,
				Evidence: []probe.Evidence{{File: res.Dockerfile, Line: 1}}})
		}
	}
	props := map[string]any{"verdict_before": m.Before, "proven": m.Proven, "migrated": m.Migrated, "target": res.Target.Pinned()}
	if m.Gates != nil && m.Gates.Images != nil {
		props["images"] = m.Gates.Images
	}
	return report.EncodeFindings(w, Version, m.Repo, rules, findings, props)
}

// changeGroup is the changes of one rule that say the same thing, with
// the lines of the blockers each removes.
type changeGroup struct {
	rule, what string
	lines      []string
}

// groupChanges folds the changes that differ only in their line (one per
// blocker the same rewrite removes: a files stage that takes two RUN
// steps) into one, in first-seen order, for people; JSON keeps each.
func groupChanges(cs []recipe.Change) []changeGroup {
	var out []changeGroup
	for _, c := range cs {
		i := slices.IndexFunc(out, func(g changeGroup) bool { return g.rule == c.Rule && g.what == c.What })
		if i < 0 {
			out = append(out, changeGroup{rule: c.Rule, what: c.What})
			i = len(out) - 1
		}
		if l := strconv.Itoa(c.Line); c.Line > 0 && !slices.Contains(out[i].lines, l) {
			out[i].lines = append(out[i].lines, l)
		}
	}
	return out
}
