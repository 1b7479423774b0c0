// Package cli holds codegenie's cobra commands. Each command is a NewCmdX
// constructor whose RunE parses flags and calls a library package; no
// command holds domain logic of its own.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/cache"
)

// Version is codegenie's version, set at link time with
// -ldflags "-X github.com/codegenie/codegenie/internal/cli.Version=v1.2.3".
// It is part of every cache key.
var Version = "0.1.0-dev"

// Exit codes.
const (
	ExitOK       = 0
	ExitNotReady = 1 // the answer is no or unknown; also internal errors
	ExitUsage    = 2 // bad flags, arguments or input
	// ExitUnconfirmed: ready on static evidence alone; no trace confirmed
	// that no shell runs (gather --no-sandbox, or a trace that could not
	// run). CI that accepts static answers treats it as success.
	ExitUnconfirmed = 3
	ExitCanceled    = 130
)

// ExitError carries an exit code out of a command. A Silent one prints
// nothing: the command has said what it had to.
type ExitError struct {
	Code   int
	Err    error
	Silent bool
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func usageErr(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Streams are a command's standard output and error, and whether each is
// a terminal a person watches.
type Streams struct {
	Out, Err       io.Writer
	OutTTY, ErrTTY bool
	// Width is the terminal's width when Out is one; zero otherwise.
	Width int
}

// globals are the persistent flags every command shares.
type globals struct {
	cacheDir  string
	verbose   bool
	stdout    io.Writer
	stderr    io.Writer
	stdoutTTY bool
	width     int
	stderrTTY bool
}

func (g *globals) logger() *slog.Logger {
	level := slog.LevelWarn
	if g.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
}

func (g *globals) openCache() (*cache.Cache, error) {
	dir, err := g.cacheBase()
	if err != nil {
		return nil, err
	}
	return cache.Open(dir)
}

// cacheBase is --cache-dir made absolute, else the default cache
// directory.
func (g *globals) cacheBase() (string, error) {
	if g.cacheDir == "" {
		return cache.DefaultDir()
	}
	dir, err := filepath.Abs(g.cacheDir)
	if err != nil {
		return "", fmt.Errorf("--cache-dir %s: %w", g.cacheDir, err)
	}
	return dir, nil
}

// NewRootCmd returns the codegenie command tree writing to s.
func NewRootCmd(s Streams) *cobra.Command {
	g := &globals{stdout: s.Out, stderr: s.Err, stdoutTTY: s.OutTTY, stderrTTY: s.ErrTTY, width: s.Width}
	root := &cobra.Command{
		Use:   "codegenie",
		Short: "Find out, with evidence, whether a Node.js service can move to a distroless image",
		Long: `codegenie gathers evidence about a service repository (its Dockerfiles, npm
scripts and code, and later a sandboxed, traced build and boot) and answers
whether the service can run on a distroless image, which has no shell.`,
		Example: `  codegenie gather ./my-service > context.json
  codegenie warnings
  codegenie cache stats`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Unknown subcommands reach RunE, which makes them usage errors
		// (cobra's own "unknown command" error is untyped).
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr("unknown command %q; see 'codegenie --help'", args[0])
			}
			return cmd.Help()
		},
	}
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.PersistentFlags().StringVar(&g.cacheDir, "cache-dir", "", "cache directory (default $CODEGENIE_CACHE_DIR, else the user cache dir's codegenie folder)")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log debug detail to stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: err}
	})
	root.AddCommand(
		newCmdGather(g),
		newCmdWarnings(g),
		newCmdCache(g),
		newCmdVersion(g),
		newCmdGateControl(g),
		newCmdAudit(g),
		newCmdDev(g),
		newCmdPortfolio(g),
		newCmdMigrate(g),
		newCmdWorker(g),
	)
	return root
}

// Execute runs the command line args and returns the process exit code,
// printing any error as one line on stderr.
func Execute(ctx context.Context, args []string, s Streams) int {
	root := NewRootCmd(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitNotReady
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.Code
		if ee.Silent {
			return code
		}
	case errors.Is(err, context.Canceled):
		code = ExitCanceled
	}
	fmt.Fprintf(s.Err, "codegenie: %s\n", oneLine(err.Error()))
	return code
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// exactArgs is cobra.ExactArgs returning a usage error that says what the
// command wants.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("%s wants %s; see '%s --help'", cmd.CommandPath(), what, cmd.CommandPath())
		}
		return nil
	}
}
