package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/codegenie/codegenie/internal/fleet"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// temporalFlags are the flags that reach a Temporal server and the shared
// result store.
type temporalFlags struct {
	addr, namespace, store string
	tlsCA, tlsCert, tlsKey string
	tlsServerName          string
	// storeAt is the store open opened.
	storeAt string
}

// apiKeyEnv names the environment variable of the Temporal API key. It is
// not a flag, so that it shows in no process list, and it is never
// printed.
const apiKeyEnv = "CODEGENIE_TEMPORAL_API_KEY"

func (f *temporalFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.addr, "temporal", os.Getenv("CODEGENIE_TEMPORAL"), "Temporal frontend HOST:PORT: run on Temporal workers instead of this process (env CODEGENIE_TEMPORAL)")
	fl.StringVar(&f.namespace, "namespace", envOr("CODEGENIE_TEMPORAL_NAMESPACE", "default"), "Temporal namespace (env CODEGENIE_TEMPORAL_NAMESPACE)")
	fl.StringVar(&f.tlsCA, "temporal-tls-ca", os.Getenv("CODEGENIE_TEMPORAL_TLS_CA"), "PEM file of the CAs that sign the Temporal server's certificate; turns TLS on (env CODEGENIE_TEMPORAL_TLS_CA; default with TLS: the system's CAs)")
	fl.StringVar(&f.tlsCert, "temporal-tls-cert", os.Getenv("CODEGENIE_TEMPORAL_TLS_CERT"), "PEM client certificate for mutual TLS with Temporal, with --temporal-tls-key (env CODEGENIE_TEMPORAL_TLS_CERT)")
	fl.StringVar(&f.tlsKey, "temporal-tls-key", os.Getenv("CODEGENIE_TEMPORAL_TLS_KEY"), "PEM key of --temporal-tls-cert (env CODEGENIE_TEMPORAL_TLS_KEY)")
	fl.StringVar(&f.tlsServerName, "temporal-tls-server-name", "", "the name the Temporal server's certificate must hold (default: the host of --temporal)")
	fl.StringVar(&f.store, "store", os.Getenv("CODEGENIE_RESULT_STORE"), "the result store every worker and client shares: a directory on a shared filesystem (or file:///path), or s3://bucket/prefix?endpoint=URL&region=R with credentials from the AWS environment (env CODEGENIE_RESULT_STORE; default: results/ in the cache directory)")
}

// sourceFlags say how a fleet run names its services' code to workers.
type sourceFlags struct {
	fetch, allowDirty, submodules bool
}

func (f *sourceFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&f.fetch, "workers-fetch", false, "with --temporal: name each checkout to the workers by its remote URL and HEAD commit, which they fetch into their own checkout cache, instead of by its path here (for workers that share no filesystem with this host)")
	fl.BoolVar(&f.allowDirty, "allow-dirty", false, "with --workers-fetch: a checkout with uncommitted changes or an unpushed HEAD goes to the workers as a snapshot of its files in --store, instead of being refused")
	fl.BoolVar(&f.submodules, "submodules", false, "with --workers-fetch: the workers fetch each commit's git submodules too, from the hosts each worker allows (worker --git-submodule-hosts); without it a submodule's folder is empty on the workers")
}

// sources resolves each service's checkout (once per folder) for workers
// that fetch it; nil without --workers-fetch.
func (f *sourceFlags) sources(ctx context.Context, st fleet.ResultStore, services []portfolio.Service) ([]fleet.Source, error) {
	if !f.fetch {
		if f.allowDirty || f.submodules {
			return nil, usageErr("--allow-dirty and --submodules need --workers-fetch")
		}
		return nil, nil
	}
	out := make([]fleet.Source, len(services))
	seen := map[string]fleet.Source{}
	for i, svc := range services {
		if svc.Skip != "" || svc.Fail != "" {
			continue
		}
		src, ok := seen[svc.Dir]
		if !ok {
			var err error
			if src, err = fleet.Resolve(ctx, svc.Dir, f.allowDirty, st); err != nil {
				if errors.Is(err, fleet.ErrDirty) {
					return nil, usageErr("%v", err)
				}
				return nil, fmt.Errorf("service %s: %w", svc.ID, err)
			}
			src.Submodules = f.submodules && src.Snapshot == ""
			seen[svc.Dir] = src
		}
		out[i] = src
	}
	return out, nil
}

