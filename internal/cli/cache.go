package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newCmdCache(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect and prune the content cache",
		Example: `  codegenie cache stats
  codegenie cache prune --older-than 168h`,
		Args: exactArgs(0, "a subcommand: stats or prune"),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdCacheStats(g), newCmdCachePrune(g))
	return cmd
}

func newCmdCacheStats(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "stats",
		Short:   "Count the cache's entries and bytes, and check each entry",
		Example: `  codegenie cache stats --json`,
		Args:    exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			c, err := g.openCache()
			if err != nil {
				return err
			}
			st, err := c.Stats()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			fmt.Fprintf(g.stdout, "dir:      %s\nentries:  %d\nbytes:    %d\ncorrupt:  %d\ntemp:     %d\n", st.Dir, st.Entries, st.Bytes, st.Corrupt, st.Temp)
			if !st.Oldest.IsZero() {
				fmt.Fprintf(g.stdout, "oldest:   %s\nnewest:   %s\n", st.Oldest.Format(time.RFC3339), st.Newest.Format(time.RFC3339))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCmdCachePrune(g *globals) *cobra.Command {
	var olderThan time.Duration
	var all bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove old and corrupt cache entries",
		Long: `prune removes entries written longer ago than --older-than, every corrupt
entry, and temporary files left by interrupted writes. --all empties the cache.`,
		Example: `  codegenie cache prune --older-than 720h
  codegenie cache prune --all`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			if !all && olderThan <= 0 {
				return usageErr("--older-than must be positive; use --all to remove everything")
			}
			if all {
				olderThan = 0
			}
			c, err := g.openCache()
			if err != nil {
				return err
			}
			res, err := c.Prune(olderThan)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "removed %d entries (%d bytes); kept %d\n", res.Removed, res.Bytes, res.Kept)
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 30*24*time.Hour, "remove entries written longer ago than this")
	cmd.Flags().BoolVar(&all, "all", false, "remove every entry")
	return cmd
}
