package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/portfolio"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

type portfolioFlags struct {
	from    string
	list    bool
	out     string
	migrate bool
}

func newCmdPortfolio(g *globals) *cobra.Command {
	var f portfolioFlags
	cmd := &cobra.Command{
		Use:   "portfolio [PATH ...] [--from FILE]",
		Short: "Judge every Node service across many repositories, resumably, with an HTML report",
		Long: `portfolio finds every service across repositories and judges each as gather
does. A PATH is a repository checkout (a directory with .git) or a folder of
checkouts (its subdirectories with .git); any other directory is one
checkout. --from FILE lists paths or git URLs, one per line, with # comments;
git URLs (https://, ssh://, file://, user@host:path) are cloned shallowly into
the workspace/ folder of --out, once.

A service is one Dockerfile built for its target (a compose file's
build.target, else the last stage) whose image is a Node image: a node or
distroless node base, or a package.json beside or above the Dockerfile. A
monorepo yields one service per Dockerfile. Test and dev images
(Dockerfile.test, *.cypress, *e2e*, *.dev) are listed as skipped, with the
reason, as are non-Node images.

A codegenie-portfolio.yaml at a checkout's root overrides the target or the
build context of a Dockerfile, or excludes it:

  version: 1
  services:
    - dockerfile: services/api/Dockerfile
      target: runtime
      context: services/api
    - dockerfile: tools/Dockerfile
      exclude: true
      reason: build tooling

It is validated strictly: an unknown key, a wrong type or a Dockerfile that
does not exist is an error naming the file and line (exit 2).

--list prints the discovered services (a table on a terminal, JSON
otherwise) and runs nothing.

--migrate is not available yet: it needs 'codegenie migrate', which has not
been built; the flag is refused.`,
		Example: `  codegenie portfolio --list ~/src/checkouts
  codegenie portfolio --list --from repos.txt | jq -r '.[] | select(.skip == "") | .id'
  printf 'file:///srv/git/shop.git\n# a comment\n../billing\n' > repos.txt && codegenie portfolio --list --from repos.txt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPortfolio(cmd, g, &f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "read paths and git URLs from FILE, one per line (# comments)")
	fl.BoolVar(&f.list, "list", false, "print the discovered services and run nothing")
	fl.StringVar(&f.out, "out", "codegenie-portfolio", "the portfolio folder: state store, clones, portfolio.json, sarif/, report.html")
	fl.BoolVar(&f.migrate, "migrate", false, "not available yet: needs 'codegenie migrate', which has not been built")
	return cmd
}

func runPortfolio(cmd *cobra.Command, g *globals, f *portfolioFlags, args []string) error {
	if f.migrate {
		return usageErr("--migrate is not available yet: it needs 'codegenie migrate', which has not been built; run without --migrate")
	}
	var sources []portfolio.Source
	for _, a := range args {
		sources = append(sources, portfolio.Source{Spec: a})
	}
	if f.from != "" {
		ss, err := portfolio.ReadSources(f.from)
		if err != nil {
			return portfolioErr(err)
		}
		sources = append(sources, ss...)
	}
	if len(sources) == 0 {
		return usageErr("no repositories: pass PATHs or --from FILE; see 'codegenie portfolio --help'")
	}
	sel, ok := builtin.NewRegistry().ImageSelector(nodenpm.Task)
	if !ok {
		return fmt.Errorf("task %s has no image selector", nodenpm.Task)
	}
	d := &portfolio.Discovery{Selector: sel, Workspace: filepath.Join(f.out, "workspace")}
	services, err := d.Discover(cmd.Context(), sources)
	if err != nil {
		return portfolioErr(err)
	}
	if f.list {
		return listServices(g.stdout, g.stdoutTTY, services)
	}
	return usageErr("running the portfolio is not available yet; use --list")
}

// portfolioErr maps the portfolio's bad-input errors to exit code 2.
func portfolioErr(err error) error {
	var ie *portfolio.InputError
	if errors.As(err, &ie) {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return err
}

func listServices(w io.Writer, tty bool, services []portfolio.Service) error {
	if !tty {
		if services == nil {
			services = []portfolio.Service{}
		}
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(services)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SERVICE\tSTATUS\tWHY\n")
	n := 0
	for _, s := range services {
		status, why := "judge", s.Why
		if s.Skip != "" {
			status, why = "skip", s.Skip
		} else {
			n++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.ID, status, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d services, %d to judge, %d skipped\n", len(services), n, len(services)-n)
	return err
}
