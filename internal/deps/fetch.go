package deps

import (
	"context"
	"crypto/sha1" //nolint:gosec // sha1 SRI hashes are what older lockfiles pin
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind says why a package is missing.
type Kind string

// The kinds of missing package.
const (
	// KindUnreachable: the registry could not be reached and the package
	// is not in the cache.
	KindUnreachable Kind = "unreachable"
	// KindIntegrity: the tarball's hash differs from the lockfile's.
	KindIntegrity Kind = "integrity_mismatch"
	// KindUnsafe: the tarball would escape its package, or holds a device.
	KindUnsafe Kind = "unsafe_archive"
	// KindTooLarge: the tarball is over a size or file-count cap.
	KindTooLarge Kind = "too_large"
	// KindRegistry: the registry answered with an error (404, 401, ...).
	KindRegistry Kind = "registry_error"
	// KindNoIntegrity: neither the lockfile nor the registry gives a hash
	// to verify the tarball with.
	KindNoIntegrity Kind = "no_integrity"
)

// ErrIntegrity matches every *IntegrityError.
var ErrIntegrity = errors.New("integrity mismatch")

// IntegrityError is a tarball whose hash is not the one pinned. It is
// never unpacked.
type IntegrityError struct {
	URL       string
	Want, Got string
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("%s hashes to %s, but the lockfile pins %s; the tarball was not unpacked (a tampered registry or a stale lockfile: run the package manager's install to refresh it)", e.URL, e.Got, e.Want)
}

// Is matches ErrIntegrity.
func (e *IntegrityError) Is(target error) bool { return target == ErrIntegrity }

// ErrUnreachable matches every *UnreachableError.
var ErrUnreachable = errors.New("registry unreachable")

// UnreachableError is a registry that could not be reached.
type UnreachableError struct {
	Registry string
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("registry %s is unreachable (%v); only cached packages were used", e.Registry, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Is matches ErrUnreachable.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// RegistryError is an HTTP error answer.
type RegistryError struct {
	URL    string
	Status int
}

func (e *RegistryError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d", e.URL, e.Status)
}

// Installed is a package available in the cache at Dir.
type Installed struct {
	Package
	// Key is the package's content key: ALGO-HEX of the verified hash.
	Key string `json:"key"`
	// Dir is the unpacked package's folder in the cache.
	Dir string `json:"dir"`
	// IntegrityFromRegistry says the lockfile pinned no hash, so the
	// tarball was verified against the registry's own (berry lockfiles).
	IntegrityFromRegistry bool `json:"integrity_from_registry,omitempty"`
}

// Missing is a package that could not be made available.
type Missing struct {
	Package
	Kind  Kind   `json:"kind"`
	Error string `json:"error"`
}

// Result is an installation: what is available and what is not.
type Result struct {
	Format    string
	Installed []Installed
	Missing   []Missing
	// Lock is the lockfile the packages came from.
	Lock *Lock
}

// Fetcher downloads, verifies and unpacks packages into its cache. It is
// safe for concurrent use; a package wanted by several concurrent installs
// is fetched once.
type Fetcher struct {
	// Dir is the cache folder; packages go to Dir/ALGO-HEX.
	Dir string
	// Client makes the requests; nil means a client that trusts the host's
	// store (Go's default on Linux reads /etc/ssl/certs).
	Client *http.Client
	// Offline makes no request: only cached packages are used.
	Offline bool
	Limits  Limits
	// Memo holds what callers derive from one cached package alone, keyed
	// by its Key (probe.Dependencies.Memo): shared by every install of
	// this Fetcher, so a portfolio scans each package version once.
	Memo sync.Map

	listings sync.Map // Key → []string

	mu          sync.Mutex
	locks       map[string]*sync.Mutex
	unreachable map[string]error // registry → first failure
	fetches     atomic.Int64
}

// Fetches counts the tarballs downloaded so far.
func (f *Fetcher) Fetches() int64 { return f.fetches.Load() }

var defaultClient = &http.Client{
	Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		MaxIdleConnsPerHost:   8,
	},
}

func (f *Fetcher) client() *http.Client {
	if f.Client != nil {
		return f.Client
	}
	return defaultClient
}

// Install reads the lockfile and registry settings of the repository at
// dir and makes every pinned production package available.
func (f *Fetcher) Install(ctx context.Context, dir string) (*Result, error) {
	return f.InstallDev(ctx, dir, false)
}

// InstallDev is Install that, with dev, installs the development packages
// too, as an install that omits nothing does (ReadLockDev).
func (f *Fetcher) InstallDev(ctx context.Context, dir string, dev bool) (*Result, error) {
	lock, err := ReadLockDev(dir, dev)
	if err != nil {
		return nil, err
	}
	regs, err := ReadRegistries(dir)
	if err != nil {
		return nil, err
	}
	return f.InstallLock(ctx, lock, regs)
}

// InstallLock makes the packages of lock available, fetching from regs.
// Per-package failures are in Result.Missing; an error is a cache that
// cannot be written.
func (f *Fetcher) InstallLock(ctx context.Context, lock *Lock, regs Registries) (*Result, error) {
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the dependency cache: %w", err)
	}
	type out struct {
		in   *Installed
		miss *Missing
		err  error
	}
	outs := make([]out, len(lock.Packages))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(lock.Packages), 2*runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(lock.Packages) {
					return
				}
				in, miss, err := f.one(ctx, lock.Packages[i], regs)
				outs[i] = out{in, miss, err}
			}
		}()
	}
	wg.Wait()
	r := &Result{Format: lock.Format, Lock: lock}
	for _, o := range outs {
		switch {
		case o.err != nil:
			return nil, o.err
		case o.in != nil:
			r.Installed = append(r.Installed, *o.in)
		case o.miss != nil:
			r.Missing = append(r.Missing, *o.miss)
		}
	}
	return r, ctx.Err()
}

