package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
)

// Source names a service's code as a worker fetches it, so that workers
// need no path of the client's: a git URL and a commit, or, for a checkout
// with changes nobody committed (--allow-dirty), the digest of a snapshot
// of its tree in the result store. Subdir is the service's checkout inside
// the repository ("" for its root).
type Source struct {
	URL      string `json:"url,omitempty"`
	Commit   string `json:"commit,omitempty"`
	Subdir   string `json:"subdir,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
	// Submodules asks for the commit's submodules too (portfolio
	// --submodules); a worker fetches them only from the hosts it allows
	// (worker --git-submodule-hosts). Without it, a submodule's folder is
	// empty.
	Submodules bool `json:"submodules,omitempty"`
}

// IsZero reports whether s names nothing: the service is read at its path
// (the shared-path mode).
func (s Source) IsZero() bool { return s == Source{} }

func (s Source) String() string {
	if s.Snapshot != "" {
		return "snapshot " + s.Snapshot
	}
	return s.URL + "@" + s.Commit
}

// The error types of a fetch that failed. An unreachable server is
// retried (Temporal's retry policy bounds how long); the others are not.
const (
	ErrTypeGitUnreachable = "codegenie.git_unreachable"
	ErrTypeGitRefused     = "codegenie.git_transport_refused"
	ErrTypeGitNoCommit    = "codegenie.git_commit_missing"
	ErrTypeGitFailed      = "codegenie.git_fetch_failed"
	ErrTypeNoCheckouts    = "codegenie.no_checkout_cache"
	ErrTypeGitAuth        = "codegenie.git_auth_failed"
	// ErrTypeGitSubmodule is a submodule the worker will not fetch: from a
	// host it does not allow, by a refused transport, or at a path that
	// leaves its repository.
	ErrTypeGitSubmodule = "codegenie.git_submodule_refused"
	// ErrTypeGitRejected is a repository whose objects fail git's checks
	// on receipt (transfer.fsckObjects): malformed, or hostile, such as a
	// .gitmodules with a command to run.
	ErrTypeGitRejected = "codegenie.git_objects_rejected"
)

var commitRE = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// CheckURL refuses a git URL whose transport could read the worker's own
// files or run a command: a local path, file://, and the ext::, fd:: and
// other remote-helper forms. allowLocal lets paths and file:// through
// (for tests); a remote helper is never allowed.
func CheckURL(u string, allowLocal bool) error {
	switch {
	case u == "":
		return errors.New("the git URL is empty")
	case strings.HasPrefix(u, "-"):
		return fmt.Errorf("the git URL %q starts with '-': refused", u)
	case strings.ContainsAny(u, "\x00\n\r"):
		return fmt.Errorf("the git URL %q holds a control character: refused", u)
	case strings.Contains(u, "::"):
		return fmt.Errorf("the git URL %q names a remote helper (transport::address): refused, since it can run a command on the worker", u)
	}
	if i := strings.Index(u, "://"); i > 0 {
		p, err := url.Parse(u)
		if err != nil {
			return fmt.Errorf("the git URL %q does not parse: %w", u, err)
		}
		switch strings.ToLower(p.Scheme) {
		case "https", "http", "git", "ssh", "git+ssh", "ssh+git":
			if p.Host == "" {
				return fmt.Errorf("the git URL %q names no host", u)
			}
			return nil
		case "file":
			if allowLocal {
				return nil
			}
			return fmt.Errorf("the git URL %q reads the worker's own files: refused (a worker allows local transports only with --allow-local-git, for tests)", u)
		default:
			return fmt.Errorf("the git URL %q uses the transport %q: want https, http, git or ssh", u, p.Scheme)
		}
	}
	// scp-like ssh: [user@]host:path, with no slash before the colon.
	if c := strings.IndexByte(u, ':'); c > 0 && !strings.Contains(u[:c], "/") {
		return nil
	}
	if allowLocal {
		return nil
	}
	return fmt.Errorf("the git URL %q is a local path: refused (workers fetch from a git server; --allow-local-git allows it, for tests)", u)
}

// Checkouts is a worker's checkout cache: each fetched commit in a folder
// of its own under Root, keyed by repository and commit (or by snapshot
// digest), kept within MaxBytes by pruning the least recently used.
// Concurrent activities for the same commit share one fetch. One worker
// process owns a Root.
//
// A fetch treats the repository as hostile: no system or global git
// configuration (so no filter drivers), hooks at /dev/null, no
// attribute conversions, no submodules, objects checked on receipt, and
// only the http, https, git and ssh transports (file as well with
// AllowLocal). Credentials come from the worker's environment: a
// credential helper command, or a file holding an https token.
type Checkouts struct {
	Root     string
	MaxBytes int64
	// AllowLocal lets local paths and file:// URLs be fetched (tests).
	AllowLocal bool
	// CredentialHelper is a git credential helper ("store --file F",
	// "!cmd"), used for every fetch.
	CredentialHelper string
	// TokenFile holds an https token, sent as the password of the
	// x-access-token user. Its path, never its content, reaches git.
	TokenFile string
	// Store holds the snapshots of --allow-dirty checkouts.
	Store ResultStore
	// Git is the git binary; "" is git on PATH.
	Git string
	// FetchTimeout bounds one fetch (default DefaultFetchTimeout): a server
	// that accepts and then says nothing is unreachable, and retried.
	FetchTimeout time.Duration
	// SubmoduleHosts are the hosts (a name, or host:port) that submodules
	// are fetched from when a source asks for them; none refuses every
	// submodule. The transports and rules are a fetch's own.
	SubmoduleHosts []string

	mu       sync.Mutex
	inflight map[string]*fetchCall
	inUse    map[string]int
	fetches  int64
}

type fetchCall struct {
	done chan struct{}
	err  error
}

// Fetches returns how many fetches (and snapshot unpackings) ran.
func (c *Checkouts) Fetches() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}

func (c *Checkouts) key(s Source) string {
	if s.Snapshot != "" {
		return "snap-" + s.Snapshot
	}
	sum := sha256.Sum256([]byte(s.URL))
	k := hex.EncodeToString(sum[:8]) + "-" + s.Commit
	if s.Submodules {
		k += "-sub"
	}
	return k
}

// Acquire returns the folder of src's checkout (Subdir included), fetching
// it unless the cache has it; release lets it be pruned again.
func (c *Checkouts) Acquire(ctx context.Context, src Source) (string, func(), error) {
	if err := c.check(src); err != nil {
		return "", nil, err
	}
	k := c.key(src)
	entry := filepath.Join(c.Root, k)
	for {
		c.mu.Lock()
		if c.inflight == nil {
			c.inflight, c.inUse = map[string]*fetchCall{}, map[string]int{}
		}
		if call, ok := c.inflight[k]; ok {
			c.mu.Unlock()
			select {
			case <-call.done:
			case <-ctx.Done():
				return "", nil, ctx.Err()
			}
			if call.err != nil && !errors.Is(call.err, context.Canceled) && !errors.Is(call.err, context.DeadlineExceeded) {
				return "", nil, call.err
			}
			// It was fetched, or its activity was cancelled: look again.
			continue
		}
		if _, err := os.Stat(filepath.Join(entry, "tree")); err == nil {
			c.inUse[k]++
			c.mu.Unlock()
			now := time.Now()
			_ = os.Chtimes(filepath.Join(entry, "used"), now, now)
			return c.dir(entry, src), c.releaser(k), nil
		}
		call := &fetchCall{done: make(chan struct{})}
		c.inflight[k] = call
		c.fetches++
		c.mu.Unlock()

		call.err = c.fill(ctx, src, entry)
		c.mu.Lock()
		delete(c.inflight, k)
		if call.err == nil {
			c.inUse[k]++
		}
		c.mu.Unlock()
		close(call.done)
		if call.err != nil {
			return "", nil, call.err
		}
		c.prune()
		return c.dir(entry, src), c.releaser(k), nil
	}
}

func (c *Checkouts) dir(entry string, src Source) string {
	return filepath.Join(entry, "tree", filepath.FromSlash(src.Subdir))
}

func (c *Checkouts) releaser(k string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.inUse[k]--
			if c.inUse[k] <= 0 {
				delete(c.inUse, k)
			}
			c.mu.Unlock()
		})
	}
}

func (c *Checkouts) check(src Source) error {
	if c == nil || c.Root == "" {
		return temporal.NewNonRetryableApplicationError("this worker has no checkout cache, and the portfolio names its services by git URL: run the worker with --checkout-cache DIR", ErrTypeNoCheckouts, nil)
	}
	if sub := src.Subdir; sub != "" && (!filepath.IsLocal(filepath.FromSlash(sub)) || strings.Contains(sub, "\\")) {
		return badInput("the source's subfolder %q leaves its repository", sub)
	}
	if src.Snapshot != "" {
		if c.Store == nil {
			return badInput("a snapshot source needs the result store")
		}
		return nil
	}
	if !commitRE.MatchString(src.Commit) {
		return badInput("the source's commit %q is not a full hexadecimal object name", src.Commit)
	}
	if err := CheckURL(src.URL, c.AllowLocal); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeGitRefused, nil)
	}
	return nil
}

// fill makes entry: the checkout in entry/tree, its size in entry/size and
// its last use in entry/used's modification time. A half-made one is in a
// temporary folder, removed on failure; a crash leaves it for prune.
func (c *Checkouts) fill(ctx context.Context, src Source, entry string) error {
	if err := os.MkdirAll(c.Root, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(c.Root, "tmp-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	tree := filepath.Join(tmp, "tree")
	if src.Snapshot != "" {
		data, err := c.Store.Get(ctx, src.Snapshot)
		if err != nil {
			return fmt.Errorf("reading the snapshot %s: %w", src.Snapshot, err)
		}
		if err := unpackSnapshot(data, tree); err != nil {
			return badInput("the snapshot %s: %v", src.Snapshot, err)
		}
	} else if err := c.fetch(ctx, src, tree); err != nil {
		return err
	}
	size, err := duSize(tree)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "size"), []byte(strconv.FormatInt(size, 10)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "used"), nil, 0o644); err != nil {
		return err
	}
	_ = os.RemoveAll(entry) // a half-pruned one
	return os.Rename(tmp, entry)
}

// DefaultFetchTimeout bounds a fetch when Checkouts.FetchTimeout is zero.
const DefaultFetchTimeout = 15 * time.Minute

func (c *Checkouts) fetch(ctx context.Context, src Source, tree string) error {
	limit := c.FetchTimeout
	if limit <= 0 {
		limit = DefaultFetchTimeout
	}
	fctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := c.fetchTree(fctx, src, tree)
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return temporal.NewApplicationError(fmt.Sprintf("fetching %s took longer than %v: the git server does not answer", src, limit), ErrTypeGitUnreachable)
	}
	return err
}

func (c *Checkouts) fetchTree(ctx context.Context, src Source, tree string) error {
	return c.fetchTreeAt(ctx, src, tree, 0)
}

// fetchTreeAt fetches src into tree, a submodule depth levels below the
// portfolio's repository.
func (c *Checkouts) fetchTreeAt(ctx context.Context, src Source, tree string, depth int) error {
	if err := os.MkdirAll(filepath.Join(tree, ".git"), 0o755); err != nil {
		return err
	}
	gitDir := filepath.Join(tree, ".git")
	if _, err := c.git(ctx, tree, "init", "-q", "--template=", "."); err != nil {
		return err
	}
	// No attribute of the repository's converts a file on checkout.
	if err := os.MkdirAll(filepath.Join(gitDir, "info"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(gitDir, "info", "attributes"), []byte("* -text -eol -ident -filter -working-tree-encoding\n"), 0o644); err != nil {
		return err
	}
	if _, err := c.git(ctx, tree, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--depth=1", "--recurse-submodules=no", "--", src.URL, src.Commit+":refs/codegenie/fetched"); err != nil {
		return err
	}
	got, err := c.git(ctx, tree, "rev-parse", "--verify", "refs/codegenie/fetched^{commit}")
	if err != nil {
		return err
	}
	if strings.TrimSpace(got) != src.Commit {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s sent %s for the commit %s", src.URL, strings.TrimSpace(got), src.Commit), ErrTypeGitFailed, nil)
	}
	if _, err := c.git(ctx, tree, "checkout", "-q", "--no-recurse-submodules", "--detach", src.Commit); err != nil {
		return err
	}
	if src.Submodules {
		if err := c.submodules(ctx, src, tree, depth); err != nil {
			return err
		}
	}
	// The tree is the repository's files alone.
	return os.RemoveAll(gitDir)
}

// maxSubmoduleDepth bounds submodules of submodules.
const maxSubmoduleDepth = 4

// submodules fills the folders of the commit's submodules in tree (whose
// .git is still there): each gitlink of the commit is fetched, as a fetch
// of its own with the same rules, from the URL that .gitmodules gives its
// path (relative URLs against src.URL), if that URL's host is one of
// SubmoduleHosts. A submodule's own submodules follow, to
// maxSubmoduleDepth.
func (c *Checkouts) submodules(ctx context.Context, src Source, tree string, depth int) error {
	links, err := c.gitlinks(ctx, tree)
	if err != nil || len(links) == 0 {
		return err
	}
	if depth >= maxSubmoduleDepth {
		return refuseSubmodule("%s nests submodules deeper than %d", src, maxSubmoduleDepth)
	}
	urls, err := c.submoduleURLs(ctx, tree)
	if err != nil {
		return err
	}
	for i, l := range links {
		raw, ok := urls[l.path]
		if !ok {
			return refuseSubmodule("the submodule at %s of %s has no URL in .gitmodules", l.path, src)
		}
		u, err := submoduleURL(src.URL, raw)
		if err != nil {
			return refuseSubmodule("the submodule at %s of %s: %v", l.path, src, err)
		}
		if err := CheckURL(u, false); err != nil {
			return refuseSubmodule("the submodule at %s of %s: %v", l.path, src, err)
		}
		if !c.allowsHost(u) {
			return refuseSubmodule("the submodule at %s of %s is on %s, a host this worker does not fetch submodules from (worker --git-submodule-hosts; allowed: %v)", l.path, src, hostOf(u), c.SubmoduleHosts)
		}
		dst, err := submoduleDir(tree, l.path)
		if err != nil {
			return refuseSubmodule("the submodule at %s of %s: %v", l.path, src, err)
		}
		// Fetched beside the tree, then moved into its empty folder.
		side := fmt.Sprintf("%s.sub-%d", tree, i)
		sub := Source{URL: u, Commit: l.commit, Submodules: true}
		if err := c.fetchTreeAt(ctx, sub, side, depth+1); err != nil {
			_ = os.RemoveAll(side)
			return err
		}
		if err := os.Remove(dst); err != nil {
			return fmt.Errorf("placing the submodule at %s: %w", l.path, err)
		}
		if err := os.Rename(side, dst); err != nil {
			return err
		}
	}
	return nil
}

type gitlink struct{ path, commit string }

// gitlinks lists the commit's submodule entries (mode 160000).
func (c *Checkouts) gitlinks(ctx context.Context, tree string) ([]gitlink, error) {
	out, err := c.git(ctx, tree, "ls-tree", "-r", "-z", "--full-tree", "HEAD")
	if err != nil {
		return nil, err
	}
	var links []gitlink
	for _, ent := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(ent, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) == 3 && f[0] == "160000" && f[1] == "commit" && commitRE.MatchString(f[2]) {
			links = append(links, gitlink{path: path, commit: f[2]})
		}
	}
	return links, nil
}

// submoduleURLs reads .gitmodules of the checked-out commit: each
// submodule's path to its URL. It is read as a file of values only (no
// includes), and nothing else in it (update commands) is used.
func (c *Checkouts) submoduleURLs(ctx context.Context, tree string) (map[string]string, error) {
	gm := filepath.Join(tree, ".gitmodules")
	if fi, err := os.Lstat(gm); err != nil || !fi.Mode().IsRegular() {
		return nil, refuseSubmodule("the commit has submodules and no .gitmodules file to say where they come from")
	}
	out, err := c.git(ctx, tree, "config", "--file", gm, "--null", "--no-includes", "--get-regexp", `^submodule\..*\.(path|url)$`)
	if err != nil {
		return nil, refuseSubmodule("reading .gitmodules: %v", err)
	}
	paths, urls := map[string]string{}, map[string]string{}
	for _, kv := range strings.Split(out, "\x00") {
		k, v, ok := strings.Cut(kv, "\n")
		if !ok {
			continue
		}
		name, field, ok := cutLast(strings.TrimPrefix(k, "submodule."), ".")
		if !ok {
			continue
		}
		if field == "path" {
			paths[name] = v
		} else {
			urls[name] = v
		}
	}
	byPath := map[string]string{}
	for name, p := range paths {
		if u, ok := urls[name]; ok {
			byPath[strings.TrimSuffix(p, "/")] = u
		}
	}
	return byPath, nil
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

// submoduleURL resolves a submodule's URL as git does: ./ and ../ are
// relative to the superproject's URL taken as a folder.
func submoduleURL(super, raw string) (string, error) {
	if !strings.HasPrefix(raw, "./") && !strings.HasPrefix(raw, "../") {
		return raw, nil
	}
	base, err := url.Parse(super)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return "", fmt.Errorf("the relative URL %q needs a superproject URL with a scheme and a host, not %q", raw, super)
	}
	base.Path = strings.TrimSuffix(base.Path, "/") + "/"
	ref, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	return base.ResolveReference(ref).String(), nil
}

// hostOf is the host (with its port, if any) of a URL that CheckURL
// allowed, scp-like ones included; "" for a local path.
func hostOf(u string) string {
	if strings.Contains(u, "://") {
		p, err := url.Parse(u)
		if err != nil {
			return ""
		}
		return p.Host
	}
	if c := strings.IndexByte(u, ':'); c > 0 && !strings.Contains(u[:c], "/") {
		h := u[:c]
		if at := strings.LastIndexByte(h, '@'); at >= 0 {
			h = h[at+1:]
		}
		return h
	}
	return ""
}

// allowsHost reports whether u's host is one of SubmoduleHosts, by name
// (any port) or by host:port.
func (c *Checkouts) allowsHost(u string) bool {
	h := hostOf(u)
	if h == "" {
		return false
	}
	name := h
	if n, _, err := net.SplitHostPort(h); err == nil {
		name = n
	}
	name = strings.Trim(name, "[]")
	for _, a := range c.SubmoduleHosts {
		if a != "" && (strings.EqualFold(a, h) || strings.EqualFold(strings.Trim(a, "[]"), name)) {
			return true
		}
	}
	return false
}

// submoduleDir is the empty folder that checkout left for a gitlink at
// path: inside tree, reached through no symbolic link.
func submoduleDir(tree, path string) (string, error) {
	rel := filepath.FromSlash(path)
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("the path %q leaves the repository", path)
	}
	cur := tree
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("the path %q names a .git folder", path)
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("the path %q is not a folder of the checkout (%s)", path, fi.Mode().Type())
		}
	}
	ents, err := os.ReadDir(cur)
	if err != nil {
		return "", err
	}
	if len(ents) > 0 {
		return "", fmt.Errorf("the folder %q is not empty", path)
	}
	return cur, nil
}

func refuseSubmodule(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeGitSubmodule, nil)
}

// gitArgs are the configuration of every git command of a fetch.
var gitArgs = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.autocrlf=false",
	"-c", "core.symlinks=true",
	"-c", "submodule.recurse=false",
	"-c", "fetch.recurseSubmodules=false",
	"-c", "transfer.fsckObjects=true",
	"-c", "protocol.version=2",
	"-c", "advice.detachedHead=false",
	"-c", "credential.helper=",
}

// tokenHelper answers git's credential requests from the file that
// CODEGENIE_GIT_TOKEN_FILE names, so that the token reaches no argument
// list and no configuration file.
const tokenHelper = `!f() { test "$1" = get || exit 0; printf 'username=x-access-token\npassword=%s\n' "$(cat "$CODEGENIE_GIT_TOKEN_FILE")"; }; f`

func (c *Checkouts) git(ctx context.Context, dir string, args ...string) (string, error) {
	bin := c.Git
	if bin == "" {
		bin = "git"
	}
	all := slices.Clone(gitArgs)
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GIT_") {
			env = append(env, e)
		}
	}
	protocols := "http:https:git:ssh"
	if c.AllowLocal {
		protocols += ":file"
	}
	env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_ALLOW_PROTOCOL="+protocols, "GIT_PROTOCOL_FROM_USER=0", "GIT_LFS_SKIP_SMUDGE=1")
	if c.CredentialHelper != "" {
		all = append(all, "-c", "credential.helper="+c.CredentialHelper)
	}
	if c.TokenFile != "" {
		all = append(all, "-c", "credential.helper="+tokenHelper)
		env = append(env, "CODEGENIE_GIT_TOKEN_FILE="+c.TokenFile)
	}
	all = append(all, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.Dir, cmd.Env = dir, env
	dieWithParent(cmd)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err == nil {
		return out.String(), nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", gitError(args[0], errb.String(), err)
}

// gitError types a failed git command by what it printed.
func gitError(what, stderr string, err error) error {
	msg := strings.TrimSpace(stderr)
	if len(msg) > 600 {
		msg = msg[:600] + "…"
	}
	full := fmt.Sprintf("git %s: %v: %s", what, err, msg)
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "transport") && strings.Contains(low, "not allowed"):
		return temporal.NewNonRetryableApplicationError(full, ErrTypeGitRefused, nil)
	case strings.Contains(low, "authentication failed"), strings.Contains(low, "could not read username"),
		strings.Contains(low, "could not read password"), strings.Contains(low, "permission denied (publickey"):
		return temporal.NewNonRetryableApplicationError(full+" (give the worker --git-credential-helper or --git-token-file)", ErrTypeGitAuth, nil)
	case strings.Contains(low, "fsck error"), strings.Contains(low, "fsck:"):
		return temporal.NewNonRetryableApplicationError(full, ErrTypeGitRejected, nil)
	case strings.Contains(low, "not our ref"), strings.Contains(low, "couldn't find remote ref"),
		strings.Contains(low, "no such remote ref"), strings.Contains(low, "unadvertised object"),
		strings.Contains(low, "remote error: upload-pack: not our"):
		return temporal.NewNonRetryableApplicationError(full, ErrTypeGitNoCommit, nil)
	case strings.Contains(low, "could not read from remote"), strings.Contains(low, "unable to connect"),
		strings.Contains(low, "connection refused"), strings.Contains(low, "could not resolve host"),
		strings.Contains(low, "timed out"), strings.Contains(low, "unable to access"),
		strings.Contains(low, "the remote end hung up"), strings.Contains(low, "early eof"),
		// A server that closes the connection before git has sent its
		// request (the fault tests' unreachable git server).
		strings.Contains(low, "packet write failed"), strings.Contains(low, "broken pipe"),
		strings.Contains(low, "connection reset"):
		return temporal.NewApplicationError(full, ErrTypeGitUnreachable)
	}
	return temporal.NewApplicationError(full, ErrTypeGitFailed)
}

func duSize(root string) (int64, error) {
	var n int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if i, err := d.Info(); err == nil {
			n += i.Size() + 512
		}
		return nil
	})
	return n, err
}

// prune removes the least recently used checkouts that no activity holds
// until the cache is within MaxBytes, and temporary folders no fetch of
// this process is filling.
func (c *Checkouts) prune() {
	if c.MaxBytes <= 0 {
		return
	}
	ents, err := os.ReadDir(c.Root)
	if err != nil {
		return
	}
	type ent struct {
		name string
		size int64
		used time.Time
	}
	var all []ent
	var total int64
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "tmp-") {
			continue
		}
		p := filepath.Join(c.Root, e.Name())
		b, err := os.ReadFile(filepath.Join(p, "size"))
		if err != nil {
			continue
		}
		n, _ := strconv.ParseInt(string(b), 10, 64)
		fi, err := os.Stat(filepath.Join(p, "used"))
		if err != nil {
			continue
		}
		all = append(all, ent{e.Name(), n, fi.ModTime()})
		total += n
	}
	slices.SortFunc(all, func(a, b ent) int { return a.used.Compare(b.used) })
	for _, e := range all {
		if total <= c.MaxBytes {
			return
		}
		c.mu.Lock()
		busy := c.inUse[e.name] > 0 || c.inflight[e.name] != nil
		if !busy {
			// Out of the cache's view first, so no Acquire finds it half gone.
			old := filepath.Join(c.Root, e.name)
			gone := filepath.Join(c.Root, "tmp-gone-"+e.name)
			if os.Rename(old, gone) == nil {
				total -= e.size
				c.mu.Unlock()
				_ = os.RemoveAll(gone)
				continue
			}
		}
		c.mu.Unlock()
	}
}

// CleanTemporary removes the half-made fetches a killed worker left; call
// it when the worker starts, before any fetch.
func (c *Checkouts) CleanTemporary() error {
	ents, err := os.ReadDir(c.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "tmp-") {
			if err := os.RemoveAll(filepath.Join(c.Root, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