// open dials Temporal and opens the result store; closeClient closes both.
func (f *temporalFlags) open(ctx context.Context, g *globals) (*fleet.Client, error) {
	if f.addr == "" {
		return nil, usageErr("--temporal HOST:PORT is required (or CODEGENIE_TEMPORAL)")
	}
	st, at, err := openResultStore(ctx, g, f.store)
	if err != nil {
		return nil, err
	}
	f.storeAt = at
	cfg := fleet.Config{HostPort: f.addr, Namespace: f.namespace, Logger: g.logger(), TLSCAFile: f.tlsCA, TLSCertFile: f.tlsCert, TLSKeyFile: f.tlsKey,
		TLSServerName: f.tlsServerName, APIKey: os.Getenv(apiKeyEnv)}
	if err := cfg.Validate(); err != nil {
		closeStore(st)
		return nil, usageErr("--temporal: %v (--temporal-tls-cert and --temporal-tls-key go together)", err)
	}
	c, err := fleet.Dial(ctx, cfg, st)
	if err != nil {
		closeStore(st)
		return nil, err
	}
	return c, nil
}

// openResultStore opens --store (results/ in the cache directory when it
// is empty), and says where it is.
func openResultStore(ctx context.Context, g *globals, flag string) (fleet.ResultStore, string, error) {
	loc, err := resultStoreDir(g, flag)
	if err != nil {
		return nil, "", err
	}
	st, err := fleet.OpenStore(ctx, loc)
	if err != nil {
		return nil, "", usageErr("--store: %v", err)
	}
	at := loc
	switch s := st.(type) {
	case *fleet.FSStore:
		at = s.Dir()
	case *fleet.BlobStore:
		at = s.String()
	}
	return st, at, nil
}

func closeStore(st fleet.ResultStore) {
	if c, ok := st.(io.Closer); ok {
		_ = c.Close()
	}
}

func closeClient(c *fleet.Client) {
	c.Close()
	closeStore(c.Store)
}

// resultStoreDir is --store, else results/ in the cache directory.
func resultStoreDir(g *globals, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	base, err := g.cacheBase()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "results"), nil
}

// runPortfolioTemporal starts the portfolio's workflow and, unless
// --detach, follows it to the end and writes its outputs as a local run
// does.
func runPortfolioTemporal(ctx context.Context, g *globals, f *portfolioFlags, services []portfolio.Service, failOn map[probe.Verdict]bool) error {
	c, err := f.tf.open(ctx, g)
	if err != nil {
		return err
	}
	defer closeClient(c)
	s := f.settings()
	sandboxTier := !f.gc.noSandbox
	// The digests cover the pipeline configuration a worker's runner
	// gets from these settings, as in a local run.
	ds := s
	ds.NoCache, ds.Migrate = true, false
	r, releaseDeps, err := portfolioRunner(g, ds, nil)
	if err != nil {
		return err
	}
	releaseDeps() // only the settings are needed: nothing is fetched
	dg := portfolio.NewDigester(portfolio.Settings(r.Options, sandboxTier, s.Migrate))
	digests := make([]string, len(services))
	for i, svc := range services {
		if digests[i], err = dg.Digest(svc); err != nil {
			return err
		}
	}
	if f.concurrency < 1 || f.batch < 1 || f.batch > fleet.MaxBatch || f.staticHB <= 0 || f.sandboxHB <= 0 {
		return usageErr("--concurrency must be at least 1, --batch between 1 and %d, and the heartbeats positive", fleet.MaxBatch)
	}
	static, sandboxT := fleet.DefaultStatic, fleet.DefaultSandbox
	static.Heartbeat, sandboxT.Heartbeat = f.staticHB, f.sandboxHB
	// An attempt runs the pipeline, then with --migrate the migration, each
	// bounded by --service-timeout.
	perAttempt := f.serviceTimeout + time.Minute
	if f.migrate {
		perAttempt += f.serviceTimeout
	}
	static.StartToClose = max(static.StartToClose, perAttempt)
	sandboxT.StartToClose = max(sandboxT.StartToClose, perAttempt)
	sources, err := f.src.sources(ctx, c.Store, services)
	if err != nil {
		return err
	}
	started, err := c.Start(ctx, services, digests, fleet.StartOptions{Settings: s, Sandbox: sandboxTier, RetryFailed: f.retryFailed,
		Concurrency: f.concurrency, Batch: f.batch, Static: static, SandboxT: sandboxT, Sources: sources})
	if err != nil {
		return err
	}
	if f.detach {
		return writeJSON(g.stdout, started)
	}
	fmt.Fprintf(g.stderr, "portfolio: workflow %s (run %s) on %s; Ctrl-C leaves it running ('codegenie portfolio status %s')\n", started.ID, started.RunID, f.tf.addr, started.ID)
	prog := newPortfolioProgress(g.stderr, g.stderrTTY && os.Getenv("CI") == "", os.Getenv("CI") != "", len(services))
	snap, err := c.Follow(ctx, started.ID, fleet.FollowOptions{Observe: prog.observe, Notify: func(n fleet.Notice) { printNotice(g.stderr, n) }})
	prog.finish()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return &ExitError{Code: ExitCanceled, Err: fmt.Errorf("left the portfolio workflow %s running: 'codegenie portfolio status %s' follows it", started.ID, started.ID)}
		}
		return err
	}
	return reportSnapshot(ctx, g, c, snap, f.out, failOn)
}

