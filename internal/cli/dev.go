package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/devimages"
)

func newCmdDev(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "dev",
		Short:   "Tools for developing and testing codegenie",
		Example: `  codegenie dev images serve --addr 127.0.0.1:5000`,
		Args:    exactArgs(0, "a subcommand: images"),
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	images := &cobra.Command{
		Use:   "images",
		Short: "Build and serve local stand-ins of node:22, node:22-slim and gcr.io/distroless/nodejs22-debian13",
		Example: `  codegenie dev images serve --addr 127.0.0.1:5000 &
  codegenie gather --registry-mirror docker.io=127.0.0.1:5000,gcr.io=127.0.0.1:5000 ./my-service`,
		Args: exactArgs(0, "a subcommand: serve"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var addr string
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Build the stand-in images and serve them from a registry on loopback until interrupted",
		Long: `serve builds node:22 (Debian bookworm with build tools, from the root
filesystems scripts/setup.sh built out of Debian's packages, with a real Node 22
and npm from the tarballs it fetched and a #!/bin/sh docker-entrypoint.sh),
node:22-slim (bookworm minbase, the same Node), and a distroless node 22 image
(Debian trixie libraries, node at /nodejs/bin/node, no shell), and the same for
Node 24 when its tarball is there (node:24*, nodejs24-debian13), and node:20,
node:20-slim, node:18 and node:18-slim when those tarballs are (distroless
publishes no Node 20 or 18 image on Debian 13, so none is served), pushes them to an
in-process registry on loopback, prints the mirror setting and each digest, and
serves until interrupted. Machines with no Docker Hub (CI here) use it so that
unmodified FROM node:22 and FROM gcr.io/distroless/nodejs22-debian13 resolve.
docs/stand-in-images.md says what still differs from the real images.`,
		Example: `  codegenie dev images serve
  codegenie dev images serve --addr 127.0.0.1:5000`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			sets, err := devimages.Sets(devimages.DefaultInputs(), devimages.DefaultCacheDir())
			if err != nil {
				return err
			}
			reg, err := devimages.ServeSets(cmd.Context(), addr, sets)
			if err != nil {
				return err
			}
			defer func() { _ = reg.Close() }()
			fmt.Fprintf(g.stdout, "registry-mirror: %s\n", reg.Mirrors())
			for _, set := range sets {
				nt, st, dt, nrt := set.Tags()
				for _, tags := range [][]string{nt, st, dt, nrt} {
					for _, t := range tags {
						fmt.Fprintf(g.stdout, "%s@%s\n", t, reg.Digests[t])
					}
				}
			}
			if g.stderrTTY {
				fmt.Fprintf(g.stderr, "built and pushed in %s; serving on %s until interrupted\n", time.Since(start).Round(time.Millisecond), reg.Host)
			}
			<-cmd.Context().Done()
			return nil
		},
	}
	serve.Flags().StringVar(&addr, "addr", "127.0.0.1:5000", "loopback address to listen on (port 0 picks one)")
	images.AddCommand(serve)
	cmd.AddCommand(images)
	return cmd
}
