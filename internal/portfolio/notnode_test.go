package portfolio

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/gather"
)

// TestNotNodeIsSkipped: a Node build whose final stage serves the result
// with nginx runs no Node service: discovery lists it (its builder is
// node), and the static tier skips it with reason not_node instead of
// judging it, so it never reaches the sandbox tier.
func TestNotNodeIsSkipped(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "site")
	write(t, filepath.Join(repo, ".git", "HEAD"), "x\n")
	write(t, filepath.Join(repo, "package.json"), `{"name":"site","private":true,"scripts":{"build":"node build.js"}}`+"\n")
	write(t, filepath.Join(repo, "build.js"), "require('fs').mkdirSync('dist', {recursive: true});\n")
	write(t, filepath.Join(repo, "Dockerfile"), "FROM node:22 AS build\nWORKDIR /app\nCOPY . .\nRUN node build.js\n\nFROM nginx:1.27\nCOPY --from=build /app/dist /usr/share/nginx/html\n")
	ss, err := discovery(t).Discover(t.Context(), []Source{{Spec: root}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Skip != "" {
		t.Fatalf("services %+v; want the one Dockerfile, queued", ss)
	}
	st, err := OpenStore(filepath.Join(t.TempDir(), StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Store: st, Options: gather.Options{Registry: builtin.NewRegistry(), Version: "test", Task: "distroless-migration", Cache: c}}
	recs, _, err := r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].State != StateSkipped || !strings.HasPrefix(recs[0].Reason, SkipNotNode+":") {
		t.Fatalf("records %+v; want the service skipped, not_node", recs)
	}
}
