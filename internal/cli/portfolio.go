package cli

import (
	"github.com/codegenie/codegenie/internal/buildnet"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/deps"
	"github.com/codegenie/codegenie/internal/fleet"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/migrate"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/udiff"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

type portfolioFlags struct {
	net netFlags
	// bn is net's settings, read once the flags are checked.
	bn             *buildnet.Settings
	from           string
	list           bool
	out            string
	migrate        bool
	noCache        bool
	staticN        int
	sandboxN       int
	retryFailed    bool
	rebuildState   bool
	failOn         string
	serviceTimeout time.Duration
	lightTimeout   time.Duration
	heavyTimeout   time.Duration
	boot           bootFlags
	mirrors        string
	gc             gateControlFlags
	tf             temporalFlags
	src            sourceFlags
	detach         bool
	concurrency    int
	batch          int
	staticHB       time.Duration
	sandboxHB      time.Duration
	deps           string
}

func newCmdPortfolio(g *globals) *cobra.Command {
	var f portfolioFlags
	cmd := &cobra.Command{
		Use:   "portfolio [PATH ...] [--from FILE]",
		Short: "Judge every Node service across many repositories, resumably, with an HTML report",
		Long: `portfolio finds every service across repositories and judges each as gather
does. A PATH is a repository checkout (a directory with .git) or a folder of
checkouts (its subdirectories with .git); any other directory is one
checkout. --from FILE lists paths or git URLs, one per line, with # comments;
git URLs (https://, ssh://, file://, user@host:path) are cloned shallowly into
the workspace/ folder of --out, once. A URL that cannot be cloned is listed
as a failed service, with git's reason, and the rest go on. Keep tokens in a
git credential helper ('git config credential.helper'): a URL's userinfo
(https://x-access-token:TOKEN@host/...) is used for the clone but is never
stored or shown (outputs, state store, the clone's .git/config, stderr).

A service is one Dockerfile built for its target (a compose file's
build.target, else the last stage) whose image is a Node image: a node or
distroless node base, or a package.json beside or above the Dockerfile. A
monorepo yields one service per Dockerfile. Test and dev images
(Dockerfile.test, *.cypress, *e2e*, *.dev) are listed as skipped, with the
reason, as are non-Node images.

A codegenie-portfolio.yaml at a checkout's root overrides the target or the
build context of a Dockerfile, or excludes it:

  version: 1
  services:
    - dockerfile: services/api/Dockerfile
      target: runtime
      context: services/api
    - dockerfile: tools/Dockerfile
      exclude: true
      reason: build tooling

It is validated strictly: an unknown key, a wrong type or a Dockerfile that
does not exist is an error naming the file and line (exit 2).

--list prints the discovered services (a table on a terminal, JSON
otherwise) and runs nothing.

Each service runs the same pipeline as gather, with the shared content
cache, in two tiers: the static tier (--static-parallel at a time, default
GOMAXPROCS), then the traced build and boot in the sandbox tier, queued and
bounded by --sandbox-parallel (default one per two cores). --no-sandbox runs
the static tier alone. Each service's state (inputs digest, queued, running,
done, failed or skipped, attempts, result, timings) is kept in a bbolt store
in --out (ADR-0005): interrupt a run (Ctrl-C, kill -9) and run it again, and
it resumes: a service done for the same inputs is not run again, a changed
one is. A service that fails (a panic, a sandbox error, --service-timeout)
is recorded with its reason and the rest go on; --retry-failed reruns those.
A store that cannot be read is reported; --rebuild-state starts it afresh.

Into --out go state.db, portfolio.json (schema-versioned: totals by state
and verdict, blockers by kind, every service with its verdict, blockers,
evidence and timings), sarif/ (one SARIF log per service), portfolio.sarif
(all of them merged, for code-scanning uploads) and report.html. stdout gets
the totals as JSON. Progress goes to stderr: a bar on a terminal, one line
per finished service when CI is set, nothing otherwise.

Exit codes:
  0  every judged service is ready (or, with --fail-on, none has a listed verdict)
  1  some service is not ready, or failed (a URL that cannot be cloned too)
  2  bad input: a missing path, an unreadable --from, an invalid codegenie-portfolio.yaml
 130 interrupted (run again to resume)
--fail-on blocked,unknown fails only on those verdicts (a failed service
counts as unknown); ready_after_rewrite may be listed too.

--migrate also runs 'codegenie migrate' in dry-run on every service whose
verdict is ready_after_rewrite: the rewrite is kept as a patch in patches/
(nothing is written to the checkouts), and with the sandbox tier the gates
prove it there; portfolio.json and report.html show each migration, its gates
and its diff, and what it does to the image (size, OS packages, setuid files,
shells, before and after), summed in the totals ("images").

--temporal HOST:PORT runs the portfolio on Temporal workers instead of this
process ('codegenie worker --tier static|sandbox', ADR-0009): one durable
workflow per portfolio, which survives worker deaths and server restarts.
The command follows it with the same progress display and writes the same
outputs; --detach prints its workflow ID and leaves ('portfolio status ID'
and 'portfolio report ID' read it back). Workers and this command share
--store, the result store every finished service is kept in, so the same
portfolio run again reuses each result.`,
		Example: `  codegenie portfolio --list ~/src/checkouts
  codegenie portfolio --list --from repos.txt | jq -r '.[] | select(.skip == null) | .id'
  printf 'file:///srv/git/shop.git\n# a comment\n../billing\n' > repos.txt && codegenie portfolio --list --from repos.txt
  codegenie portfolio --no-sandbox --out /tmp/pf ~/src/checkouts; xdg-open /tmp/pf/report.html
  codegenie portfolio --no-sandbox --deps none ~/src/checkouts   # scan no dependency code, fetch nothing
  CI=1 codegenie portfolio --from repos.txt --fail-on blocked,unknown
  codegenie portfolio --retry-failed --out /tmp/pf ~/src/checkouts
  codegenie portfolio --migrate --out /tmp/pf ~/src/checkouts && ls /tmp/pf/patches
  jq '.services[] | select(.verdict == "blocked") | .id' /tmp/pf/portfolio.json
  codegenie portfolio --temporal 127.0.0.1:7233 --out /tmp/pf ~/src/checkouts
  ID=$(codegenie portfolio --temporal 127.0.0.1:7233 --detach ~/src/checkouts | jq -r .workflow_id)
  codegenie portfolio --temporal 127.0.0.1:7233 --store s3://results/codegenie --workers-fetch --out /tmp/pf ~/src/checkouts`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPortfolio(cmd, g, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "read paths and git URLs from FILE, one per line (# comments)")
	fl.BoolVar(&f.list, "list", false, "print the discovered services and run nothing")
	fl.StringVar(&f.out, "out", "codegenie-portfolio", "the portfolio folder: state store, clones, portfolio.json, sarif/, report.html")
	fl.BoolVar(&f.migrate, "migrate", false, "migrate each ready_after_rewrite service in dry-run (patches/), proven by the gates in the sandbox tier")
	fl.BoolVar(&f.noCache, "no-cache", false, "run every probe; neither read nor write the cache")
	fl.IntVar(&f.staticN, "static-parallel", runtime.GOMAXPROCS(0), "services in the static tier at a time")
	fl.IntVar(&f.sandboxN, "sandbox-parallel", max(1, runtime.NumCPU()/2), "services in the sandbox tier at a time")
	fl.BoolVar(&f.retryFailed, "retry-failed", false, "rerun the services whose last run failed")
	fl.BoolVar(&f.rebuildState, "rebuild-state", false, "discard the state store and start afresh (the cache still answers unchanged services)")
	fl.StringVar(&f.failOn, "fail-on", "", "exit 1 only when a service has one of these verdicts: blocked, unknown, ready_after_rewrite (comma-separated)")
	fl.DurationVar(&f.serviceTimeout, "service-timeout", 30*time.Minute, "timeout of one service in one tier")
	fl.DurationVar(&f.lightTimeout, "light-timeout", 0, "timeout of each light probe (default: the probe's own, 30s unless it declares more: 10m for the child_process scan, which reads the dependencies' code)")
	fl.DurationVar(&f.heavyTimeout, "heavy-timeout", pipeline.DefaultHeavyTimeout, "timeout of each heavy probe")
	f.boot.register(fl, "the traced boot")
	f.net.register(fl)
	fl.StringVar(&f.mirrors, "registry-mirror", os.Getenv("CODEGENIE_REGISTRY_MIRRORS"), "registry mirrors, REGISTRY=HOST[:PORT],... (env CODEGENIE_REGISTRY_MIRRORS)")
	f.gc.register(fl, "gate-control for the sandbox tier")
	fl.BoolVar(&f.gc.noSandbox, "no-sandbox", false, "run the static tier only: no sandbox, verdicts unconfirmed")
	fl.StringVar(&f.deps, "deps", "lockfile", depsUsage+". Each distinct package version is fetched and scanned once per run")
	f.tf.register(fl)
	f.src.register(fl)
	fl.BoolVar(&f.detach, "detach", false, "with --temporal: print the workflow's ID and leave it running")
	fl.IntVar(&f.concurrency, "concurrency", fleet.DefaultConcurrency, "with --temporal: services in flight at once across the workers")
	fl.IntVar(&f.batch, "batch", fleet.DefaultBatch, "with --temporal: services per workflow run before it continues as new (bounds its history)")
	fl.DurationVar(&f.staticHB, "static-heartbeat", fleet.DefaultStatic.Heartbeat, "with --temporal: a static activity silent this long is retried on another worker")
	fl.DurationVar(&f.sandboxHB, "sandbox-heartbeat", fleet.DefaultSandbox.Heartbeat, "with --temporal: a sandbox activity silent this long is retried on another worker")
	cmd.AddCommand(newCmdPortfolioStatus(g), newCmdPortfolioReport(g))
	return cmd
}

func runPortfolio(cmd *cobra.Command, g *globals, f *portfolioFlags, args []string) error {
	var sources []portfolio.Source
	for _, a := range args {
		sources = append(sources, portfolio.Source{Spec: a})
	}
	if f.from != "" {
		ss, err := portfolio.ReadSources(f.from)
		if err != nil {
			return portfolioErr(err)
		}
		sources = append(sources, ss...)
	}
	failOn, err := parseFailOn(f.failOn)
	if err != nil {
		return err
	}
	if f.staticN < 1 || f.sandboxN < 1 {
		return usageErr("--static-parallel and --sandbox-parallel must be at least 1")
	}
	if f.lightTimeout < 0 || f.heavyTimeout <= 0 || f.serviceTimeout <= 0 {
		return usageErr("timeouts must be positive")
	}
	if err := f.boot.validate(); err != nil {
		return err
	}
	if _, err := image.ParseMirrors(f.mirrors); err != nil {
		return usageErr("%v", err)
	}
	if f.bn, err = f.net.settings(); err != nil {
		return err
	}
	if f.tf.addr != "" && (len(f.bn.Secrets) > 0 || len(f.bn.BootEnv) > 0) {
		return usageErr("--build-secret and --boot-env work in a local run only: their values never travel in a Temporal workflow's history")
	}
	f.gc.serveArgs = f.net.serveArgs()
	if len(sources) == 0 {
		return usageErr("no repositories: pass PATHs or --from FILE; see 'codegenie portfolio --help'")
	}
	if f.tf.addr == "" && f.detach {
		return usageErr("--detach needs --temporal: a local run cannot leave")
	}
	if f.tf.addr == "" && (f.src.fetch || f.src.allowDirty || f.src.submodules) {
		return usageErr("--workers-fetch, --allow-dirty and --submodules need --temporal: a local run reads each checkout where it is")
	}
	sel, ok := builtin.NewRegistry().ImageSelector(nodenpm.Task)
	if !ok {
		return fmt.Errorf("task %s has no image selector", nodenpm.Task)
	}
	d := &portfolio.Discovery{Selector: sel, Workspace: filepath.Join(f.out, "workspace")}
	services, err := d.Discover(cmd.Context(), sources)
	if err != nil {
		return portfolioErr(err)
	}
	if f.list {
		return listServices(g.stdout, g.stdoutTTY, services)
	}
	for _, s := range services {
		if s.Fail != "" {
			fmt.Fprintf(g.stderr, "portfolio: %s: %s (listed failed; the rest go on)\n", s.ID, oneLine(portfolio.Redact(s.Fail)))
		}
	}
	if f.tf.addr != "" {
		return runPortfolioTemporal(cmd.Context(), g, f, services, failOn)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return usageErr("--out %s: %v", f.out, err)
	}
	storePath := filepath.Join(f.out, portfolio.StoreFile)
	if f.rebuildState {
		if err := portfolio.RemoveStore(storePath); err != nil {
			return err
		}
	}
	st, err := portfolio.OpenStore(storePath)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	sb, release, err := sandboxFor(g, &f.gc, f.heavyTimeout)
	if err != nil {
		return err
	}
	defer release()
	r, releaseDeps, err := portfolioRunner(g, f.settings(), sb)
	if err != nil {
		return err
	}
	if f.noCache && r.Options.Deps != nil {
		// No cache to keep the packages in: the portfolio folder keeps
		// them, so a rerun does not fetch them again.
		releaseDeps()
		r.Options.Deps = &deps.Fetcher{Dir: filepath.Join(f.out, "deps")}
	} else {
		defer releaseDeps()
	}
	r.Store, r.StaticWorkers, r.SandboxWorkers, r.RetryFailed = st, f.staticN, f.sandboxN, f.retryFailed
	prog := newPortfolioProgress(g.stderr, g.stderrTTY && os.Getenv("CI") == "", os.Getenv("CI") != "", len(services))
	r.Observe = prog.observe
	recs, _, runErr := r.Run(cmd.Context(), services)
	prog.finish()
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return &ExitError{Code: ExitCanceled, Err: fmt.Errorf("interrupted: run the same command again to resume (state in %s)", storePath)}
		}
		return runErr
	}
	tiers := "static"
	if sb != nil {
		tiers = "static+sandbox"
	}
	return writePortfolio(g, f.out, tiers, recs, st, failOn)
}

