package fleet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/codegenie/codegenie/internal/fleet/fleettest"
)

func TestCheckURL(t *testing.T) {
	for _, c := range []struct {
		url        string
		local, ok  bool
		wantInText string
	}{
		{"https://git.example.org/shop.git", false, true, ""},
		{"http://127.0.0.1:8080/shop.git", false, true, ""},
		{"git://127.0.0.1/shop.git", false, true, ""},
		{"ssh://git@example.org/shop.git", false, true, ""},
		{"git@example.org:team/shop.git", false, true, ""},
		{"file:///srv/git/shop.git", false, false, "--allow-local-git"},
		{"file:///srv/git/shop.git", true, true, ""},
		{"/srv/git/shop.git", false, false, "local path"},
		{"./shop", false, false, "local path"},
		{"/srv/git/shop.git", true, true, ""},
		{"ext::sh -c touch% /tmp/pwned", false, false, "remote helper"},
		{"ext::sh -c touch% /tmp/pwned", true, false, "remote helper"},
		{"fd::3", true, false, "remote helper"},
		{"-uhelp", true, false, "starts with '-'"},
		{"https://", false, false, "no host"},
		{"gopher://example.org/x", false, false, "transport"},
		{"", false, false, "empty"},
	} {
		err := CheckURL(c.url, c.local)
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), c.wantInText) {
			t.Errorf("CheckURL(%q, local=%v) = %v; want ok=%v (saying %q)", c.url, c.local, err, c.ok, c.wantInText)
		}
	}
}

func errType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

func retryable(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && !ae.NonRetryable()
}

