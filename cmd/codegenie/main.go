// Command codegenie answers, with evidence, whether a Node.js service can
// move to a distroless image. See `codegenie --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/term"

	"github.com/codegenie/codegenie/internal/cli"
	"github.com/codegenie/codegenie/internal/sandbox/runsc"
)

func main() {
	if filepath.Base(os.Args[0]) == runsc.ShimName {
		// gate-control's build steps run this executable as their OCI
		// runtime (runsc.RunRuntimeShim): it returns only on error.
		fmt.Fprintln(os.Stderr, runsc.RunRuntimeShim(os.Args))
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	s := cli.Streams{
		Out: os.Stdout, Err: os.Stderr,
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())), ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
	if s.OutTTY {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			s.Width = w
		}
	}
	code := cli.Execute(ctx, os.Args[1:], s)
	stop()
	os.Exit(code)
}