// writePortfolio writes a run's outputs into out, prints the totals on
// stdout, and returns the run's exit status.
func writePortfolio(g *globals, out, tiers string, recs []portfolio.Record, src portfolio.SARIFSource, failOn map[probe.Verdict]bool) error {
	doc := portfolio.NewDocument(Version, tiers, time.Now(), recs)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return usageErr("--out %s: %v", out, err)
	}
	if err := portfolio.WriteOutputs(out, src, doc); err != nil {
		return err
	}
	if err := writePortfolioSummary(g.stdout, out, doc); err != nil {
		return err
	}
	if failed(doc, failOn) {
		return &ExitError{Code: ExitNotReady, Err: errNotReady, Silent: true}
	}
	return nil
}

// settings are the flags that configure each service's pipeline, as the
// Temporal workers receive them.
func (f *portfolioFlags) settings() fleet.Settings {
	s := fleet.Settings{Version: Version, LightTimeout: f.lightTimeout, HeavyTimeout: f.heavyTimeout, BootFor: f.boot.max, Settle: f.boot.settle, StepTimeout: f.boot.step,
		ServiceTimeout: f.serviceTimeout, Mirrors: f.mirrors, NoCache: f.noCache, Migrate: f.migrate, Deps: f.deps}
	if f.bn != nil {
		s.BuildEgress, s.BuildPrivate, s.BuildCA, s.BuildSecrets = f.bn.FlagValues(), f.bn.Private, f.bn.CA, f.bn.Secrets
		s.BootEgress, s.BootEnv = f.bn.Boot, f.bn.BootEnv
	}
	return s
}

