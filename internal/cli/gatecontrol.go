package cli

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/egress"
	"github.com/codegenie/codegenie/internal/gatecontrol"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/sandbox/runsc"
)

// DefaultRunscStateDir is where gate-control's runsc backend keeps its
// per-spawn state, and where it reaps after a crash.
const DefaultRunscStateDir = "/var/lib/codegenie/runsc"

func newCmdGateControl(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gate-control",
		Short: "Run or manage gate-control, the one privileged process that runs sandboxes",
		Long: `gate-control holds the HMAC key and the sandbox backend, authenticates
every request, runs each spawn in a gVisor sandbox, and writes a hash-chained
audit log. Clients (gather, migrate) reach it on a unix socket or over TLS 1.3.`,
		Example: `  sudo codegenie gate-control serve
  sudo codegenie gate-control rotate-key --overlap 24h
  sudo codegenie gate-control audit-pubkey > audit-key.pub`,
		Args: exactArgs(0, "a subcommand: serve, rotate-key or audit-pubkey"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdGateControlServe(g), newCmdGateControlRotateKey(g), newCmdGateControlAuditPubkey(g), newCmdGateControlStepHook())
	return cmd
}

// stepHookArgs are the arguments after gate-control's own executable that
// run newCmdGateControlStepHook: the command runsc.Config.StepHook names.
var stepHookArgs = []string{"gate-control", "step-hook"}

// newCmdGateControlStepHook is the OCI poststop hook that runsc runs, for
// gate-control, after each traced build step: it snapshots the step's
// rootfs for the trace (runsc.RunStepHook). It is not for people.
func newCmdGateControlStepHook() *cobra.Command {
	return &cobra.Command{
		Use:    "step-hook --store DIR --into DIR < container-state.json",
		Short:  "Snapshot a build step's rootfs (run by runsc, for gate-control)",
		Hidden: true,
		Example: `  # runsc runs it as the poststop hook of a traced build step:
  codegenie gate-control step-hook --store /b/s --into /b/snap < state.json`,
		DisableFlagParsing: true,
		SilenceUsage:       true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runsc.RunStepHook(args, cmd.InOrStdin())
		},
	}
}

type serveFlags struct {
	cfg     gatecontrol.Config
	backend string
	runsc   runsc.Config
	// egressAllow and egressPrivate are the egress cap.
	egressAllow   []string
	egressPrivate bool
}

