// Command codegenie answers, with evidence, whether a Node.js service can
// move to a distroless image. See `codegenie --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/codegenie/codegenie/internal/cli"
)

func main() {
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
