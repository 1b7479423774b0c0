package fleettest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// GitServer is `git daemon` on loopback serving the bare repositories
// under Base, read-only, as git://127.0.0.1:PORT/NAME.git.
type GitServer struct {
	Base string
	Addr string
	port int
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// Git runs git with a configuration of the test's own (no system or
// global one) in dir and returns its output, failing the test on error.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// StartGit starts a git daemon serving base on a free loopback port and
// waits until it accepts connections (StartLimit at most). It is stopped
// when the test ends. A test without git skips, saying so.
func StartGit(tb testing.TB, base string) *GitServer {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git is not installed: apt-get install git")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	if err := os.MkdirAll(base, 0o755); err != nil {
		tb.Fatal(err)
	}
	s := &GitServer{Base: base, port: port, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), log: filepath.Join(tb.TempDir(), "git-daemon.log")}
	tb.Cleanup(s.Stop)
	s.Start(tb)
	return s
}

// Start starts the daemon (again, after Stop) on its port.
func (s *GitServer) Start(tb testing.TB) {
	tb.Helper()
	log, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	defer log.Close()
	// git-daemon itself, not `git daemon`, which would run it as a child
	// that Stop's kill leaves behind.
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		tb.Fatalf("git --exec-path: %v", err)
	}
	s.cmd = exec.Command(filepath.Join(strings.TrimSpace(string(execPath)), "git-daemon"), "--reuseaddr", "--export-all", "--base-path="+s.Base,
		"--listen=127.0.0.1", "--port="+strconv.Itoa(s.port), "--informative-errors", s.Base)
	s.cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("starting git daemon: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	ctx, cancel := context.WithTimeout(context.Background(), StartLimit)
	defer cancel()
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.Addr)
		if err == nil {
			_ = c.Close()
			return
		}
		select {
		case <-s.done:
			data, _ := os.ReadFile(s.log)
			tb.Fatalf("git daemon on %s exited: %s", s.Addr, data)
		case <-ctx.Done():
			data, _ := os.ReadFile(s.log)
			tb.Fatalf("waited %v for git daemon on %s: %v\n%s", StartLimit, s.Addr, err, data)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop kills the daemon and waits for it.
func (s *GitServer) Stop() {
	if s.cmd == nil || s.done == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// URL is the git:// URL of the bare repository name.git under Base.
func (s *GitServer) URL(name string) string { return "git://" + s.Addr + "/" + name + ".git" }

// Repo makes the bare repository name.git under Base holding one commit
// of files (slash-separated paths to contents; a name ending in "*" is
// executable, the star dropped) on main, and returns that commit.
func (s *GitServer) Repo(tb testing.TB, name string, files map[string]string) string {
	tb.Helper()
	work := tb.TempDir()
	Git(tb, work, "init", "-q", "-b", "main", "--template=")
	for p, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, "*") {
			p, mode = strings.TrimSuffix(p, "*"), 0o755
		}
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), mode); err != nil {
			tb.Fatal(err)
		}
	}
	Git(tb, work, "add", "-A")
	Git(tb, work, "commit", "-q", "-m", "files")
	bare := filepath.Join(s.Base, name+".git")
	if _, err := os.Stat(bare); err != nil {
		Git(tb, s.Base, "init", "-q", "--bare", "--template=", bare)
		Git(tb, bare, "symbolic-ref", "HEAD", "refs/heads/main")
	}
	Git(tb, work, "push", "-q", "--force", bare, "HEAD:refs/heads/main")
	return Git(tb, work, "rev-parse", "HEAD")
}

// RepoFrom makes the bare repository name.git under Base holding one
// commit of every file under dir (ignored ones too, as a checkout's
// committed node_modules would be; a .git folder in dir is left out) on
// main, and returns that commit. dir itself is not touched.
func (s *GitServer) RepoFrom(tb testing.TB, name, dir string) string {
	tb.Helper()
	bare := filepath.Join(s.Base, name+".git")
	Git(tb, s.Base, "init", "-q", "--bare", "-b", "main", "--template=", bare)
	in := []string{"--git-dir=" + bare, "--work-tree=" + dir}
	Git(tb, dir, append(in, "add", "-A", "-f")...)
	Git(tb, dir, append(in, "commit", "-q", "-m", "service")...)
	// The index was only the commit's staging area.
	if err := os.Remove(filepath.Join(bare, "index")); err != nil {
		tb.Fatal(err)
	}
	return Git(tb, bare, "rev-parse", "HEAD")
}

// Gitlink is a submodule entry of a commit: the folder at Path is the
// commit Commit of another repository.
type Gitlink struct{ Path, Commit string }

// RepoWithLinks is Repo with submodule entries besides the files (give
// .gitmodules among the files, as the test wants it).
func (s *GitServer) RepoWithLinks(tb testing.TB, name string, files map[string]string, links []Gitlink) string {
	tb.Helper()
	work := tb.TempDir()
	Git(tb, work, "init", "-q", "-b", "main", "--template=")
	for p, body := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	Git(tb, work, "add", "-A")
	for _, l := range links {
		Git(tb, work, "update-index", "--add", "--cacheinfo", "160000,"+l.Commit+","+l.Path)
	}
	Git(tb, work, "commit", "-q", "-m", "files and submodules")
	bare := filepath.Join(s.Base, name+".git")
	Git(tb, s.Base, "init", "-q", "--bare", "-b", "main", "--template=", bare)
	Git(tb, work, "push", "-q", "--force", bare, "HEAD:refs/heads/main")
	return Git(tb, work, "rev-parse", "HEAD")
}
