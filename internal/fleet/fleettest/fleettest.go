// Package fleettest runs a real Temporal dev server for tests and
// benchmarks: the official CLI's "temporal server start-dev", on loopback,
// with a file database that survives a restart.
package fleettest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// CLI returns the Temporal CLI's path: $CODEGENIE_TOOLS/temporal (where
// scripts/setup.sh installs it), else temporal on PATH. It skips the test
// when there is neither.
func CLI(tb testing.TB) string {
	tb.Helper()
	tools := os.Getenv("CODEGENIE_TOOLS")
	if tools == "" {
		tools = "/usr/local/lib/codegenie/bin"
	}
	if p := filepath.Join(tools, "temporal"); isExec(p) {
		return p
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	tb.Skipf("the Temporal CLI is not installed in %s or on PATH: run scripts/setup.sh", tools)
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Server is a running dev server.
type Server struct {
	// Addr is its frontend, 127.0.0.1:PORT.
	Addr string
	cli  string
	db   string
	port int
	log  *os.File
	cmd  *exec.Cmd
	// exited is closed when cmd has exited.
	exited chan struct{}
	// ns is a namespace only this server has: the start waits for it,
	// so that it never takes another server for this one.
	ns string
}

// StartLimit bounds the wait for a dev server to answer. It is minutes: it
// only ends a test whose server never answers, and never fails a slow
// machine's start.
const StartLimit = 3 * time.Minute

// Start starts a dev server with its database in dir, on a free port, and
// waits until it answers (StartLimit at most). It is stopped when the test
// ends.
//
// The port is free when it is picked, not when the server binds it: a
// server running at the same time (another test's, another package's) may
// have taken it for one of its own ephemeral listeners, its internal
// frontend among them. The wait therefore asks for a namespace that only
// this server creates, and a server that exits before it answers (its
// port taken) is started again on another port. Before, a test's workers
// could poll another test's server and take its tasks.
func Start(tb testing.TB, dir string) *Server {
	tb.Helper()
	cli := CLI(tb)
	log, err := os.Create(filepath.Join(dir, "temporal-server.log"))
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{cli: cli, db: filepath.Join(dir, "temporal.db"), log: log}
	tb.Cleanup(func() {
		s.Stop(tb)
		_ = log.Close()
	})
	for attempt := 1; ; attempt++ {
		s.port = freePort(tb)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		if s.start(tb, attempt < 5) {
			return s
		}
		fmt.Fprintf(s.log, "--- the server exited before it answered on %s; another port ---\n", s.Addr)
	}
}

// exitedEarly reports whether a server has exited (exited is closed)
// before it answered on addr: with retry, the caller starts it again on
// another port; else the test fails with the server's log.
func exitedEarly(tb testing.TB, exited <-chan struct{}, retry bool, log *os.File, what, addr string) bool {
	tb.Helper()
	select {
	case <-exited:
	default:
		return false
	}
	if !retry {
		data, _ := os.ReadFile(log.Name())
		tb.Fatalf("%s exited before it answered on %s:\n%s", what, addr, data)
	}
	return true
}

// freePort is a loopback port that is free now.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// start starts the server and waits until it answers. It reports false
// when the server exited first and retry is set (the caller picks another
// port); else such an exit fails the test.
func (s *Server) start(tb testing.TB, retry bool) bool {
	tb.Helper()
	s.ns = fmt.Sprintf("fleettest-%016x", rand.Uint64())
	// The UI gets its own free port, so that two servers can run at once.
	s.cmd = exec.Command(s.cli, "server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--headless", "--db-filename", s.db, "--log-level", "warn", "--namespace", s.ns)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("starting the Temporal dev server: %v", err)
	}
	exited := make(chan struct{})
	s.exited = exited
	cmd := s.cmd
	go func() { _ = cmd.Wait(); close(exited) }()
	ctx, cancel := context.WithTimeout(context.Background(), StartLimit)
	defer cancel()
	for {
		if exitedEarly(tb, exited, retry, s.log, "the Temporal dev server", s.Addr) {
			return false
		}
		c, err := client.DialContext(ctx, client.Options{HostPort: s.Addr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			if err == nil {
				_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.ns})
			}
			c.Close()
			if err == nil {
				return true
			}
		}
		if ctx.Err() != nil {
			data, _ := os.ReadFile(s.log.Name())
			tb.Fatalf("waited %v for the Temporal dev server to answer on %s: %v\n%s", StartLimit, s.Addr, err, data)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and waits.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	if s.cmd == nil || s.cmd.Process == nil || s.exited == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// Restart stops the server and starts it again on the same port and
// database, and returns how long it was down.
func (s *Server) Restart(tb testing.TB) time.Duration {
	tb.Helper()
	start := time.Now()
	s.Stop(tb)
	fmt.Fprintf(s.log, "--- restart ---\n")
	s.start(tb, false)
	return time.Since(start)
}
