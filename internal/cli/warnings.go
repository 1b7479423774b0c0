package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/builtin"
)

func newCmdWarnings(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "warnings",
		Short: "List every warning ID a probe can raise, with a one-line description",
		Example: `  codegenie warnings
  codegenie warnings --json | jq -r '.[].id'`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			ws := builtin.NewRegistry().Warnings().All()
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(ws)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			for _, w := range ws {
				fmt.Fprintf(tw, "%s\t%s\n", w.ID, w.Summary)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