func newCmdGateControlServe(g *globals) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve sandbox spawns on a unix socket and/or TLS until SIGTERM",
		Long: `serve runs gate-control. It creates the key file (0600) when it is missing,
reaps sandboxes that a crashed gate-control left in the state directory (and
audits each as orphan.reaped), then serves. On SIGTERM or SIGINT it stops
accepting, lets running spawns finish for --drain-timeout, then kills them.

A spawn's audit records are fsynced before its response. Every
--checkpoint-every records, and at shutdown, gate-control appends a checkpoint
that signs the count and head hash of the log with the ed25519 audit key
(--audit-key, beside the HMAC key; its public key is FILE.pub, or run
audit-pubkey). "codegenie audit verify --pubkey" checks them. Requests refused
before authentication are tallied per peer and reason into one record every
10 s, holding only their count, size and digest; a peer that keeps failing is
rate-limited (429). A rotated key file (rotate-key) is picked up without a
restart.

The TLS listener (--listen) requires client certificates that verify against
--tls-client-ca; without it, serve refuses to start unless
--insecure-no-client-cert is given, and then it warns.

--memory, --cpus, --pids, --output-bytes, --disk and --timeout are caps: a
request may ask for less, gets the cap when it asks for none, and is refused
(limit_exceeds_cap, audited) when it asks for more.

--egress-allow caps the network a build may ask for: its RUN steps reach only
what the request allows (gather and migrate --build-egress), through an egress
proxy that this process runs for the build, and a request that asks for a
destination the cap does not cover is refused. The default, "*", is any public
host; loopback, private, link-local and metadata addresses need
--egress-allow-private as well. "none" gives no build a network.`,
		Example: `  sudo codegenie gate-control serve
  sudo codegenie gate-control serve --rootfs /srv/rootfs --max-concurrent 4
  sudo codegenie gate-control serve --socket '' --listen :7443 \
      --tls-cert server.pem --tls-key server-key.pem --tls-client-ca clients-ca.pem
  sudo codegenie gate-control serve --egress-allow registry.npmjs.org,deb.debian.org`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), g, &f)
		},
	}
	fl := cmd.Flags()
	c := &f.cfg
	fl.StringVar(&c.KeyFile, "key-file", gatecontrol.DefaultKeyFile, "HMAC key file, created 0600 when missing")
	fl.StringVar(&c.AuditLog, "audit-log", gatecontrol.DefaultAuditLog, "audit log file")
	fl.StringVar(&c.AuditKeyFile, "audit-key", "", "ed25519 key that signs the audit log's checkpoints, created 0600 when missing, its public key written beside it as FILE.pub (default: "+gatecontrol.AuditKeyName+" beside --key-file)")
	fl.IntVar(&c.CheckpointEvery, "checkpoint-every", audit.DefaultCheckpointEvery, "most audit records between two signed checkpoints; one is also written at shutdown")
	fl.StringVar(&c.Socket, "socket", gatecontrol.DefaultSocket, "unix socket to listen on (mode 0660); empty for none")
	fl.StringVar(&c.TCPAddr, "listen", "", "TCP host:port to listen on with TLS 1.3; empty for none")
	fl.StringVar(&c.TLSCertFile, "tls-cert", "", "PEM certificate chain of the TLS listener")
	fl.StringVar(&c.TLSKeyFile, "tls-key", "", "PEM private key of the TLS listener")
	fl.StringVar(&c.TLSClientCAFile, "tls-client-ca", "", "PEM CAs that client certificates must verify against; required with --listen")
	fl.BoolVar(&c.InsecureNoClientCert, "insecure-no-client-cert", false, "let --listen run without client certificates (insecure: only the HMAC stands between the port and the sandboxes); logs a warning")
	fl.Int64Var(&c.MaxBodyBytes, "max-body", gatecontrol.DefaultMaxBodyBytes, "largest request body, in bytes")
	fl.IntVar(&c.MaxConcurrent, "max-concurrent", gatecontrol.DefaultMaxConcurrent(), "spawns that run at once")
	fl.IntVar(&c.MaxQueue, "max-queue", gatecontrol.DefaultMaxQueue, "spawns that may wait for a slot; more get 429")
	fl.DurationVar(&c.QueueTimeout, "queue-timeout", gatecontrol.DefaultQueueTimeout, "longest wait for a slot; then 503")
	// Zero lets the config's default apply, which follows the cap: a
	// --timeout under DefaultSpawnTimeout (as gather --heavy-timeout and
	// migrate --timeout give a private gate-control) is then the default
	// too, rather than a configuration the server refuses.
	fl.DurationVar(&c.DefaultTimeout, "default-timeout", 0, fmt.Sprintf("timeout of a spawn that asks for none (default %v, or --timeout when that is less)", gatecontrol.DefaultSpawnTimeout))
	fl.DurationVar(&c.MaxTimeout, "timeout", gatecontrol.DefaultMaxTimeout, "cap on every spawn's timeout: a request may ask for less, and is refused (limit_exceeds_cap) when it asks for more")
	fl.DurationVar(&c.MaxTimeout, "max-timeout", gatecontrol.DefaultMaxTimeout, "old name of --timeout")
	_ = fl.MarkDeprecated("max-timeout", "use --timeout")
	fl.DurationVar(&c.DrainTimeout, "drain-timeout", gatecontrol.DefaultDrainTimeout, "on SIGTERM, how long running spawns may finish before they are killed")
	fl.Int64Var(&c.DigestMaxBytes, "digest-max-bytes", gatecontrol.DefaultDigestMaxSize, "workspace bytes hashed for the audit digest; larger files count by size and mtime")
	fl.IntVar(&c.DigestMaxFiles, "digest-max-files", gatecontrol.DefaultDigestMaxN, "workspace entries covered by the audit digest")
	fl.StringVar(&f.backend, "backend", runsc.Name, "sandbox backend: "+runsc.Name)
	r := &f.runsc
	fl.StringVar(&r.Runsc, "runsc", "", "runsc binary (default $"+runsc.EnvRunsc+", else "+runsc.DefaultRunscPath+")")
	fl.StringVar(&r.StateDir, "state-dir", DefaultRunscStateDir, "runsc state directory (at most 64 bytes); reaped at start")
	fl.StringVar(&r.Platform, "platform", runsc.PlatformSystrap, "runsc platform: systrap or ptrace")
	fl.StringVar(&r.Rootfs, "rootfs", "", "host directory used as the root filesystem of requests that name none")
	fl.BoolVar(&r.NoCgroups, "no-cgroups", false, "do not use cgroups: memory, CPU and pids limits are not enforced")
	// The caps: a spawn that asks for none of a resource gets the cap,
	// one that asks for more is refused.
	l := &c.MaxLimits
	fl.Int64Var(&l.MemoryBytes, "memory", runsc.DefaultMemoryBytes, "cap on a spawn's memory, in bytes (and what it gets when it asks for none)")
	fl.Float64Var(&l.CPUs, "cpus", runsc.DefaultCPUs, "cap on a spawn's CPUs (and what it gets when it asks for none)")
	fl.Int64Var(&l.PIDs, "pids", runsc.DefaultPIDs, "cap on a spawn's processes (and what it gets when it asks for none)")
	fl.Int64Var(&l.OutputBytes, "output-bytes", runsc.DefaultOutputBytes, "cap on each output stream of a spawn, in bytes (and what it gets when it asks for none)")
	fl.StringSliceVar(&f.egressAllow, "egress-allow", []string{"*"}, `cap on what a build's RUN steps may reach through the egress proxy: HOST[:PORT] (repeatable, or comma-separated), "*" for any public host, "none" for no network`)
	fl.BoolVar(&f.egressPrivate, "egress-allow-private", false, "let builds that ask for it reach loopback, private, link-local and metadata addresses through the egress proxy")
	fl.Int64Var(&l.DiskBytes, "disk", runsc.DefaultDiskBytes, "cap on what a spawn may write (build storage, writable workspace), in bytes (and what it gets when it asks for none)")
	return cmd
}

