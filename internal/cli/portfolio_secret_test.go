package cli

import (
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
)

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// gitUpstream makes a git repository with one commit of a generated
// service.
func gitUpstream(t *testing.T, root string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	portfoliotest.Generate(t, filepath.Join(root, "gen"), 1)
	src := filepath.Join(root, "upstream")
	if err := os.Rename(filepath.Join(root, "gen", "repo-0000"), src); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(src, ".git")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return src
}

// TestPortfolioSecretsStaySecret: a --from URL's credentials are used to
// clone and appear in no output: not portfolio.json, report.html, the
// SARIF, the state store, the clones, the cache, stdout or stderr. URLs
// that cannot be cloned (a missing repository, a loopback port nothing
// listens on) are failed services with their reason; the rest are judged,
// and the exit code is the usual one (1: a service failed), not 2.
func TestPortfolioSecretsStaySecret(t *testing.T) {
	t.Setenv("CI", "1")
	const token = "CANARYtok3n"
	root, out, cache := t.TempDir(), t.TempDir(), t.TempDir()
	src := gitUpstream(t, root)
	local := filepath.Join(root, "local")
	portfoliotest.Generate(t, local, 1)
	port := closedPort(t)
	list := filepath.Join(root, "repos.txt")
	lines := []string{
		"file://x-access-token:" + token + "@localhost" + src,
		"file://x-access-token:" + token + "@localhost/nonexistent/repo.git",
		"http://x-access-token:" + token + "@" + port + "/shop.git",
		filepath.Join(local, "repo-0000"),
	}
	if err := os.WriteFile(list, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"portfolio", "--list", "--from", list, "--out", out},
		{"portfolio", "--no-sandbox", "--cache-dir", cache, "--out", out, "--from", list},
	} {
		r := execute(t, t.Context(), args...)
		if strings.Contains(r.stdout+r.stderr, token) {
			t.Errorf("%v: the token is in stdout or stderr:\n%s\n%s", args, r.stdout, r.stderr)
		}
		if args[1] == "--list" {
			if r.code != ExitOK {
				t.Errorf("--list: exit %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			continue
		}
		if r.code != ExitNotReady {
			t.Fatalf("exit %d, want 1 (two services failed); stderr:\n%s", r.code, r.stderr)
		}
		for _, want := range []string{"file://localhost/nonexistent/repo.git", "http://" + port + "/shop.git"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not name %s:\n%s", want, r.stderr)
			}
		}
	}
	doc := readDocument(t, out)
	byRepo := map[string]portfolio.Entry{}
	for _, e := range doc.Services {
		byRepo[e.Repo] = e
	}
	for repo, want := range map[string]portfolio.State{
		"file://localhost" + src:                portfolio.StateDone,
		filepath.Join(local, "repo-0000"):       portfolio.StateDone,
		"file://localhost/nonexistent/repo.git": portfolio.StateFailed,
		"http://" + port + "/shop.git":          portfolio.StateFailed,
	} {
		e, ok := byRepo[repo]
		switch {
		case !ok:
			t.Errorf("no service of %s in %+v", repo, doc.Services)
		case e.State != want:
			t.Errorf("%s: %s (%s), want %s", repo, e.State, e.Reason, want)
		case want == portfolio.StateFailed && !strings.Contains(e.Reason, "cloning "+repo) || want == portfolio.StateFailed && !strings.Contains(e.Reason, "check the URL"):
			t.Errorf("%s: reason %q, want what went wrong and what to do", repo, e.Reason)
		}
	}
	for _, dir := range []string{out, cache} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(data), token) || strings.Contains(p, token) {
				t.Errorf("%s holds the token", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{portfolio.JSONFile, portfolio.HTMLFile, portfolio.MergedFile, portfolio.StoreFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the run wrote no %s to check: %v", f, err)
		}
	}
}