// printNotice says what a Notice is about on stderr.
func printNotice(w io.Writer, n fleet.Notice) {
	switch n.Kind {
	case fleet.NoticeNotAnswering:
		fmt.Fprintf(w, "portfolio: %v; retrying\n", n.Err)
	case fleet.NoticeAnswersAgain:
		fmt.Fprintf(w, "portfolio: the workflow answers again after %s\n", n.Down.Round(time.Second))
	case fleet.NoticeNoPoller:
		how := "codegenie worker --tier static'"
		if n.Tier == portfolio.TierSandbox {
			how = "codegenie worker --tier sandbox' beside a gate-control"
		}
		fmt.Fprintf(w, "portfolio: no worker polls the task queue %s, so its services wait: start '%s\n", n.Queue, how)
	case fleet.NoticeInvalid:
	}
}

// reportSnapshot writes a workflow's outputs into out as a local run does.
func reportSnapshot(ctx context.Context, g *globals, c *fleet.Client, snap *fleet.Snapshot, out string, failOn map[probe.Verdict]bool) error {
	r, err := c.Report(ctx, snap)
	if err != nil {
		return err
	}
	return writePortfolio(g, out, r.Tiers, r.Records, r.SARIF, failOn)
}

func writeJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

func newCmdPortfolioStatus(g *globals) *cobra.Command {
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   "status WORKFLOW-ID",
		Short: "Print a Temporal portfolio run's status and counts as JSON",
		Long: `status reads a portfolio workflow started with 'portfolio --temporal' back from
the server and prints its status (running, completed, ...) and its services'
counts by state and verdict, and how many results were reused, as JSON.`,
		Example: `  codegenie portfolio status --temporal 127.0.0.1:7233 codegenie-portfolio-3f2a9c0d41b7e6a15c22
  codegenie portfolio status --temporal 127.0.0.1:7233 "$ID" | jq .by_state`,
		Args: exactArgs(1, "the workflow ID that 'portfolio --temporal --detach' printed"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, snap, err := tf.read(cmd.Context(), g, args[0])
			if snap == nil {
				return err
			}
			closeClient(c)
			// A workflow that failed, or is paused, still has a status to
			// print; the error follows it (exit 1).
			type status struct {
				ID        string         `json:"workflow_id"`
				RunID     string         `json:"run_id"`
				Status    string         `json:"status"`
				Closed    bool           `json:"closed"`
				Total     int            `json:"total"`
				ByState   map[string]int `json:"by_state"`
				ByVerdict map[string]int `json:"by_verdict"`
				Reused    int            `json:"reused"`
			}
			s := status{ID: snap.ID, RunID: snap.RunID, Status: snap.Status, Closed: snap.Closed, Total: len(snap.Outcomes),
				ByState: map[string]int{}, ByVerdict: map[string]int{}}
			for _, o := range snap.Outcomes {
				s.ByState[o.State.String()]++
				if o.Verdict != "" && o.State == portfolio.StateDone {
					s.ByVerdict[string(o.Verdict)]++
				}
				if o.Reused {
					s.Reused++
				}
			}
			if werr := writeJSON(g.stdout, s); werr != nil {
				return werr
			}
			return err
		},
	}
	tf.register(cmd.Flags())
	return cmd
}