// portfolioRunner is the runner of a portfolio's settings, with sb as its
// sandbox tier (nil: none): the local mode's, and each Temporal worker's.
func portfolioRunner(g *globals, s fleet.Settings, sb sandbox.Client) (*portfolio.Runner, func(), error) {
	mirrors, err := image.ParseMirrors(s.Mirrors)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	r := &portfolio.Runner{
		Options: gather.Options{
			Registry:        builtin.NewRegistry(),
			Version:         Version,
			Images:          &image.Remote{Mirrors: mirrors},
			RegistryMirrors: mirrorMap(mirrors),
			BootFor:         s.BootFor,
			Settle:          s.Settle,
			StepTimeout:     s.StepTimeout,
			Task:            nodenpm.Task,
			LightTimeout:    s.LightTimeout,
			HeavyTimeout:    s.HeavyTimeout,
			Logger:          g.logger(),
			BuildNet:        buildnet.FromValues(s.BuildEgress, s.BuildPrivate, s.BuildCA, s.BuildSecrets, s.BootEgress, s.BootEnv),
		},
		Sandbox:        sb,
		ServiceTimeout: s.ServiceTimeout,
	}
	if !s.NoCache {
		c, err := g.openCache()
		if err != nil {
			return nil, nil, err
		}
		r.Options.Cache = c
		r.Options.Images = &image.Memo{Resolver: r.Options.Images, Path: filepath.Join(c.Dir(), image.MemoFile),
			Config: mirrors.String(), Logger: r.Options.Logger}
	}
	// The fetcher lives as long as the runner: its per-package scan memo
	// is what makes a portfolio scan each package version once. Without a
	// cache its packages are in a temporary folder that release removes.
	var release func()
	if r.Options.Deps, release, err = depsFetcher(s.Deps, r.Options.Cache); err != nil {
		return nil, nil, err
	}
	if s.Migrate {
		r.Migrate = portfolioMigrate(r.Options, s.HeavyTimeout)
	}
	return r, release, nil
}

