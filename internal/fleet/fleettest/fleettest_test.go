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

// TestStartS3NeverTakesAnotherServer: the S3 stand-in started on a port
// another one answers on is not taken for its own (the other has no probe
// bucket of its data), and reports its exit.
func TestStartS3NeverTakesAnotherServer(t *testing.T) {
	t.Parallel()
	a := StartS3(t, t.TempDir())
	dir := t.TempDir()
	for _, sub := range []string{"data", "meta"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	b := &S3{Endpoint: a.Endpoint, AccessKey: a.AccessKey, SecretKey: a.SecretKey, bin: a.bin, dir: dir, addr: a.addr, log: log, probe: "probe-b"}
	if err := os.Mkdir(filepath.Join(dir, "data", b.probe), 0o755); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if b.start(t, true) {
		t.Fatalf("a second S3 server on %s's port took it for its own", a.addr)
	}
}
