package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newCmdVersion(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print codegenie's version",
		Example: `  codegenie version`,
		Args:    exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(g.stdout, "codegenie %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