// parseFailOn reads --fail-on; empty means "anything not ready".
func parseFailOn(s string) (map[probe.Verdict]bool, error) {
	if s == "" {
		return nil, nil
	}
	out := map[probe.Verdict]bool{}
	for _, v := range strings.Split(s, ",") {
		switch x := probe.Verdict(strings.TrimSpace(v)); x {
		case probe.Blocked, probe.Unknown, probe.ReadyAfterRewrite:
			out[x] = true
		case probe.Ready:
			return nil, usageErr("--fail-on ready: a ready service never fails the run; want blocked, unknown or ready_after_rewrite")
		default:
			return nil, usageErr("--fail-on %q: want blocked, unknown or ready_after_rewrite, comma-separated", v)
		}
	}
	return out, nil
}

// failed reports whether the portfolio's exit code is 1: a judged service
// that is not ready, or, with --fail-on, one with a listed verdict (a
// failed service counts as unknown).
func failed(d *portfolio.Document, failOn map[probe.Verdict]bool) bool {
	for _, e := range d.Services {
		v := e.Verdict
		switch e.State {
		case portfolio.StateSkipped:
			continue
		case portfolio.StateDone:
		case portfolio.StateInvalid, portfolio.StateQueued, portfolio.StateRunning, portfolio.StateFailed:
			v = probe.Unknown
		}
		if failOn == nil && v != probe.Ready || failOn[v] {
			return true
		}
	}
	return false
}