func newCmdPortfolioReport(g *globals) *cobra.Command {
	var tf temporalFlags
	var out, failOnS string
	cmd := &cobra.Command{
		Use:   "report WORKFLOW-ID",
		Short: "Write a Temporal portfolio run's outputs (portfolio.json, SARIF, report.html)",
		Long: `report reads a portfolio workflow back, with each service's record and SARIF log
from the result store, and writes the outputs a local run writes into --out:
portfolio.json, sarif/, portfolio.sarif, patches/ and report.html. stdout gets
the totals as JSON. A run still going is reported as far as it got (its
unfinished services are queued or running). The exit codes are the local
run's: 0 when every judged service is ready (or none has a --fail-on
verdict), 1 otherwise.`,
		Example: `  codegenie portfolio report --temporal 127.0.0.1:7233 --out /tmp/pf "$ID" && xdg-open /tmp/pf/report.html`,
		Args:    exactArgs(1, "the workflow ID that 'portfolio --temporal --detach' printed"),
		RunE: func(cmd *cobra.Command, args []string) error {
			failOn, err := parseFailOn(failOnS)
			if err != nil {
				return err
			}
			c, snap, err := tf.read(cmd.Context(), g, args[0])
			if err != nil {
				return err
			}
			defer closeClient(c)
			if !snap.Closed {
				fmt.Fprintf(g.stderr, "portfolio: %s is still %s; reporting what has finished\n", snap.ID, snap.Status)
			}
			return reportSnapshot(cmd.Context(), g, c, snap, out, failOn)
		},
	}
	fl := cmd.Flags()
	tf.register(fl)
	fl.StringVar(&out, "out", "codegenie-portfolio", "the folder to write portfolio.json, sarif/ and report.html into")
	fl.StringVar(&failOnS, "fail-on", "", "exit 1 only when a service has one of these verdicts: blocked, unknown, ready_after_rewrite (comma-separated)")
	return cmd
}

