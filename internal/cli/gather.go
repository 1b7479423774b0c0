package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/codegenie/codegenie/internal/atomicfile"
	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/gatecontrol"
	"github.com/codegenie/codegenie/internal/gatecontrol/client"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

type gatherFlags struct {
	out           string
	format        string
	noCache       bool
	task          string
	lightTimeout  time.Duration
	heavyTimeout  time.Duration
	mirrors       string
	boot          bootFlags
	net           netFlags
	dockerfile    string
	target        string
	allImages     bool
	refreshImages bool
	probePaths    []string
	gc            gateControlFlags
	deps          string
}

// gateControlFlags say where a command's sandbox is.
type gateControlFlags struct {
	addr, key, ca, cert, certKey string
	noSandbox                    bool
	// serveArgs are more flags for a private gate-control.
	serveArgs []string
}

// register adds the gate-control flags; purpose says what the command
// runs through it ("gate-control that runs the gates").
func (f *gateControlFlags) register(fl *pflag.FlagSet, purpose string) {
	fl.StringVar(&f.addr, "gate-control", os.Getenv("CODEGENIE_GATE_CONTROL"), purpose+": a unix socket path, or HOST:PORT for TLS (env CODEGENIE_GATE_CONTROL); default: as root, a private gate-control child")
	fl.StringVar(&f.key, "gate-control-key", envOr("CODEGENIE_GATE_CONTROL_KEY", gatecontrol.DefaultKeyFile), "gate-control's HMAC key file (env CODEGENIE_GATE_CONTROL_KEY)")
	fl.StringVar(&f.ca, "gate-control-ca", "", "PEM CAs that verify gate-control's TLS certificate")
	fl.StringVar(&f.cert, "gate-control-cert", "", "PEM client certificate for gate-control")
	fl.StringVar(&f.certKey, "gate-control-cert-key", "", "PEM key of --gate-control-cert")
}