// one makes one package available.
func (f *Fetcher) one(ctx context.Context, p Package, regs Registries) (*Installed, *Missing, error) {
	miss := func(k Kind, err error) (*Installed, *Missing, error) {
		return nil, &Missing{Package: p, Kind: k, Error: err.Error()}, nil
	}
	reg := regs.For(p.Name)
	integrity, fromRegistry := p.Integrity, false
	if integrity == "" {
		if f.Offline {
			return miss(KindUnreachable, &UnreachableError{Registry: reg, Err: errors.New("offline")})
		}
		var err error
		if integrity, err = f.registryIntegrity(ctx, reg, p); err != nil {
			return miss(kindOf(err), err)
		}
		if integrity == "" {
			return miss(KindNoIntegrity, fmt.Errorf("neither the lockfile nor %s gives a hash for %s@%s, so its tarball cannot be verified", reg, p.Name, p.Version))
		}
		fromRegistry = true
	}
	sri, err := parseSRI(integrity)
	if err != nil {
		return miss(KindNoIntegrity, fmt.Errorf("%s@%s: %w", p.Name, p.Version, err))
	}
	dst := filepath.Join(f.Dir, sri.key())
	in := &Installed{Package: p, Key: sri.key(), Dir: dst, IntegrityFromRegistry: fromRegistry}
	l := f.lock(sri.key())
	l.Lock()
	defer l.Unlock()
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		return in, nil, nil
	}
	if f.Offline {
		return miss(KindUnreachable, &UnreachableError{Registry: reg, Err: errors.New("offline")})
	}
	if err := f.reachable(reg); err != nil {
		return miss(KindUnreachable, err)
	}
	err = f.download(ctx, regs.URLFor(p), reg, sri, dst)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if k := kindOf(err); k != "" {
			return miss(k, err)
		}
		return nil, nil, err
	}
	return in, nil, nil
}

// kindOf classifies a per-package failure; "" is an error of the cache.
func kindOf(err error) Kind {
	switch {
	case errors.Is(err, ErrIntegrity):
		return KindIntegrity
	case errors.Is(err, ErrUnsafeArchive):
		return KindUnsafe
	case errors.Is(err, ErrTooLarge):
		return KindTooLarge
	case errors.Is(err, ErrUnreachable):
		return KindUnreachable
	}
	if _, ok := errors.AsType[*RegistryError](err); ok {
		return KindRegistry
	}
	return ""
}

func (f *Fetcher) lock(key string) *sync.Mutex {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locks == nil {
		f.locks = map[string]*sync.Mutex{}
	}
	l, ok := f.locks[key]
	if !ok {
		l = new(sync.Mutex)
		f.locks[key] = l
	}
	return l
}

// reachable returns the earlier failure to reach reg, so that an offline
// run tries each registry once, not once per package.
func (f *Fetcher) reachable(reg string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unreachable[reg]
}

func (f *Fetcher) markUnreachable(reg string, err error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unreachable == nil {
		f.unreachable = map[string]error{}
	}
	ue := &UnreachableError{Registry: reg, Err: err}
	if _, ok := f.unreachable[reg]; !ok {
		f.unreachable[reg] = ue
	}
	return ue
}

func (f *Fetcher) get(ctx context.Context, u, reg string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, f.markUnreachable(reg, err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, &RegistryError{URL: u, Status: resp.StatusCode}
	}
	return resp, nil
}

