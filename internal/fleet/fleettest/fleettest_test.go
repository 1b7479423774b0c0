package fleettest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStartNeverTakesAnotherServer: a server started on a port another
// server already answers on exits (the port is taken), and its start must
// not take the other server for its own, which answers the health check
// and has the default namespace too: it reports the exit, and Start then
// picks another port. Before, two tests' servers could end up as one, and
// one test's workers took the other's tasks (Attempts 2 to 5 in
// TestTemporalPortfolioMatchesLocal, CI run 100).
func TestStartNeverTakesAnotherServer(t *testing.T) {
	t.Parallel()
	a := Start(t, t.TempDir())
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "temporal-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	b := &Server{Addr: a.Addr, cli: a.cli, db: filepath.Join(dir, "temporal.db"), port: a.port, log: log}
	defer b.Stop(t)
	if b.start(t, true) {
		t.Fatalf("a second server on %s's port took it for its own", a.Addr)
	}
}
