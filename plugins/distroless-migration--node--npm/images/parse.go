package images

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// Parsed is one of the repository's Dockerfiles: parsed, or the error
// that stopped its parse.
type Parsed struct {
	Path string
	File *dockerfile.File
	Err  *dockerfile.ParseError
	// Unread says why the file was not read: probe.ReasonPathEscapes for a
	// symlink leading outside the repository, probe.ReasonNotRegular for a
	// FIFO, socket or device. Err then says only that. Empty when it was
	// read.
	Unread probe.Reason
}

// All is the derived fact of every parsed Dockerfile, computed once per
// repository and shared by the probes that need it.
var All = &probe.Analyzer[[]Parsed]{
	Name: "dockerfiles",
	Run: func(ctx context.Context, repo *probe.Repo, _ *probe.Context) ([]Parsed, error) {
		return parseAll(ctx, repo)
	},
}

// ParseAll returns every parsed Dockerfile (the All fact), sorted by path.
// A parse error is the file's own; a read error or cancellation stops it.
func ParseAll(ctx context.Context, repo *probe.Repo) ([]Parsed, error) {
	return All.Of(ctx, repo, nil)
}

func parseAll(ctx context.Context, repo *probe.Repo) ([]Parsed, error) {
	files, err := Find(repo)
	if err != nil {
		return nil, err
	}
	out := make([]Parsed, 0, len(files))
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := repo.ReadFile(p)
		if why := probe.UnreadReason(err); why != "" {
			out = append(out, Parsed{Path: p, Unread: why, Err: &dockerfile.ParseError{Path: p, Msg: probe.DescribeReadError(err)}})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		f, err := dockerfile.Parse(p, data)
		var pe *dockerfile.ParseError
		switch {
		case err == nil:
			out = append(out, Parsed{Path: p, File: f})
		case errors.As(err, &pe):
			out = append(out, Parsed{Path: p, Err: pe})
		default:
			return nil, err
		}
	}
	return out, nil
}

// Find lists the repository's Dockerfiles, sorted.
func Find(repo *probe.Repo) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	for _, pat := range dockerfile.Patterns {
		ms, err := repo.Glob(pat)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if dockerfile.IsDockerfile(m) && !seen[m] {
				seen[m] = true
				files = append(files, m)
			}
		}
	}
	sort.Strings(files)
	return files, nil
}
