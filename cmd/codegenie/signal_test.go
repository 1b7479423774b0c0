package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// TestSignalEndsGather: SIGTERM and ^C (SIGINT) end a gather at once, with
// exit code 130, whatever it is doing. The repository holds a FIFO named
// compose.yml (a gather once blocked opening it, deaf to SIGTERM), and its
// gate-control answers nothing, so the gather is still waiting on the
// traced build when the signal comes.
func TestSignalEndsGather(t *testing.T) {
	t.Parallel()
	bin := testbin.Path(t)
	example, err := filepath.Abs(filepath.Join("..", "..", "examples", "hello-service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			repo := t.TempDir()
			if err := os.CopyFS(repo, os.DirFS(example)); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(repo, "compose.yml"), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			key := filepath.Join(dir, "key")
			if _, err := auth.LoadOrCreateKeyFile(key, nil); err != nil {
				t.Fatal(err)
			}
			// A gate-control that takes spawns and never answers.
			socket := filepath.Join(dir, "gc.sock")
			l, err := net.Listen("unix", socket)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			asked := make(chan struct{}, 1)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					select {
					case asked <- struct{}{}:
					default:
					}
					go func() { _, _ = io.Copy(io.Discard, c) }()
				}
			}()

			var stderr bytes.Buffer
			cmd := exec.Command(bin, "gather", "--no-cache", "--gate-control", socket, "--gate-control-key", key, repo)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-asked:
			case err := <-exited:
				t.Fatalf("gather ended before the signal: %v\n%s", err, stderr.Bytes())
			case <-time.After(3 * time.Minute):
				t.Error("gather never reached the traced build")
			}
			sent := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				t.Logf("gather ended %v after %v", time.Since(sent).Round(time.Millisecond), sig)
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 130 {
					t.Errorf("gather after %v: %v, want exit code 130\n%s", sig, err, stderr.Bytes())
				}
			case <-time.After(3 * time.Minute):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("gather still ran 3 minutes after %v; killed it\n%s", sig, stderr.Bytes())
			}
		})
	}
}