func writePortfolioSummary(w io.Writer, out string, d *portfolio.Document) error {
	s := struct {
		Out      string                  `json:"out"`
		Report   string                  `json:"report"`
		Totals   portfolio.Totals        `json:"totals"`
		Blockers []portfolio.KindSummary `json:"blockers_by_kind"`
	}{out, filepath.Join(out, portfolio.HTMLFile), d.Totals, d.Blockers}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(s)
}

// portfolioProgress reports a run on stderr: a bar with counts per state,
// the running services and an ETA on a terminal; one line per finished
// service in CI; nothing otherwise. Safe for concurrent use.
type portfolioProgress struct {
	mu      sync.Mutex
	w       io.Writer
	bar, ci bool
	total   int
	state   map[string]portfolio.State
	running map[string]time.Time
	start   time.Time
	done    int
	last    time.Time
}

func newPortfolioProgress(w io.Writer, bar, ci bool, total int) *portfolioProgress {
	return &portfolioProgress{w: w, bar: bar, ci: ci && !bar, total: total, state: map[string]portfolio.State{},
		running: map[string]time.Time{}, start: time.Now()}
}

func (p *portfolioProgress) observe(r portfolio.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := r.Service.ID
	prev := p.state[id]
	p.state[id] = r.State
	if r.State == portfolio.StateRunning {
		p.running[id] = time.Now()
	} else {
		delete(p.running, id)
	}
	final := r.State == portfolio.StateDone || r.State == portfolio.StateFailed
	if final && prev == portfolio.StateRunning {
		p.done++
	}
	if p.ci && final && prev == portfolio.StateRunning {
		line := fmt.Sprintf("%s %s", r.State, id)
		switch {
		case r.State == portfolio.StateFailed:
			line += ": " + r.Reason
		case r.Result != nil:
			line += fmt.Sprintf(": %s (%d blockers)", r.Result.Verdict, len(r.Result.Blockers))
		}
		fmt.Fprintf(p.w, "%s [%.0f ms]\n", oneLine(portfolio.Redact(line)), r.Timings.StaticMS+r.Timings.SandboxMS)
	}
	if p.bar && time.Since(p.last) > 100*time.Millisecond {
		p.last = time.Now()
		p.draw()
	}
}

