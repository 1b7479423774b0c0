package portfolio

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
)

// canary is the token the tests put in URLs: it must appear in no output.
const canary = "CANARYtok3n"

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"user and token", "https://x-access-token:" + canary + "@github.com/o/r.git", "https://github.com/o/r.git"},
		{"token as user", "https://" + canary + "@github.com/o/r.git", "https://github.com/o/r.git"},
		{"file URL", "file://u:" + canary + "@localhost/srv/r.git", "file://localhost/srv/r.git"},
		{"file URL, empty host", "file://u:" + canary + "@/srv/r.git", "file:///srv/r.git"},
		{"at sign in the password", "https://u:p@" + canary + "@host/r", "https://host/r"},
		{"quoted in a message", "cloning 'https://u:" + canary + "@h/r': fatal: unable to access 'https://u:" + canary + "@h/r/'",
			"cloning 'https://h/r': fatal: unable to access 'https://h/r/'"},
		{"no userinfo", "https://github.com/o/r.git", "https://github.com/o/r.git"},
		{"at sign in the path", "https://host/a@b", "https://host/a@b"},
		{"scp-like stays", "git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"a path", "/srv/checkouts/shop", "/srv/checkouts/shop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact(tc.in); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// upstream makes a git repository with one commit of a generated service.
func upstream(t *testing.T, root string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	src := filepath.Join(root, "upstream")
	portfoliotest.Generate(t, filepath.Join(root, "gen"), 1)
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

// noCanary fails the test for every file under dir that holds the canary.
func noCanary(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), canary) || strings.Contains(p, canary) {
			t.Errorf("%s holds the token", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCloneKeepsNoCredentials: a URL's userinfo is used for the clone but
// is in neither the service nor the clone on disk (git keeps the URL in
// .git/config).
func TestCloneKeepsNoCredentials(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src := upstream(t, root)
	d := discovery(t)
	got, err := d.Discover(t.Context(), []Source{{Spec: "file://x-access-token:" + canary + "@localhost" + src}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Fail != "" {
		t.Fatalf("services %+v, want the clone's one", got)
	}
	if want := "file://localhost" + src; got[0].Repo != want {
		t.Errorf("repo %q, want %q", got[0].Repo, want)
	}
	noCanary(t, d.Workspace)
}

// TestUnreachableURLIsAFailedService: a URL that cannot be cloned is a
// failed service with its reason, and the other sources are discovered.
func TestUnreachableURLIsAFailedService(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	local := filepath.Join(root, "local")
	write(t, filepath.Join(local, "Dockerfile"), "FROM node:22\n")
	bad := "file://u:" + canary + "@localhost/nonexistent/repo.git"
	got, err := discovery(t).Discover(t.Context(), []Source{{Spec: bad, From: "repos.txt:3"}, {Spec: local}})
	if err != nil {
		t.Fatalf("got %v, want the unreachable URL listed failed", err)
	}
	type brief struct{ ID, Repo string }
	var ids []brief
	for _, s := range got {
		ids = append(ids, brief{s.ID, s.Repo})
	}
	want := []brief{{"repo", "file://localhost/nonexistent/repo.git"}, {"local:Dockerfile#0", local}}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Fatalf("services (-want +got):\n%s", diff)
	}
	why := got[0].Fail
	for _, part := range []string{"repos.txt:3", "cloning file://localhost/nonexistent/repo.git", "does not appear to be a git repository", "check the URL"} {
		if !strings.Contains(why, part) {
			t.Errorf("reason %q does not say %q", why, part)
		}
	}
	if strings.Contains(why, canary) || got[1].Fail != "" {
		t.Errorf("reasons %q, %q: want the first redacted, the second empty", why, got[1].Fail)
	}
}

// TestFailedDiscoveryIsRecordedNotRun: a service found failed is recorded
// failed with its reason, by Run and by Judge (the Temporal activities'
// unit), and its pipeline never runs.
func TestFailedDiscoveryIsRecordedNotRun(t *testing.T) {
	t.Parallel()
	st, err := OpenStore(filepath.Join(t.TempDir(), StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	r := &Runner{Store: st, Gather: func(context.Context, string, gather.Options) (*gather.Outcome, error) {
		t.Error("the pipeline ran for a service that could not be cloned")
		return nil, errors.New("ran")
	}}
	s := Service{ID: "repo", Repo: "file:///nonexistent/repo.git", Context: ".", Fail: "cloning file:///nonexistent/repo.git: fatal: no; check the URL"}
	recs, _, err := r.Run(t.Context(), []Service{s})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].State != StateFailed || recs[0].Reason != s.Fail {
		t.Errorf("Run: %+v, want failed with the clone's reason", recs)
	}
	rec, sarif, err := r.Judge(t.Context(), r.Start(Record{Service: s}, TierStatic), TierStatic, true)
	if err != nil || rec.State != StateFailed || rec.Reason != s.Fail || sarif != nil {
		t.Errorf("Judge: %+v, %d bytes of SARIF, %v; want failed with the clone's reason", rec, len(sarif), err)
	}
	d1, _ := NewDigester("x").Digest(s)
	s.Fail += " again"
	if d2, _ := NewDigester("x").Digest(s); d1 == "" || d1 == d2 {
		t.Errorf("digests %q, %q: want two failures kept apart", d1, d2)
	}
}
