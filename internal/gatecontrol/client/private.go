package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
)

// Defaults of PrivateConfig.
const (
	DefaultPrivateStartTimeout = 30 * time.Second
	DefaultPrivateStopTimeout  = 60 * time.Second
)

// PrivateConfig configures StartPrivate.
type PrivateConfig struct {
	// Executable is the codegenie binary to run as
	// "codegenie gate-control serve". Default: os.Executable(), which in
	// a test is the test binary: tests set it to a built codegenie.
	Executable string
	// ServeArgs are more flags for "gate-control serve", such as the
	// backend's (--rootfs, --platform). The key file, socket, audit log,
	// TCP listener and runsc state directory are set by StartPrivate; do
	// not repeat them.
	ServeArgs []string
	// Dir is where the private temporary directory is made. Default:
	// os.TempDir(). The socket path inside must fit a sockaddr_un (107
	// bytes) and the state directory 64 bytes, so keep it short.
	Dir string
	// AuditLog, when set, is the child's audit log, kept after stop.
	// Default: a file in the temporary directory, removed with it.
	AuditLog string
	// Stderr receives the child's stderr (its logs). The last few KiB are
	// also kept for the error when the child fails to start.
	Stderr io.Writer
	// StartTimeout bounds the wait for the child to answer. Default
	// DefaultPrivateStartTimeout.
	StartTimeout time.Duration
	// StopTimeout bounds the wait for the child to drain and exit after
	// SIGTERM, before it is killed. Default DefaultPrivateStopTimeout.
	StopTimeout time.Duration
}

// StartPrivate starts a private gate-control for one command that runs as
// root with no gate-control configured, such as gather: it makes a fresh
// temporary directory (0700) holding a fresh key file, the socket, the
// runsc state directory and (unless PrivateConfig.AuditLog says otherwise)
// the audit log; starts "codegenie gate-control serve" on them as a child
// process; waits until it answers a signed ping; and returns a Client for
// it. The topology stays one privileged process: the child holds the
// backend, the caller only its short-lived key.
//
// stop sends the child SIGTERM, which makes it drain its spawns and exit,
// waits for it (killing it after StopTimeout), removes the temporary
// directory, and reports how the child ended. Call it exactly once, also
// when the caller is interrupted; later calls return the first result.
//
// The child runs in its own process group, so a terminal's ^C reaches the
// caller only, and the caller's stop decides. It is sent SIGTERM by the
// kernel if the caller's thread that started it dies (PR_SET_PDEATHSIG), so
// a caller killed with SIGKILL does not leave it running. ctx bounds the
// start only; it does not stop the child later.
func StartPrivate(ctx context.Context, cfg PrivateConfig) (c *Client, stop func() error, err error) {
	exe := cfg.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("starting private gate-control: %w", err)
		}
	}
	startTimeout := orDefault(cfg.StartTimeout, DefaultPrivateStartTimeout)
	stopTimeout := orDefault(cfg.StopTimeout, DefaultPrivateStopTimeout)
	dir, err := os.MkdirTemp(cfg.Dir, "cg-gc-")
	if err != nil {
		return nil, nil, fmt.Errorf("starting private gate-control: %w", err)
	}
	cleanup := []func(){func() { _ = os.RemoveAll(dir) }}
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	keyFile := filepath.Join(dir, "key")
	if _, err := auth.LoadOrCreateKeyFile(keyFile, nil); err != nil {
		return nil, nil, fmt.Errorf("starting private gate-control: %w", err)
	}
	socket := filepath.Join(dir, "gc.sock")
	auditLog := cfg.AuditLog
	if auditLog == "" {
		auditLog = filepath.Join(dir, "audit.log")
	}
	args := append([]string{"gate-control", "serve",
		"--key-file", keyFile,
		"--audit-log", auditLog,
		"--socket", socket,
		"--state-dir", filepath.Join(dir, "runsc"),
	}, cfg.ServeArgs...)
	tail := &tailBuffer{max: 8 << 10}
	cmd := exec.Command(exe, args...)
	cmd.Stdout = nil
	cmd.Stderr = tail
	if cfg.Stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, cfg.Stderr)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting private gate-control: %w", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	terminate := func() error {
		// It may have exited already; Wait below tells.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(stopTimeout)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("stopping private gate-control: no exit %v after SIGTERM, killed it", stopTimeout)
		}
		if waitErr != nil {
			return fmt.Errorf("stopping private gate-control: %w: %s", waitErr, tail.last())
		}
		return nil
	}
	cleanup = append(cleanup, func() { _ = terminate() })

	c, err = New(Config{Socket: socket, KeyFile: keyFile})
	if err != nil {
		return nil, nil, err
	}
	if err := waitReady(ctx, c, startTimeout, exited, tail); err != nil {
		return nil, nil, err
	}
	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			_ = c.Close()
			stopErr = terminate()
			if err := os.RemoveAll(dir); err != nil {
				stopErr = errors.Join(stopErr, fmt.Errorf("removing private gate-control directory: %w", err))
			}
		})
		return stopErr
	}
	return c, stop, nil
}

// waitReady pings until the child answers, exits, or time runs out.
func waitReady(ctx context.Context, c *Client, timeout time.Duration, exited <-chan struct{}, tail *tailBuffer) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 5 * time.Millisecond
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		var se *ServerError
		if errors.As(err, &se) {
			// It answers, but refuses us: waiting will not help.
			return fmt.Errorf("starting private gate-control: %w", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-exited:
			t.Stop()
			return fmt.Errorf("starting private gate-control: it exited: %s", tail.last())
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("starting private gate-control: no answer after %v (%w): %s", timeout, err, tail.last())
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// last returns the last non-empty line or two written, for an error.
func (t *tailBuffer) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	s := strings.Join(lines, "; ")
	if s == "" {
		return "no output"
	}
	return s
}