func (p *portfolioProgress) draw() {
	counts := map[portfolio.State]int{}
	for _, s := range p.state {
		counts[s]++
	}
	finished := counts[portfolio.StateDone] + counts[portfolio.StateFailed] + counts[portfolio.StateSkipped]
	const width = 24
	fill := 0
	if p.total > 0 {
		fill = finished * width / p.total
	}
	eta := "?"
	if left := counts[portfolio.StateQueued] + counts[portfolio.StateRunning]; p.done > 0 {
		eta = (time.Since(p.start) / time.Duration(p.done) * time.Duration(left)).Round(time.Second).String()
	}
	var cur []string
	for id := range p.running {
		cur = append(cur, id)
	}
	sort.Strings(cur)
	if len(cur) > 2 {
		cur = append(cur[:2], fmt.Sprintf("+%d", len(cur)-2))
	}
	var parts []string
	for _, s := range portfolio.States {
		parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
	}
	line := fmt.Sprintf("[%s%s] %d/%d %s eta %s %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		finished, p.total, strings.Join(parts, " "), eta, strings.Join(cur, " "))
	if len(line) > 160 {
		line = line[:160]
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
}

func (p *portfolioProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar {
		p.draw()
		fmt.Fprintln(p.w)
	}
}

// portfolioErr maps the portfolio's bad-input errors to exit code 2.
func portfolioErr(err error) error {
	var ie *portfolio.InputError
	if errors.As(err, &ie) {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return err
}

func listServices(w io.Writer, tty bool, services []portfolio.Service) error {
	if !tty {
		if services == nil {
			services = []portfolio.Service{}
		}
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(services)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SERVICE\tSTATUS\tWHY\n")
	n, nFail := 0, 0
	for _, s := range services {
		status, why := "judge", s.Why
		switch {
		case s.Fail != "":
			status, why = "fail", s.Fail
			nFail++
		case s.Skip != "":
			status, why = "skip", s.Skip
		default:
			n++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.ID, status, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d services, %d to judge, %d skipped, %d failed\n", len(services), n, len(services)-n-nFail, nFail)
	return err
}

// portfolioMigrate is the portfolio's dry-run migration: migrate's
// recipe, and its gates when the service ran in the sandbox tier.
func portfolioMigrate(shared gather.Options, timeout time.Duration) portfolio.MigrateFunc {
	return func(ctx context.Context, dir string, o gather.Options, sb sandbox.Client) (*portfolio.Migration, error) {
		opts := migrate.Options{
			Gather:          o,
			Sandbox:         sb,
			NoGates:         sb == nil,
			BootFor:         shared.BootFor,
			Settle:          shared.Settle,
			StepTimeout:     shared.StepTimeout,
			RegistryMirrors: shared.RegistryMirrors,
			ProbePaths:      o.ProbePaths,
			Timeout:         timeout,
			BuildNet:        shared.BuildNet,
		}
		if shared.Images != nil {
			opts.Digest = shared.Images.Digest
		}
		m, err := migrate.Run(ctx, dir, opts)
		if err != nil {
			return nil, err
		}
		out := &portfolio.Migration{Migrated: m.Migrated, Proven: m.Proven}
		var patch strings.Builder
		for _, f := range m.Result.Files {
			patch.WriteString(udiff.Diff(f.Path, f.Old, f.New))
		}
		out.Patch = patch.String()
		for _, r := range m.Result.Refusals {
			out.Refused = append(out.Refused, r.Rule+": "+r.Title+": "+r.Why)
		}
		if m.Gates != nil {
			for _, g := range m.Gates.Gates {
				out.Gates = append(out.Gates, portfolio.GateOutcome{Gate: g.Gate, Status: string(g.Status), Detail: g.Detail})
			}
			out.Images = m.Gates.Images
		}
		return out, nil
	}
}