// registryIntegrity asks the registry for a version's dist.integrity.
func (f *Fetcher) registryIntegrity(ctx context.Context, reg string, p Package) (string, error) {
	if err := f.reachable(reg); err != nil {
		return "", err
	}
	resp, err := f.get(ctx, reg+"/"+url.PathEscape(p.Name)+"/"+url.PathEscape(p.Version), reg)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var doc struct {
		Dist struct {
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&doc); err != nil {
		return "", &RegistryError{URL: resp.Request.URL.String(), Status: resp.StatusCode}
	}
	if doc.Dist.Integrity != "" {
		return doc.Dist.Integrity, nil
	}
	if doc.Dist.Shasum != "" {
		return hexToSRI("sha1", doc.Dist.Shasum)
	}
	return "", nil
}

// download fetches u into a temporary file while hashing it, verifies the
// hash, and only then unpacks it into a temporary folder renamed to dst.
func (f *Fetcher) download(ctx context.Context, u, reg string, sri sri, dst string) error {
	lim := f.Limits.withDefaults()
	resp, err := f.get(ctx, u, reg)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	f.fetches.Add(1)
	tmp, err := os.CreateTemp(f.Dir, ".tgz-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sri.newHash()
	body := &countingReader{r: resp.Body, limit: lim.Compressed, what: "compressed size"}
	if _, err := io.Copy(io.MultiWriter(tmp, h), body); err != nil {
		if _, ok := errors.AsType[*TooLargeError](err); ok {
			return err
		}
		return f.markUnreachable(reg, err)
	}
	if got := h.Sum(nil); string(got) != string(sri.digest) {
		return &IntegrityError{URL: u, Want: sri.String(), Got: sri.algo + "-" + base64.StdEncoding.EncodeToString(got)}
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	work, err := os.MkdirTemp(f.Dir, ".unpack-*")
	if err != nil {
		return err
	}
	if err := unpack(tmp, work, lim); err != nil {
		_ = removeAll(work)
		return fmt.Errorf("%s: %w", u, err)
	}
	if err := os.Rename(work, dst); err != nil {
		_ = removeAll(work)
		if fi, serr := os.Stat(dst); serr == nil && fi.IsDir() {
			return nil // another process unpacked the same bytes first
		}
		return fmt.Errorf("storing %s in the dependency cache: %w", u, err)
	}
	return nil
}

// sri is one parsed Subresource Integrity hash.
type sri struct {
	algo   string
	digest []byte
}

func (s sri) key() string    { return s.algo + "-" + hex.EncodeToString(s.digest) }
func (s sri) String() string { return s.algo + "-" + base64.StdEncoding.EncodeToString(s.digest) }

func (s sri) newHash() hash.Hash {
	switch s.algo {
	case "sha512":
		return sha512.New()
	case "sha384":
		return sha512.New384()
	case "sha256":
		return sha256.New()
	}
	return sha1.New() //nolint:gosec // pinned by the lockfile
}

var sriStrength = map[string]int{"sha1": 1, "sha256": 2, "sha384": 3, "sha512": 4}
var sriSize = map[string]int{"sha1": 20, "sha256": 32, "sha384": 48, "sha512": 64}

// parseSRI reads an integrity string (space-separated ALGO-BASE64 hashes)
// and returns its strongest hash.
func parseSRI(s string) (sri, error) {
	var best sri
	fields := strings.Fields(s)
	sort.Strings(fields)
	for _, f := range fields {
		algo, b64, ok := strings.Cut(f, "-")
		if i := strings.IndexByte(b64, '?'); i >= 0 {
			b64 = b64[:i]
		}
		if !ok || sriStrength[algo] == 0 {
			continue
		}
		d, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(d) != sriSize[algo] {
			continue
		}
		if sriStrength[algo] > sriStrength[best.algo] {
			best = sri{algo: algo, digest: d}
		}
	}
	if best.algo == "" {
		return best, fmt.Errorf("integrity %q holds no sha1, sha256, sha384 or sha512 hash", s)
	}
	return best, nil
}

// hexToSRI turns a hex digest into an SRI string.
func hexToSRI(algo, h string) (string, error) {
	d, err := hex.DecodeString(h)
	if err != nil || len(d) != sriSize[algo] {
		return "", fmt.Errorf("%q is not a %s hex digest", h, algo)
	}
	return algo + "-" + base64.StdEncoding.EncodeToString(d), nil
}

// RemoveCache removes a dependency cache folder, whose packages are
// read-only.
func RemoveCache(dir string) error { return removeAll(dir) }

// List returns the regular files of an installed package, relative to its
// folder and slash-separated, listing each Key once per Fetcher: a cached
// package never changes.
func (f *Fetcher) List(in Installed) ([]string, error) {
	if v, ok := f.listings.Load(in.Key); ok {
		return v.([]string), nil
	}
	files := []string{}
	err := filepath.WalkDir(in.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(in.Dir, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s@%s in the dependency cache: %w", in.Name, in.Version, err)
	}
	f.listings.Store(in.Key, files)
	return files, nil
}