// read reads a portfolio workflow back; an ID that names none is a usage
// error. With a snapshot, the caller closes the client.
func (f *temporalFlags) read(ctx context.Context, g *globals, id string) (*fleet.Client, *fleet.Snapshot, error) {
	c, err := f.open(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	snap, err := c.Read(ctx, id)
	if snap == nil {
		closeClient(c)
		if errors.Is(err, fleet.ErrNoWorkflow) {
			return nil, nil, &ExitError{Code: ExitUsage, Err: err}
		}
		return nil, nil, err
	}
	// A snapshot with an error is a workflow that did not complete: what
	// is known of it, and why.
	return c, snap, err
}

type workerFlags struct {
	tf           temporalFlags
	tier         string
	parallel     int
	heavyTimeout time.Duration
	drain        time.Duration
	gc           gateControlFlags
	checkouts    string
	cacheSize    int64
	allowLocal   bool
	credHelper   string
	tokenFile    string
	fetchTimeout time.Duration
	subHosts     []string
}

func newCmdWorker(g *globals) *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker --temporal HOST:PORT --tier static|sandbox",
		Short: "Run portfolio activities for Temporal: the static tier anywhere, the sandbox tier beside a gate-control",
		Long: `worker polls a Temporal server for the activities of 'portfolio --temporal'
runs, and runs them until SIGTERM or SIGINT.

--tier static runs the workflow and the static tier (task queue
codegenie-static). It needs no privilege and runs anywhere the services'
checkouts are readable at the paths the client discovered them at (a shared
filesystem, or the same host), or, for a portfolio run with --workers-fetch,
anywhere that reaches the git server: it then fetches each repository's
commit into --checkout-cache, running none of the repository's hooks or
filters, with credentials from --git-credential-helper or --git-token-file.

--tier sandbox runs the traced build and boot (task queue codegenie-sandbox).
It is a client of gate-control, as gather is: pass --gate-control (its socket
or HOST:PORT), or, as root, it starts a private gate-control child. It holds
no sandbox privilege itself.

With a managed Temporal service, or any server behind TLS, give
--temporal-tls-ca (and --temporal-tls-cert and --temporal-tls-key for mutual
TLS), and the API key, if it takes one, in the environment variable
CODEGENIE_TEMPORAL_API_KEY (sent only over TLS, never printed). The client
commands take the same flags.

Every worker and the client share --store, the content-addressed result
store: each finished service's record and SARIF log are kept there and bound
to the service's inputs digest, so a retried activity, or the same portfolio
run again, reuses the result instead of doing the work. Each activity is one
line on stderr.`,
		Example: `  temporal server start-dev --ip 127.0.0.1 --port 7233 --headless --db-filename /var/lib/codegenie/temporal.db &
  codegenie worker --temporal 127.0.0.1:7233 --tier static --store /srv/codegenie/results
  codegenie worker --temporal 127.0.0.1:7233 --tier static --store 's3://results/codegenie?region=eu-west-1' \
    --checkout-cache /var/cache/codegenie/checkouts --git-token-file /run/secrets/git-token
  sudo codegenie worker --temporal 127.0.0.1:7233 --tier sandbox --gate-control /run/codegenie/gate-control.sock --store /srv/codegenie/results
  CODEGENIE_TEMPORAL_API_KEY="$(cat /run/secrets/temporal-key)" codegenie worker --temporal ns.tmprl.example:7233 --namespace ns \
    --temporal-tls-ca /etc/ssl/certs/ca-certificates.crt --tier static --store 's3://results/codegenie?region=eu-west-1'`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runWorker(cmd.Context(), g, &f) },
	}
	fl := cmd.Flags()
	f.tf.register(fl)
	fl.StringVar(&f.tier, "tier", "", "the tier to run: static or sandbox")
	fl.IntVar(&f.parallel, "parallel", 0, "activities at a time (default: GOMAXPROCS for static, one per two cores for sandbox)")
	fl.DurationVar(&f.heavyTimeout, "heavy-timeout", pipeline.DefaultHeavyTimeout, "sandbox tier: the private gate-control's cap on a spawn's timeout")
	fl.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "on SIGTERM or SIGINT, how long running activities may finish; then they are canceled and Temporal runs them elsewhere")
	f.gc.register(fl, "sandbox tier: the gate-control that runs the sandboxes")
	fl.StringVar(&f.checkouts, "checkout-cache", os.Getenv("CODEGENIE_CHECKOUT_CACHE"), "the folder of this worker's checkouts of portfolios run with --workers-fetch, one per repository and commit; one worker owns it (env CODEGENIE_CHECKOUT_CACHE; default: checkouts/ in the cache directory)")
	fl.Int64Var(&f.cacheSize, "checkout-cache-bytes", 20<<30, "the checkout cache's size: beyond it, the least recently used checkouts that no activity holds are removed")
	fl.DurationVar(&f.fetchTimeout, "checkout-fetch-timeout", fleet.DefaultFetchTimeout, "how long one fetch may take before the git server counts as unreachable and the activity is retried")
	fl.BoolVar(&f.allowLocal, "allow-local-git", false, "fetch from local paths and file:// URLs too (tests); never ext:: or another command transport")
	fl.StringVar(&f.credHelper, "git-credential-helper", os.Getenv("CODEGENIE_GIT_CREDENTIAL_HELPER"), "the git credential helper of every fetch ('store --file F', '!cmd'); git's own global and system configuration is not read (env CODEGENIE_GIT_CREDENTIAL_HELPER)")
	fl.StringSliceVar(&f.subHosts, "git-submodule-hosts", nil, "the hosts (name, or host:port) this worker fetches git submodules from, for portfolios run with --submodules; by the same rules as every fetch, and none by default")
	fl.StringVar(&f.tokenFile, "git-token-file", os.Getenv("CODEGENIE_GIT_TOKEN_FILE"), "a file holding an https token for the git server, sent as the x-access-token user's password (env CODEGENIE_GIT_TOKEN_FILE)")
	return cmd
}