// hostileHome gives git a global configuration that would leave a marker
// if a fetch ran a hook, a filter or an fsmonitor: the fetch must read
// none of it.
func hostileHome(t *testing.T) (marker string) {
	home := t.TempDir()
	marker = filepath.Join(home, "ran")
	hooks := filepath.Join(home, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$0\" >> " + marker + "\ncat\n"
	for _, h := range []string{"post-checkout", "reference-transaction", "post-index-change", "fsmon"} {
		if err := os.WriteFile(filepath.Join(hooks, h), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := "[core]\n\thooksPath = " + hooks + "\n\tfsmonitor = " + filepath.Join(hooks, "fsmon") +
		"\n[filter \"evil\"]\n\tsmudge = " + filepath.Join(hooks, "fsmon") + " smudge\n\tclean = " + filepath.Join(hooks, "fsmon") + " clean\n\trequired = true\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	return marker
}

func TestCheckoutsFetchRunsNothingOfTheRepository(t *testing.T) {
	srv := fleettest.StartGit(t, t.TempDir())
	files := map[string]string{
		".gitattributes":          "* filter=evil\n*.txt text eol=crlf ident\n",
		"package.json":            `{"name":"shop","scripts":{"postinstall":"touch /tmp/x"}}`,
		"src/index.js":            "console.log('$Id$')\n",
		"notes.txt":               "line one\nline two\n",
		"bin/start*":              "#!/bin/sh\nexec node src/index.js\n",
		"services/api/Dockerfile": "FROM node:22\n",
	}
	commit := srv.Repo(t, "shop", files)
	marker := hostileHome(t)
	c := &Checkouts{Root: t.TempDir(), MaxBytes: 1 << 30}
	dir, release, err := c.Acquire(t.Context(), Source{URL: srv.URL("shop"), Commit: commit})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for p, want := range files {
		exec := strings.HasSuffix(p, "*")
		p = strings.TrimSuffix(p, "*")
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if string(got) != want {
			t.Errorf("%s = %q, want the committed bytes %q (no filter, eol or ident conversion)", p, got, want)
		}
		if (fi.Mode()&0o111 != 0) != exec {
			t.Errorf("%s has mode %v", p, fi.Mode())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the checkout keeps a .git: %v", err)
	}
	if data, err := os.ReadFile(marker); err == nil {
		t.Errorf("the fetch ran a hook, filter or fsmonitor of git's global configuration:\n%s", data)
	}
	// A subfolder of the repository.
	sub, release2, err := c.Acquire(t.Context(), Source{URL: srv.URL("shop"), Commit: commit, Subdir: "services/api"})
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	if _, err := os.Stat(filepath.Join(sub, "Dockerfile")); err != nil || c.Fetches() != 1 {
		t.Errorf("the subfolder's checkout: %v, %d fetches (want the same one)", err, c.Fetches())
	}
	if _, _, err := c.Acquire(t.Context(), Source{URL: srv.URL("shop"), Commit: commit, Subdir: "../x"}); errType(err) != errBadInput {
		t.Errorf("a subfolder out of the repository: %v", err)
	}
}

func TestCheckoutsShareOneFetch(t *testing.T) {
	srv := fleettest.StartGit(t, t.TempDir())
	commit := srv.Repo(t, "shop", map[string]string{"a": "1"})
	c := &Checkouts{Root: t.TempDir(), MaxBytes: 1 << 30}
	var wg sync.WaitGroup
	dirs := make([]string, 16)
	errs := make([]error, 16)
	for i := range dirs {
		wg.Go(func() {
			var release func()
			dirs[i], release, errs[i] = c.Acquire(t.Context(), Source{URL: srv.URL("shop"), Commit: commit})
			if release != nil {
				release()
			}
		})
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Fatalf("activity %d: %s, %v (want %s)", i, dirs[i], errs[i], dirs[0])
		}
	}
	if n := c.Fetches(); n != 1 {
		t.Errorf("%d fetches for 16 activities of one commit, want 1", n)
	}
}

func TestCheckoutsPruneLeastRecentlyUsed(t *testing.T) {
	srv := fleettest.StartGit(t, t.TempDir())
	big := strings.Repeat("x", 64<<10)
	c1 := srv.Repo(t, "shop", map[string]string{"a": big + "1"})
	c2 := srv.Repo(t, "shop", map[string]string{"a": big + "2"})
	c3 := srv.Repo(t, "shop", map[string]string{"a": big + "3"})
	c := &Checkouts{Root: t.TempDir(), MaxBytes: 150 << 10}
	get := func(commit string) (string, func()) {
		t.Helper()
		d, r, err := c.Acquire(t.Context(), Source{URL: srv.URL("shop"), Commit: commit})
		if err != nil {
			t.Fatal(err)
		}
		return d, r
	}
	d1, r1 := get(c1)
	d2, r2 := get(c2)
	r2()
	// c1 is held, c2 is not: fetching c3 prunes c2, though c1 is older.
	d3, r3 := get(c3)
	defer r3()
	for _, d := range []string{d1, d3} {
		if _, err := os.Stat(filepath.Join(d, "a")); err != nil {
			t.Errorf("a checkout in use or newest was pruned: %v", err)
		}
	}
	if _, err := os.Stat(d2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the least recently used checkout that nobody holds was kept: %v", err)
	}
	r1()
	// Used again, c2 is fetched again; c1, now free and oldest, goes.
	d2b, r2b := get(c2)
	defer r2b()
	if d2b != d2 || c.Fetches() != 4 {
		t.Errorf("c2 again: %s, %d fetches; want %s, 4", d2b, c.Fetches(), d2)
	}
	if _, err := os.Stat(d1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the least recently used free checkout was kept: %v", err)
	}
}

func TestCheckoutsRefuse(t *testing.T) {
	base := t.TempDir()
	srv := fleettest.StartGit(t, base)
	commit := srv.Repo(t, "shop", map[string]string{"a": "1"})
	c := &Checkouts{Root: t.TempDir()}
	ctx := t.Context()
	pwned := filepath.Join(t.TempDir(), "pwned")
	for _, src := range []Source{
		{URL: "file://" + filepath.Join(base, "shop.git"), Commit: commit},
		{URL: filepath.Join(base, "shop.git"), Commit: commit},
		{URL: "ext::sh -c touch% " + pwned, Commit: commit},
	} {
		if _, _, err := c.Acquire(ctx, src); errType(err) != ErrTypeGitRefused || retryable(err) {
			t.Errorf("%s: %v; want a non-retryable %s", src.URL, err, ErrTypeGitRefused)
		}
	}
	// Even with local transports allowed, a command transport is not.
	local := &Checkouts{Root: t.TempDir(), AllowLocal: true}
	if _, _, err := local.Acquire(ctx, Source{URL: "ext::sh -c touch% " + pwned, Commit: commit}); errType(err) != ErrTypeGitRefused {
		t.Errorf("ext:: with local transports allowed: %v", err)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a command transport ran")
	}
	d, release, err := local.Acquire(ctx, Source{URL: "file://" + filepath.Join(base, "shop.git"), Commit: commit})
	if err != nil {
		t.Fatalf("file:// with local transports allowed: %v", err)
	}
	release()
	if b, _ := os.ReadFile(filepath.Join(d, "a")); string(b) != "1" {
		t.Errorf("file:// fetched %q", b)
	}
	if _, _, err := c.Acquire(ctx, Source{URL: srv.URL("shop"), Commit: "main"}); errType(err) != errBadInput {
		t.Errorf("a branch name for a commit: %v", err)
	}
	if _, _, err := (*Checkouts)(nil).Acquire(ctx, Source{URL: srv.URL("shop"), Commit: commit}); errType(err) != ErrTypeNoCheckouts {
		t.Errorf("a worker without a checkout cache: %v", err)
	}
	missing := strings.Repeat("ab", 20)
	if _, _, err := c.Acquire(ctx, Source{URL: srv.URL("shop"), Commit: missing}); errType(err) != ErrTypeGitNoCommit || retryable(err) {
		t.Errorf("a commit the server does not have: %v; want a non-retryable %s", err, ErrTypeGitNoCommit)
	}
	// The server down: retryable, typed; up again, the fetch works.
	srv.Stop()
	_, _, err = c.Acquire(ctx, Source{URL: srv.URL("shop"), Commit: commit})
	if errType(err) != ErrTypeGitUnreachable || !retryable(err) {
		t.Errorf("the git server down: %v; want a retryable %s", err, ErrTypeGitUnreachable)
	}
	srv.Start(t)
	if _, release, err := c.Acquire(ctx, Source{URL: srv.URL("shop"), Commit: commit}); err != nil {
		t.Errorf("the git server back: %v", err)
	} else {
		release()
	}
	if ents, _ := os.ReadDir(c.Root); len(ents) != 1 {
		t.Errorf("the cache holds %d entries after failed fetches, want 1: %v", len(ents), ents)
	}
}

func TestResolve(t *testing.T) {
	srv := fleettest.StartGit(t, t.TempDir())
	commit := srv.Repo(t, "shop", map[string]string{"services/api/Dockerfile": "FROM node:22\n", ".gitignore": "node_modules/\n"})
	client := filepath.Join(t.TempDir(), "shop")
	fleettest.Git(t, filepath.Dir(client), "clone", "-q", srv.URL("shop"), client)
	ctx := t.Context()
	st, err := OpenFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src, err := Resolve(ctx, client, false, st)
	if err != nil || src != (Source{URL: srv.URL("shop"), Commit: commit}) {
		t.Fatalf("Resolve = %+v, %v; want %s at %s", src, err, srv.URL("shop"), commit)
	}
	src, err = Resolve(ctx, filepath.Join(client, "services", "api"), false, st)
	if err != nil || src.Subdir != "services/api" {
		t.Fatalf("Resolve of a subfolder = %+v, %v", src, err)
	}
	if _, err := Resolve(ctx, t.TempDir(), false, st); err == nil || !strings.Contains(err.Error(), "not a git checkout") {
		t.Errorf("Resolve of a folder outside git: %v", err)
	}
	// Dirty: refused, or snapshotted.
	write := func(p, body string) {
		full := filepath.Join(client, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("services/api/Dockerfile", "FROM node:24\n")
	write("new.js", "x\n")
	write("node_modules/ignored/index.js", "ignored\n")
	if err := os.Symlink("services/api/Dockerfile", filepath.Join(client, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(ctx, client, false, st); !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "--allow-dirty") {
		t.Fatalf("a dirty checkout: %v; want ErrDirty naming --allow-dirty", err)
	}
	snap, err := Resolve(ctx, client, true, st)
	if err != nil || snap.Snapshot == "" || snap.URL != "" {
		t.Fatalf("a dirty checkout with allowDirty = %+v, %v; want a snapshot", snap, err)
	}
	again, _ := Resolve(ctx, client, true, st)
	if again != snap {
		t.Errorf("the same tree snapshotted twice: %s and %s", snap.Snapshot, again.Snapshot)
	}
	c := &Checkouts{Root: t.TempDir(), Store: st}
	dir, release, err := c.Acquire(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for p, want := range map[string]string{"services/api/Dockerfile": "FROM node:24\n", "new.js": "x\n", ".gitignore": "node_modules/\n", "link": "FROM node:24\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p))); err != nil || string(b) != want {
			t.Errorf("the snapshot's %s = %q, %v; want %q", p, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the snapshot holds an ignored folder: %v", err)
	}
	// A commit that is on no remote branch is refused like a dirty tree.
	fleettest.Git(t, client, "add", "-A")
	fleettest.Git(t, client, "commit", "-q", "-m", "local")
	if _, err := Resolve(ctx, client, false, st); !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "no remote-tracking branch") {
		t.Errorf("an unpushed commit: %v", err)
	}
}

func TestUnpackSnapshotStaysInside(t *testing.T) {
	st, _ := OpenFSStore(t.TempDir())
	outside := t.TempDir()
	// A symbolic link to outside, then a file through it.
	client := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(client, "out")); err != nil {
		t.Fatal(err)
	}
	fleettest.Git(t, client, "init", "-q", "--template=")
	src, err := snapshot(t.Context(), &Checkouts{AllowLocal: true}, client, st)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := st.Get(t.Context(), src.Snapshot)
	// Append an entry "out/evil" by building a second snapshot by hand.
	evil := filepath.Join(t.TempDir(), "evil")
	if err := os.MkdirAll(filepath.Join(evil, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, "out", "evil"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fleettest.Git(t, evil, "init", "-q", "--template=")
	src2, err := snapshot(t.Context(), &Checkouts{AllowLocal: true}, evil, st)
	if err != nil {
		t.Fatal(err)
	}
	data2, _ := st.Get(t.Context(), src2.Snapshot)
	// The first tar's entries without its end, then the second's.
	joined := append(data[:len(data)-1024:len(data)-1024], data2...)
	if err := unpackSnapshot(joined, filepath.Join(t.TempDir(), "tree")); err == nil {
		t.Error("a snapshot wrote through a symbolic link out of its tree")
	}
	if _, err := os.Stat(filepath.Join(outside, "evil")); err == nil {
		t.Error("a file was written outside the tree")
	}
}

// BenchmarkCheckoutAcquire measures what a worker pays per service to find
// its code: in the shared path (nothing: the client's Dir is read), from a
// warm checkout cache, and with a cold one (a fetch from git daemon on
// loopback of a repository of 50 small files).
func BenchmarkCheckoutAcquire(b *testing.B) {
	srv := fleettest.StartGit(b, b.TempDir())
	files := map[string]string{}
	for i := range 50 {
		files[filepath.Join("src", strings.Repeat("d", i%5), "f"+string(rune('a'+i%26))+strings.Repeat("x", i))] = strings.Repeat("line\n", 40)
	}
	commit := srv.Repo(b, "shop", files)
	src := Source{URL: srv.URL("shop"), Commit: commit}
	b.Run("shared-path", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			if _, err := os.Stat(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		c := &Checkouts{Root: b.TempDir(), MaxBytes: 1 << 30}
		_, r, err := c.Acquire(b.Context(), src)
		if err != nil {
			b.Fatal(err)
		}
		r()
		for b.Loop() {
			_, r, err := c.Acquire(b.Context(), src)
			if err != nil {
				b.Fatal(err)
			}
			r()
		}
	})
	b.Run("cold", func(b *testing.B) {
		root := b.TempDir()
		i := 0
		for b.Loop() {
			i++
			c := &Checkouts{Root: filepath.Join(root, strconv.Itoa(i)), MaxBytes: 1 << 30}
			_, r, err := c.Acquire(b.Context(), src)
			if err != nil {
				b.Fatal(err)
			}
			r()
		}
	})
}

// stallingServer accepts git connections and never answers; accepted gets
// one value per connection.
func stallingServer(t *testing.T) (url string, accepted chan struct{}) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = make(chan struct{}, 16)
	var conns []net.Conn
	var mu sync.Mutex
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			accepted <- struct{}{}
		}
	}()
	return "git://" + l.Addr().String() + "/shop.git", accepted
}

func TestCheckoutsFetchCanceledOrSilent(t *testing.T) {
	url, accepted := stallingServer(t)
	commit := strings.Repeat("cd", 20)
	c := &Checkouts{Root: t.TempDir()}
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, _, err := c.Acquire(ctx, Source{URL: url, Commit: commit})
			errs <- err
		}()
	}
	// Mid-fetch: the server has the connection.
	select {
	case <-accepted:
	case <-time.After(waitLimit):
		t.Fatal("the fetch never connected")
	}
	cancel()
	for range 2 {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("a canceled fetch: %v", err)
		}
	}
	if ents, _ := os.ReadDir(c.Root); len(ents) != 0 {
		t.Errorf("a canceled fetch left %v", ents)
	}
	// A killed worker's half-made fetch is removed when the next one starts.
	if err := os.MkdirAll(filepath.Join(c.Root, "tmp-123", "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.CleanTemporary(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(c.Root); len(ents) != 0 {
		t.Errorf("CleanTemporary left %v", ents)
	}
	// A server that never answers is unreachable once the fetch's bound
	// passes, and the activity is retried.
	c.FetchTimeout = time.Second
	_, _, err := c.Acquire(t.Context(), Source{URL: url, Commit: commit})
	if errType(err) != ErrTypeGitUnreachable || !retryable(err) {
		t.Errorf("a silent server: %v; want a retryable %s", err, ErrTypeGitUnreachable)
	}
}

// TestCheckoutsTokenFile fetches over https-like smart HTTP from
// git-http-backend behind a handler that wants a token: the worker's token
// file answers it, and the token reaches neither the checkout nor an error.
func TestCheckoutsTokenFile(t *testing.T) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git is not installed: apt-get install git")
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend is missing (%v): apt-get install git", err)
	}
	base := t.TempDir()
	gs := &fleettest.GitServer{Base: base}
	commit := gs.Repo(t, "shop", map[string]string{"a": "1"})
	const token = "s3cr3t-token-value"
	cgiH := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + base, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "x-access-token" || p != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "token wanted", http.StatusUnauthorized)
			return
		}
		cgiH.ServeHTTP(w, r)
	}))
	defer srv.Close()
	src := Source{URL: srv.URL + "/shop.git", Commit: commit}

	_, _, err = (&Checkouts{Root: t.TempDir()}).Acquire(t.Context(), src)
	if errType(err) != ErrTypeGitAuth || retryable(err) {
		t.Errorf("no credentials: %v; want a non-retryable %s", err, ErrTypeGitAuth)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Checkouts{Root: t.TempDir(), TokenFile: tokenFile}
	dir, release, err := c.Acquire(t.Context(), src)
	if err != nil {
		t.Fatalf("with the token file: %v", err)
	}
	release()
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "1" {
		t.Errorf("fetched %q", b)
	}
	_ = filepath.WalkDir(c.Root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})
	wrong := filepath.Join(t.TempDir(), "wrong")
	_ = os.WriteFile(wrong, []byte("nope"), 0o600)
	_, _, err = (&Checkouts{Root: t.TempDir(), TokenFile: wrong}).Acquire(t.Context(), src)
	if errType(err) != ErrTypeGitAuth || strings.Contains(fmt.Sprint(err), "nope") {
		t.Errorf("a wrong token: %v; want %s, without the token", err, ErrTypeGitAuth)
	}
}