func runServe(ctx context.Context, g *globals, f *serveFlags) error {
	if f.backend != runsc.Name {
		return usageErr("unknown --backend %q: want %s", f.backend, runsc.Name)
	}
	eg, err := egress.ParseCap(f.egressAllow, f.egressPrivate)
	if err != nil {
		return usageErr("%v", err)
	}
	f.cfg.EgressCap, f.runsc.EgressCap = eg, eg
	// Check the flags before the backend exists: making it creates the
	// state directory. A typed nil stands in for it here.
	pre := f.cfg
	pre.Backend, pre.BackendName = (*runsc.Backend)(nil), runsc.Name
	if err := pre.Validate(); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	// The backend's defaults are the caps; gate-control fills every
	// request's limits from them anyway.
	f.runsc.Limits = f.cfg.MaxLimits
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
	// Traced builds snapshot each step through this same executable.
	if exe, err := os.Executable(); err == nil {
		f.runsc.StepHook = append([]string{exe}, stepHookArgs...)
		// ... and reach the network, when allowed, through it too.
		f.runsc.Shim = exe
	} else {
		logger.Warn("no step hook: traced builds with a builder stage commit a layer per step", "err", err)
	}
	if err := f.runsc.Validate(); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	backend, err := runsc.New(f.runsc)
	if err != nil {
		return err
	}
	cfg := f.cfg
	cfg.Backend = backend
	cfg.BackendName = runsc.Name
	cfg.Logger = logger
	srv, err := gatecontrol.New(cfg)
	if err != nil {
		return err
	}
	err = srv.Run(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Spawns still running at the drain deadline were killed: that
		// is what SIGTERM asks for, not a failure of gate-control.
		logger.Warn("gate-control stopped", "err", err)
		return nil
	}
	return err
}

func newCmdGateControlAuditPubkey(g *globals) *cobra.Command {
	var keyFile, auditKey string
	cmd := &cobra.Command{
		Use:   "audit-pubkey",
		Short: "Print the public key that verifies the audit log's checkpoints",
		Long: `audit-pubkey prints, as PEM, the public half of the ed25519 key with which
gate-control signs the audit log's checkpoints. Keep it where the log's writer
cannot change it, and pass it to "codegenie audit verify --pubkey". serve also
writes it beside the key, as audit-key.pub. It never creates a key.`,
		Example: `  sudo codegenie gate-control audit-pubkey > /etc/codegenie/audit-key.pub
  codegenie audit verify --pubkey /etc/codegenie/audit-key.pub /var/lib/codegenie/audit.log`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			path := auditKey
			if path == "" {
				path = filepath.Join(filepath.Dir(keyFile), gatecontrol.AuditKeyName)
			}
			key, err := audit.LoadKey(path)
			if err != nil {
				return err
			}
			pem, err := audit.EncodePublicKey(key.Public().(ed25519.PublicKey))
			if err != nil {
				return err
			}
			_, err = g.stdout.Write(pem)
			return err
		},
	}
	cmd.Flags().StringVar(&keyFile, "key-file", gatecontrol.DefaultKeyFile, "HMAC key file; the audit key is "+gatecontrol.AuditKeyName+" beside it")
	cmd.Flags().StringVar(&auditKey, "audit-key", "", "audit signing key file (default: "+gatecontrol.AuditKeyName+" beside --key-file)")
	return cmd
}

func newCmdGateControlRotateKey(g *globals) *cobra.Command {
	var keyFile string
	var overlap time.Duration
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "Replace gate-control's signing key; the old one verifies for --overlap more",
		Long: `rotate-key writes a new current key into the key file (atomically). The old
key keeps verifying requests for --overlap, so clients holding it keep working
while they pick up the new one. A running gate-control reads the file again
within a second. Keys past their overlap are dropped.`,
		Example: `  sudo codegenie gate-control rotate-key --overlap 24h
  sudo codegenie gate-control rotate-key --key-file /etc/codegenie/key --overlap 0s`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			if overlap < 0 {
				return usageErr("--overlap must not be negative")
			}
			ring, err := auth.Rotate(keyFile, overlap, nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "current key: %s\n", ring.Current().ID)
			for _, p := range ring.Previous() {
				fmt.Fprintf(g.stdout, "previous key: %s (verifies until %s)\n", p.ID, p.Expires.Format(time.RFC3339))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&keyFile, "key-file", gatecontrol.DefaultKeyFile, "HMAC key file")
	cmd.Flags().DurationVar(&overlap, "overlap", 24*time.Hour, "how long the old key keeps verifying")
	return cmd
}