func runWorker(ctx context.Context, g *globals, f *workerFlags) error {
	var tier portfolio.Tier
	switch f.tier {
	case string(portfolio.TierStatic), string(portfolio.TierSandbox):
		tier = portfolio.Tier(f.tier)
	case "":
		return usageErr("--tier is required: static or sandbox")
	default:
		return usageErr("--tier %q: want static or sandbox", f.tier)
	}
	if f.parallel < 0 || f.drain < 0 {
		return usageErr("--parallel and --drain-timeout must not be negative")
	}
	n := f.parallel
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
		if tier == portfolio.TierSandbox {
			n = max(1, runtime.NumCPU()/2)
		}
	}
	c, err := f.tf.open(ctx, g)
	if err != nil {
		return err
	}
	defer closeClient(c)
	var sb sandbox.Client
	release := func() {}
	if tier == portfolio.TierSandbox {
		if sb, release, err = sandboxFor(g, &f.gc, f.heavyTimeout); err != nil {
			return err
		}
		if sb == nil {
			return usageErr("a sandbox worker needs a gate-control: pass --gate-control SOCKET (or run as root for a private one)")
		}
	}
	defer release()
	log := slog.New(slog.NewTextHandler(g.stderr, nil))
	co := &fleet.Checkouts{Root: f.checkouts, MaxBytes: f.cacheSize, AllowLocal: f.allowLocal, CredentialHelper: f.credHelper, TokenFile: f.tokenFile, Store: c.Store, FetchTimeout: f.fetchTimeout, SubmoduleHosts: f.subHosts}
	if co.Root == "" {
		base, err := g.cacheBase()
		if err != nil {
			return err
		}
		co.Root = filepath.Join(base, "checkouts")
	}
	if f.fetchTimeout <= 0 || f.cacheSize < 0 {
		return usageErr("--checkout-fetch-timeout must be positive and --checkout-cache-bytes not negative")
	}
	if f.tokenFile != "" {
		if _, err := os.Stat(f.tokenFile); err != nil {
			return usageErr("--git-token-file: %v", err)
		}
	}
	if err := co.CleanTemporary(); err != nil {
		return fmt.Errorf("--checkout-cache %s: %w", co.Root, err)
	}
	// A runner lives as long as the worker; what it holds (a temporary
	// dependency folder, for settings without a cache) goes when it stops.
	var (
		mu       sync.Mutex
		releases []func()
	)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, release := range releases {
			release()
		}
	}()
	a := &fleet.Activities{Store: c.Store, Logger: log, Checkouts: co, Runner: func(s fleet.Settings) (*portfolio.Runner, error) {
		if s.Version != Version {
			log.Warn("the portfolio's client is another version: results may differ from a local run", "client", s.Version, "worker", Version)
		}
		r, release, err := portfolioRunner(g, s, sb)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		releases = append(releases, release)
		mu.Unlock()
		return r, nil
	}}
	w := c.NewWorker(tier, a, fleet.WorkerOptions{Parallel: n, Drain: f.drain})
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker: %w", err)
	}
	log.Info("worker ready", "tier", tier, "queue", fleet.Queue(tier), "temporal", f.tf.addr, "namespace", f.tf.namespace, "parallel", n, "store", f.tf.storeAt, "checkouts", co.Root)
	<-ctx.Done()
	log.Info("worker stopping: running activities may finish", "drain_timeout", f.drain)
	w.Stop()
	ran, reused := a.Counts()
	log.Info("worker stopped", "ran", ran, "reused", reused)
	return nil
}