// TestGitErrorTypes types what git prints when a fetch fails.
func TestGitErrorTypes(t *testing.T) {
	for _, c := range []struct {
		stderr, want string
		retry        bool
	}{
		{"fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused", ErrTypeGitUnreachable, true},
		{"fatal: the remote end hung up unexpectedly", ErrTypeGitUnreachable, true},
		{"fatal: packet write failed: Broken pipe", ErrTypeGitUnreachable, true},
		{"fatal: read error: Connection reset by peer", ErrTypeGitUnreachable, true},
		{"fatal: remote error: upload-pack: not our ref 0123", ErrTypeGitNoCommit, false},
		{"fatal: Authentication failed for 'https://h/x.git/'", ErrTypeGitAuth, false},
		{"fatal: transport 'file' not allowed", ErrTypeGitRefused, false},
		{"error: object 8d83: gitmodulesUpdate: disallowed submodule update setting: !x\nfatal: fsck error in packed object", ErrTypeGitRejected, false},
		{"fatal: something else", ErrTypeGitFailed, true},
	} {
		err := gitError("fetch", c.stderr, errors.New("exit status 128"))
		if errType(err) != c.want || retryable(err) != c.retry {
			t.Errorf("%q: %s (retryable %v), want %s (retryable %v)", c.stderr, errType(err), retryable(err), c.want, c.retry)
		}
	}
}

