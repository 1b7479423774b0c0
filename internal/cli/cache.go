package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/fleet"
	"github.com/codegenie/codegenie/internal/sandbox/runsc"
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
	var baseStore, resultStore string
	var baseBytes int64
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove old and corrupt cache entries",
		Long: `prune removes entries written longer ago than --older-than, every corrupt
entry, and temporary files left by interrupted writes. --all empties the cache.
It also prunes the shared base-image store of this host's traced builds
(--base-store, gate-control's) to its least recently used images that fit
--base-store-bytes; a store that a build is using is left alone. And it
prunes the result store of Temporal portfolio runs (--store) by the same
age: a pruned result is judged again when a portfolio next asks for it.`,
		Example: `  codegenie cache prune --older-than 720h
  codegenie cache prune --all`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			if err := pruneResults(cmd.Context(), g, resultStore, olderThan); err != nil {
				return err
			}
			return pruneBaseImages(cmd.Context(), g, baseStore, baseBytes)
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 30*24*time.Hour, "remove entries written longer ago than this")
	cmd.Flags().BoolVar(&all, "all", false, "remove every entry (base images are pruned to --base-store-bytes only)")
	cmd.Flags().StringVar(&baseStore, "base-store", runsc.DefaultBaseStore, "the shared base-image store of this host's builds (gate-control's), pruned to --base-store-bytes")
	cmd.Flags().StringVar(&resultStore, "store", os.Getenv("CODEGENIE_RESULT_STORE"), "the result store of Temporal portfolio runs: a directory, file:///path or s3://bucket/prefix?... (env CODEGENIE_RESULT_STORE; default: results/ in the cache directory)")
	cmd.Flags().Int64Var(&baseBytes, "base-store-bytes", runsc.DefaultBaseStoreBytes, "keep the most recently used base images that fit in this many bytes (0 removes them all)")
	return cmd
}

// pruneResults prunes the result store of Temporal runs, when there is one.
func pruneResults(ctx context.Context, g *globals, flag string, olderThan time.Duration) error {
	loc, err := resultStoreDir(g, flag)
	if err != nil {
		return err
	}
	if !strings.Contains(loc, "://") {
		if _, err := os.Stat(loc); err != nil {
			return nil // no Temporal portfolio kept results here
		}
	}
	st, _, err := openResultStore(ctx, g, loc)
	if err != nil {
		return err
	}
	defer closeStore(st)
	var ps fleet.PruneStats
	switch s := st.(type) {
	case *fleet.FSStore:
		ps, err = s.Prune(olderThan)
	case *fleet.BlobStore:
		ps, err = s.Prune(ctx, olderThan)
	default:
		return fmt.Errorf("the result store %s cannot be pruned", loc)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "results: removed %d (%d bytes); kept %d\n", ps.Removed, ps.Bytes, ps.Kept)
	return nil
}

// pruneBaseImages prunes the host's shared base-image store, when there is
// one: the least recently used images until the rest fits maxBytes (all of
// them for 0). A store in use by a build is left alone.
func pruneBaseImages(ctx context.Context, g *globals, dir string, maxBytes int64) error {
	if _, err := os.Stat(dir); err != nil {
		return nil // no builds ran on this host
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(g.stdout, "base images: %s not pruned (it needs root, as gate-control runs)\n", dir)
		return nil
	}
	if maxBytes == 0 {
		maxBytes = -1
	}
	ps, err := runsc.Prune(ctx, runsc.Config{BaseStore: dir}, maxBytes)
	switch {
	case errors.Is(err, runsc.ErrNoBaseStore):
		return nil
	case err != nil:
		return fmt.Errorf("pruning base images: %w", err)
	case ps.Busy:
		fmt.Fprintf(g.stdout, "base images: %s is in use by a build; not pruned\n", dir)
	default:
		fmt.Fprintf(g.stdout, "base images: removed %d (%d bytes); kept %d (%d bytes)\n", ps.Removed, ps.Freed, ps.Kept, ps.Bytes)
	}
	return nil
}