func newCmdGather(g *globals) *cobra.Command {
	var f gatherFlags
	cmd := &cobra.Command{
		Use:   "gather PATH",
		Short: "Gather evidence about a repository and print its context as JSON",
		Long: `gather runs every probe over the repository at PATH and writes the repository
context (each probe's typed result, with a schema version) as JSON to stdout or
--out. Results are cached by the content of each probe's declared inputs; an
unchanged repository is answered from the cache with identical bytes.

gather judges one image: the Dockerfile given by --dockerfile (default:
Dockerfile at PATH's root, else the only one), built for --target (default:
the target a compose file names in build.target for that Dockerfile, else
the last stage). The output says which image was judged and why.
--all-images judges every Dockerfile as well, each as its own image.

Without a sandbox (--no-sandbox, or not root with no gate-control), the
verdict comes from static evidence and is marked confirmed: false; only a
traced build and boot confirms that no shell runs.

The exit code answers the question for the judged image:
  0  ready for a distroless image, confirmed by the trace
  3  ready on static evidence only (unconfirmed)
  1  not ready: blocked, ready only after a rewrite, or unknown
  2  bad usage or input (a missing path, an unknown --dockerfile/--target)
CI that accepts static answers can treat 0 and 3 alike. A short summary
goes to stderr when stderr is a terminal.`,
		Example: `  codegenie gather ./my-service
  codegenie gather --dockerfile docker/api.Dockerfile --target runtime ./my-service
  codegenie gather --probe-path /healthz --probe-path /api/status ./my-service
  codegenie gather --all-images --no-sandbox --format json ./monorepo | jq '.images[] | {image, verdict: .assessments.distroless_readiness.verdict}'
  rc=0; codegenie gather --no-sandbox ./my-service || rc=$?; [ $rc -eq 0 ] || [ $rc -eq 3 ]
  codegenie gather --format sarif --out codegenie.sarif ./my-service
  codegenie gather --no-sandbox --deps lockfile ./my-service
  codegenie gather --format json ./my-service | jq .assessments
  codegenie gather ./my-service || echo "not ready for distroless"
  CODEGENIE_REGISTRY_MIRRORS=docker.io=127.0.0.1:5000 codegenie gather ./my-service`,
		Args: exactArgs(1, "exactly one PATH, the repository directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGather(cmd, g, &f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "write the context to FILE (atomically) instead of stdout")
	fl.StringVar(&f.format, "format", "", "output format: json, text or sarif (default text on a terminal, json otherwise)")
	fl.BoolVar(&f.noCache, "no-cache", false, "run every probe; neither read nor write the cache")
	fl.StringVar(&f.task, "task", nodenpm.Task, "the task whose probes run")
	fl.DurationVar(&f.lightTimeout, "light-timeout", 0, "timeout of each light probe (default: the probe's own, 30s unless it declares more: 10m for the child_process scan, which reads the dependencies' code)")
	fl.DurationVar(&f.heavyTimeout, "heavy-timeout", pipeline.DefaultHeavyTimeout, "timeout of each heavy probe")
	fl.StringVar(&f.mirrors, "registry-mirror", os.Getenv("CODEGENIE_REGISTRY_MIRRORS"), "registry mirrors, REGISTRY=HOST[:PORT],... (env CODEGENIE_REGISTRY_MIRRORS)")
	f.gc.register(fl, "gate-control to run sandboxes through")
	fl.BoolVar(&f.gc.noSandbox, "no-sandbox", false, "run no sandbox: probes that need one report sandbox_unavailable")
	f.boot.register(fl, "the traced boot")
	f.net.register(fl)
	fl.StringVar(&f.dockerfile, "dockerfile", "", "the Dockerfile of the image to judge, relative to PATH (default: Dockerfile at PATH's root, else the only one)")
	fl.StringVar(&f.target, "target", "", "the stage that ships (default: the compose file's build.target for this Dockerfile, else the last stage)")
	fl.StringArrayVar(&f.probePaths, "probe-path", nil, "a URL path the traced boot requests once the service listens (repeatable), beyond / and the HEALTHCHECK's")
	fl.BoolVar(&f.allImages, "all-images", false, "judge every Dockerfile of the repository too, each as its own image (adds images[] to the output)")
	fl.StringVar(&f.deps, "deps", "none", depsUsage)
	fl.BoolVar(&f.refreshImages, "refresh-images", false, fmt.Sprintf("resolve base-image tags anew instead of trusting digests resolved in the last %s", image.DefaultTTL))
	return cmd
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// sandboxFor returns the sandbox client gather uses, and a function to
// release it. With no gate-control configured it starts, as root and only
// when a probe first needs it, a private gate-control child with a fresh
// key: still one privileged process. Otherwise there is none.
func sandboxFor(g *globals, f *gateControlFlags, heavyTimeout time.Duration) (sandbox.Client, func(), error) {
	switch {
	case f.noSandbox:
		return nil, func() {}, nil
	case f.addr != "":
		cfg := client.Config{KeyFile: f.key, CAFile: f.ca, ClientCertFile: f.cert, ClientKeyFile: f.certKey}
		cfg.Socket, cfg.Address = client.ParseTarget(f.addr)
		c, err := client.New(cfg)
		if err != nil {
			return nil, nil, usageErr("--gate-control: %v", err)
		}
		return c, func() { _ = c.Close() }, nil
	case os.Geteuid() == 0:
		stderr := io.Discard
		if g.verbose {
			stderr = g.stderr
		}
		// The private gate-control's timeout cap follows --heavy-timeout,
		// so the one setting reaches the spawn unrefused.
		l := client.NewLazy(client.PrivateConfig{Stderr: stderr, ServeArgs: append([]string{"--timeout", heavyTimeout.String()}, f.serveArgs...)})
		return l, func() {
			if err := l.Close(); err != nil {
				g.logger().Warn("stopping the private gate-control", "err", err)
			}
		}, nil
	}
	return nil, func() {}, nil
}

// mirrorMap turns parsed mirrors into the registry → host map builds use.
func mirrorMap(m image.Mirrors) map[string]string {
	out := map[string]string{}
	for reg, hosts := range m {
		if len(hosts) == 0 {
			continue
		}
		if reg == "index.docker.io" {
			reg = "docker.io"
		}
		out[reg] = hosts[0]
	}
	return out
}

func runGather(cmd *cobra.Command, g *globals, f *gatherFlags, dir string) error {
	format := f.format
	if format == "" {
		format = "json"
		if g.stdoutTTY && f.out == "" {
			format = "text"
		}
	}
	var encode func(io.Writer, *gather.Outcome) error
	switch format {
	case "json":
		encode = func(w io.Writer, o *gather.Outcome) error { return o.Encode(w) }
	case "text":
		color := g.stdoutTTY && f.out == "" && os.Getenv("NO_COLOR") == ""
		encode = func(w io.Writer, o *gather.Outcome) error {
			return report.EncodeText(w, o.Context, report.TextOptions{Color: color, Width: g.width, Verbose: g.verbose})
		}
	case "sarif":
		encode = func(w io.Writer, o *gather.Outcome) error { return report.EncodeSARIF(w, o.Context, o.Registry) }
	default:
		return usageErr("unknown --format %q: want json, text or sarif", f.format)
	}
	if f.lightTimeout < 0 || f.heavyTimeout <= 0 {
		return usageErr("timeouts must be positive")
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
	f.gc.serveArgs = f.net.serveArgs()
	sb, release, err := sandboxFor(g, &f.gc, f.heavyTimeout)
	if err != nil {
		return err
	}
	defer release()
	opts := gather.Options{
		BuildNet:        bn,
		Registry:        builtin.NewRegistry(),
		Version:         Version,
		Images:          &image.Remote{Mirrors: mirrors},
		Sandbox:         sb,
		RegistryMirrors: mirrorMap(mirrors),
		BootFor:         f.boot.max,
		Settle:          f.boot.settle,
		StepTimeout:     f.boot.step,
		Task:            f.task,
		LightTimeout:    f.lightTimeout,
		HeavyTimeout:    f.heavyTimeout,
		Dockerfile:      f.dockerfile,
		Target:          f.target,
		AllImages:       f.allImages,
		ProbePaths:      f.probePaths,
		RequireImage:    true,
		Logger:          g.logger(),
	}
	if !f.noCache {
		if opts.Cache, err = g.openCache(); err != nil {
			return err
		}
		opts.Images = &image.Memo{Resolver: opts.Images, Path: filepath.Join(opts.Cache.Dir(), image.MemoFile),
			Config: mirrors.String(), Refresh: f.refreshImages, Logger: opts.Logger}
	}
	var releaseDeps func()
	if opts.Deps, releaseDeps, err = depsFetcher(f.deps, opts.Cache); err != nil {
		return err
	}
	defer releaseDeps()
	ctx := cmd.Context()
	if g.stderrTTY && os.Getenv("CI") == "" {
		var stopStatus func()
		ctx, opts.Progress, stopStatus = startLiveStatus(ctx, g.stderr)
		defer stopStatus()
	}
	out, err := gather.Run(ctx, dir, opts)
	if err != nil {
		var ie *gather.InputError
		if errors.As(err, &ie) {
			return &ExitError{Code: ExitUsage, Err: err}
		}
		return err
	}
	if err := writeOutput(f.out, g.stdout, func(w io.Writer) error { return encode(w, out) }); err != nil {
		return err
	}
	if g.stderrTTY && format != "text" {
		printSummary(g.stderr, out)
	}
	switch {
	case !out.Context.Ready():
		return &ExitError{Code: ExitNotReady, Err: errNotReady, Silent: true}
	case !out.Context.Confirmed():
		return &ExitError{Code: ExitUnconfirmed, Err: errUnconfirmed, Silent: true}
	}
	return nil
}

var errUnconfirmed = errors.New("ready, unconfirmed by a trace")

var errNotReady = errors.New("not ready")

// writeOutput writes with enc to stdout, or to path atomically: a temp file
// in the same directory, synced and renamed, so an interrupted run never
// leaves a half-written file in place of a good one.
func writeOutput(path string, stdout io.Writer, enc func(io.Writer) error) error {
	if path == "" || path == "-" {
		return enc(stdout)
	}
	return atomicfile.Write(path, enc)
}

// progressPrinter reports probes that take a while, for a person watching.
func progressPrinter(w io.Writer) func(pipeline.Progress) {
	var mu sync.Mutex
	return func(p pipeline.Progress) {
		if p.State != pipeline.Started {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "running %s...\n", p.Probe)
	}
}

func printSummary(w io.Writer, out *gather.Outcome) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PROBE\tCONFIDENCE\tSOURCE\tTIME\tNOTE\n")
	hits := 0
	for _, r := range out.Records {
		src := "ran"
		if r.CacheHit {
			src = "cache"
			hits++
		}
		note := string(r.Result.Reason)
		if r.Result.Detail != "" {
			note += ": " + r.Result.Detail
		}
		if n := len(r.Result.Warnings); n > 0 {
			note = strings.TrimPrefix(fmt.Sprintf("%s (%d warnings)", note, n), " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Result.Probe, r.Result.Confidence, src, r.Duration.Round(time.Microsecond*100), note)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d probes, %d from cache\n", len(out.Records), hits)
	names := make([]string, 0, len(out.Context.Assessments))
	for n := range out.Context.Assessments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := out.Context.Assessments[n]
		fmt.Fprintf(w, "%s: %s (%d blockers)\n", n, a.Verdict, len(a.Blockers))
	}
}