// TestCheckoutsSubmodules fetches a repository with a submodule from a git
// daemon: not unless the source asks, then only from the hosts the worker
// allows, by the fetch's own rules (no hooks, filters or local or command
// transports), and nested ones too.
func TestCheckoutsSubmodules(t *testing.T) {
	srv := fleettest.StartGit(t, t.TempDir())
	lib := map[string]string{".gitattributes": "* filter=evil\n", "index.js": "module.exports = 'lib'\n"}
	libCommit := srv.Repo(t, "lib", lib)
	// core links lib by a relative URL: a submodule of a submodule.
	coreCommit := srv.RepoWithLinks(t, "core", map[string]string{
		"core.js":     "require('./lib')\n",
		".gitmodules": "[submodule \"lib\"]\n\tpath = lib\n\turl = ../lib.git\n",
	}, []fleettest.Gitlink{{Path: "lib", Commit: libCommit}})
	appCommit := srv.RepoWithLinks(t, "app", map[string]string{
		"Dockerfile":  "FROM node:22\n",
		".gitmodules": "[submodule \"vendor/core\"]\n\tpath = vendor/core\n\turl = " + srv.URL("core") + "\n",
	}, []fleettest.Gitlink{{Path: "vendor/core", Commit: coreCommit}})
	marker := hostileHome(t)
	app := Source{URL: srv.URL("app"), Commit: appCommit}
	asked := app
	asked.Submodules = true

	t.Run("not fetched unless asked", func(t *testing.T) {
		c := &Checkouts{Root: t.TempDir(), SubmoduleHosts: []string{"127.0.0.1"}}
		dir, release, err := c.Acquire(t.Context(), app)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		ents, err := os.ReadDir(filepath.Join(dir, "vendor", "core"))
		if err != nil || len(ents) != 0 {
			t.Errorf("vendor/core holds %d entries (%v), want an empty folder", len(ents), err)
		}
	})
	t.Run("asked, from no allowed host", func(t *testing.T) {
		c := &Checkouts{Root: t.TempDir()}
		_, _, err := c.Acquire(t.Context(), asked)
		if errType(err) != ErrTypeGitSubmodule || retryable(err) || !strings.Contains(err.Error(), "--git-submodule-hosts") {
			t.Fatalf("got %v, want %s, not retried, naming --git-submodule-hosts", err, ErrTypeGitSubmodule)
		}
		if ents, _ := os.ReadDir(c.Root); len(ents) != 0 {
			t.Errorf("the refused fetch left %d entries in the cache", len(ents))
		}
	})
	t.Run("asked, from an allowed host", func(t *testing.T) {
		c := &Checkouts{Root: t.TempDir(), SubmoduleHosts: []string{"127.0.0.1"}}
		dir, release, err := c.Acquire(t.Context(), asked)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		for p, want := range map[string]string{
			"vendor/core/core.js":      "require('./lib')\n",
			"vendor/core/lib/index.js": lib["index.js"],
		} {
			if got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p))); err != nil || string(got) != want {
				t.Errorf("%s = %q (%v), want the committed bytes %q", p, got, err, want)
			}
		}
		for _, p := range []string{".git", "vendor/core/.git", "vendor/core/lib/.git"} {
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the checkout keeps %s: %v", p, err)
			}
		}
		if data, err := os.ReadFile(marker); err == nil {
			t.Errorf("the fetch ran a hook, filter or fsmonitor of git's global configuration:\n%s", data)
		}
		// Asked and not asked are two entries of the cache.
		if _, release, err := c.Acquire(t.Context(), app); err != nil || c.Fetches() != 2 {
			t.Errorf("the same commit without submodules: %v, %d fetches, want 2", err, c.Fetches())
		} else {
			release()
		}
	})
	t.Run("refused: an update command in .gitmodules", func(t *testing.T) {
		// git's object checks refuse it on receipt, before any checkout.
		commit := srv.RepoWithLinks(t, "bad-update", map[string]string{
			".gitmodules": "[submodule \"x\"]\n\tpath = x\n\turl = " + srv.URL("lib") + "\n\tupdate = !touch " + marker + "-update\n",
		}, []fleettest.Gitlink{{Path: "x", Commit: libCommit}})
		c := &Checkouts{Root: t.TempDir(), SubmoduleHosts: []string{"127.0.0.1"}}
		_, _, err := c.Acquire(t.Context(), Source{URL: srv.URL("bad-update"), Commit: commit, Submodules: true})
		if errType(err) != ErrTypeGitRejected || retryable(err) {
			t.Errorf("got %v, want %s, not retried", err, ErrTypeGitRejected)
		}
		if _, err := os.Stat(marker + "-update"); err == nil {
			t.Error("the fetch ran .gitmodules' update command")
		}
	})
	for _, bad := range []struct{ name, url, want string }{
		{"command", "ext::sh -c touch% " + marker + "-ext", "remote helper"},
		{"file", "file://" + filepath.Join(srv.Base, "lib.git"), "worker's own files"},
		{"path", filepath.Join(srv.Base, "lib.git"), "local path"},
		{"other-host", "git://git.example.invalid/lib.git", "does not fetch submodules from"},
		{"other-port", "git://localhost:1/lib.git", "does not fetch submodules from"},
	} {
		t.Run("refused: "+bad.name, func(t *testing.T) {
			commit := srv.RepoWithLinks(t, "bad-"+bad.name, map[string]string{
				".gitmodules": "[submodule \"x\"]\n\tpath = x\n\turl = " + bad.url + "\n",
			}, []fleettest.Gitlink{{Path: "x", Commit: libCommit}})
			c := &Checkouts{Root: t.TempDir(), AllowLocal: true, SubmoduleHosts: []string{"127.0.0.1"}}
			_, _, err := c.Acquire(t.Context(), Source{URL: srv.URL("bad-" + bad.name), Commit: commit, Submodules: true})
			if errType(err) != ErrTypeGitSubmodule || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("got %v, want %s saying %q", err, ErrTypeGitSubmodule, bad.want)
			}
			if _, err := os.Stat(marker + "-ext"); err == nil {
				t.Error("the ext:: URL ran its command")
			}
		})
	}
}

func TestSubmoduleURL(t *testing.T) {
	for _, c := range []struct{ super, raw, want string }{
		{"git://h:9418/team/app.git", "../lib.git", "git://h:9418/team/lib.git"},
		{"https://h/team/app.git", "../../other/lib.git", "https://h/other/lib.git"},
		{"https://h/team/app.git", "./lib.git", "https://h/team/app.git/lib.git"},
		{"https://h/team/app", "https://g/lib.git", "https://g/lib.git"},
	} {
		if got, err := submoduleURL(c.super, c.raw); err != nil || got != c.want {
			t.Errorf("submoduleURL(%q, %q) = %q, %v; want %q", c.super, c.raw, got, err, c.want)
		}
	}
	if _, err := submoduleURL("git@h:team/app.git", "../lib.git"); err == nil {
		t.Error("a relative URL against an scp-like one resolved")
	}
}
