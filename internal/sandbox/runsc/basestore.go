package runsc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// The shared base-image store. Every build spawn used to pull its base
// images into its own empty store; now the backend pulls each base once
// into a store shared by all spawns on the host, and builds read it as a
// buildah additional image store: read-only, never written by a build.
//
//	<BaseStore>/s/        vfs graphroot of the shared images
//	<BaseStore>/rr/       its runroot
//	<BaseStore>/a/        a private buildah setup (see newBuildah) for
//	                      the store's own commands (prune)
//	<BaseStore>/used/     one file per manifest digest: "<image ID> <bytes>
//	                      <reference>"; its mtime is the last use
//	<BaseStore>/use.lock  flock, shared by every build that reads the
//	                      store (its pulls included), exclusive for a prune
//	<BaseStore>/pull-<h>.lock flock, exclusive while a pull of the reference
//	                      of hash h writes the store
//
// Before a build, each image base of the Dockerfile (not a stage, not
// scratch, no ARG in it) is resolved to its manifest digest through the
// request's mirrors (a HEAD request, no credentials); when the store
// already holds that digest, the build uses it as it is. Otherwise it is
// pulled into the shared store with buildah pull --policy=always (buildah
// 1.28 has no "newer"; blobs already stored are not fetched again),
// through the request's own registries.conf (its mirrors). A spawn pulls
// its bases at once; a
// moved tag pulls the new image beside the old one. The
// build's private copy of the Dockerfile then names each base by the image
// ID this request resolved (FROM <id>), so that concurrent spawns whose
// mirrors serve different images under one tag never see each other's: an
// ID is content-addressed. Pulls of one reference are serialized on the
// host; builds hold use.lock shared for their whole
// life, so that a prune, which needs it exclusively (and gives up when a
// build holds it), never removes an image in use. containers/storage's own
// locks do not make reading the store safe during a pull: see stored and
// store.lock (writing).
//
// The store is capped at Config.BaseStoreBytes: after a build, when the
// recorded sizes add up past it, the least recently used images are
// removed until it fits; Prune does the same on demand (codegenie cache
// prune). A base that cannot be pulled stops the spawn with a failed
// "pull:<reference>" phase that names the registries tried.

// Defaults of the shared base-image store.
const (
	// DefaultBaseStore is where the shared store lives when
	// Config.BaseStore is empty.
	DefaultBaseStore = "/var/lib/codegenie/bases"
	// DefaultBaseStoreBytes caps it.
	DefaultBaseStoreBytes = 20 << 30
)

// pullPhasePrefix starts the phase name of a base image's pull.
const pullPhasePrefix = "pull:"

// baseStore is the shared store of one backend.
type baseStore struct {
	dir      string
	maxBytes int64
}

func (s *baseStore) path(name string) string { return filepath.Join(s.dir, name) }

// open makes the store's directories.
func (s *baseStore) open() error {
	for _, d := range []string{"", "s", "rr", "used"} {
		if err := os.MkdirAll(s.path(d), 0o700); err != nil {
			return fmt.Errorf("creating the base-image store: %w", err)
		}
	}
	return nil
}

// storageConf is the storage.conf of a command on the shared store itself.
func (s *baseStore) storageConf() string {
	return fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", s.path("s"), s.path("rr"))
}

// readOnlyConf is the storage.conf of a build that reads the store: its
// private store, with the shared one as an additional image store.
func (s *baseStore) readOnlyConf(graphroot, runroot string) string {
	return fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n\n[storage.options]\nadditionalimagestores = [%q]\n",
		graphroot, runroot, s.path("s"))
}

// use takes the store's use lock shared, for the life of a build.
func (s *baseStore) use() (*os.File, error) {
	return lockFile(s.path("use.lock"), unix.LOCK_SH)
}

// A pull writes the store only for an image new to it. containers/storage
// takes a store's layer and image locks in one order when a pull writes
// the store (layers, then images) and in the other when a build reads it
// as an additional image store (images, then layers). Seen here in
// /proc/locks: a pull of the Debian node:22 (1.7 GB of vfs layers to
// write) held layers.lock and, its threads asleep rather than queued in
// the kernel, retried images.lock while two builds held images.lock and
// waited for layers.lock, all three stuck until the pull's 10-minute
// timeout. Every spawn used to run buildah pull --policy=always, so every
// spawn could meet it; now a base whose digest the store holds is used as
// it is (pullBase), and only the first pull of an image can.

// stored returns the ID of the image of manifest digest in the store, read
// from its record and the store's image list; "" when it is not there.
func (s *baseStore) stored(digest string) string {
	key := strings.ReplaceAll(digest, ":", "-")
	if !strings.HasPrefix(key, "sha256-") || strings.ContainsAny(key, "/.") {
		return ""
	}
	b, err := os.ReadFile(s.path(filepath.Join("used", key)))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 1 || !reImageID.MatchString(f[0]) {
		return ""
	}
	if _, ok := topLayerDir(s.path("s"), f[0]); !ok {
		return ""
	}
	return f[0]
}

// anonymous resolves no credentials: the backend's pulls use none of the
// host's.
type anonymous struct{}

func (anonymous) Resolve(authn.Resource) (authn.Authenticator, error) { return authn.Anonymous, nil }

// resolve returns the manifest digest that ref has on the request's mirror
// of its registry, else on the registry, as buildah's pull would find it;
// "" when neither answers within a minute.
func (br *buildRun) resolve(ctx context.Context, ref string) string {
	var pairs []string
	for reg, m := range br.req.Build.RegistryMirrors {
		pairs = append(pairs, reg+"="+m)
	}
	mirrors, err := image.ParseMirrors(strings.Join(pairs, ","))
	if err != nil {
		return ""
	}
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r := &image.Remote{Mirrors: mirrors, Options: []remote.Option{remote.WithAuthFromKeychain(anonymous{})}}
	d, err := r.Digest(hctx, ref)
	if err != nil {
		return ""
	}
	return d
}

// The store's write lock. containers/storage locks a store's layers then
// its images when a pull writes it, and its images then its layers when a
// build reads it as an additional image store: a pull and a build that
// meet deadlock until the pull's timeout (seen live in /proc/locks, with
// the Debian stand-ins' long pulls). So a pull that writes the store holds
// store.lock exclusively, and a build holds it shared from its first read
// of the store to its end. gate.lock makes waiting pulls win over new
// builds: a pull takes it exclusively before store.lock, and a build takes
// it shared, only to pass. Every wait gives up when the spawn's context
// ends (its timeout), so a pull queued behind a long build fails with
// that spawn's timeout, never past it.
const (
	storeLockName = "store.lock"
	gateLockName  = "gate.lock"
	// lockPoll is how often a wait for the store tries its lock again.
	lockPoll = 100 * time.Millisecond
)

// reading takes the store for a build that reads it; release ends it.
func (s *baseStore) reading(ctx context.Context) (release func(), err error) {
	gate, err := waitLock(ctx, s.path(gateLockName), unix.LOCK_SH, "a pull of a new base image into the shared store")
	if err != nil {
		return nil, err
	}
	defer gate.Close()
	rw, err := waitLock(ctx, s.path(storeLockName), unix.LOCK_SH, "a pull of a new base image into the shared store")
	if err != nil {
		return nil, err
	}
	return func() { _ = rw.Close() }, nil
}

// writing takes the store for a pull that writes it; release ends it.
func (s *baseStore) writing(ctx context.Context) (release func(), err error) {
	gate, err := waitLock(ctx, s.path(gateLockName), unix.LOCK_EX, "another pull into the shared store")
	if err != nil {
		return nil, err
	}
	rw, err := waitLock(ctx, s.path(storeLockName), unix.LOCK_EX, "the builds that read the shared store")
	if err != nil {
		_ = gate.Close()
		return nil, err
	}
	return func() { _ = rw.Close(); _ = gate.Close() }, nil
}

// waitLock flocks file with how, trying again every lockPoll until it has
// it or ctx ends; what names what holds it, for the error.
func waitLock(ctx context.Context, file string, how int, what string) (*os.File, error) {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return f, nil
		case errors.Is(err, unix.EWOULDBLOCK), errors.Is(err, unix.EINTR):
		default:
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", file, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}

// imageBase is an image a stage is built FROM.
type imageBase struct {
	ref    string
	stages []int // the stages built FROM it
}

// imageBases lists the image bases of stages: FROM values that are not an
// earlier stage, not scratch, and hold no ARG, each once, in order.
func imageBases(stages []stage) []imageBase {
	var out []imageBase
	for i, s := range stages {
		ref := s.base
		if ref == "" || strings.EqualFold(ref, "scratch") || strings.ContainsAny(ref, "$ \t") || s.fromLine != s.fromEnd {
			continue
		}
		isStage := false
		for _, prev := range stages[:i] {
			if prev.name != "" && strings.EqualFold(prev.name, ref) {
				isStage = true
			}
		}
		if isStage {
			continue
		}
		if j := slices.IndexFunc(out, func(b imageBase) bool { return b.ref == ref }); j >= 0 {
			out[j].stages = append(out[j].stages, i)
			continue
		}
		out = append(out, imageBase{ref: ref, stages: []int{i}})
	}
	return out
}

// pullBases pulls the Dockerfile's image bases into the shared store and
// returns one phase per base, and the image ID of each stage built on
// one. A base that cannot be pulled ends the list with a Failed phase;
// err reports a failure of the backend.
func (br *buildRun) pullBases(ctx context.Context) ([]sandbox.PhaseResult, map[int]string, error) {
	pinned := map[int]string{}
	bases := imageBases(br.plan.stages)
	type pulled struct {
		p   sandbox.PhaseResult
		id  string
		err error
	}
	res := make([]pulled, len(bases))
	var wg sync.WaitGroup
	for i, base := range bases {
		wg.Go(func() {
			res[i].p, res[i].id, res[i].err = br.pullBase(ctx, base.ref)
		})
	}
	wg.Wait()
	var phases []sandbox.PhaseResult
	for i, base := range bases {
		r := res[i]
		phases = append(phases, r.p)
		if r.err != nil || r.p.Failed {
			return phases, pinned, r.err
		}
		for _, s := range base.stages {
			pinned[s] = r.id
		}
	}
	return phases, pinned, nil
}

// pullBase pulls one reference into the shared store, under its pull lock.
func (br *buildRun) pullBase(ctx context.Context, ref string) (sandbox.PhaseResult, string, error) {
	st := br.b.bases
	p := sandbox.PhaseResult{Name: pullPhasePrefix + ref}
	br.rep.report(sandbox.Progress{Kind: sandbox.ProgressPhase, Phase: p.Name})
	start := time.Now()
	// One pull of a reference at a time on the host; pulls of different
	// references run at once (containers/storage locks the store).
	sum := sha256.Sum256([]byte(ref))
	lock, err := lockFile(st.path("pull-"+hex.EncodeToString(sum[:8])+".lock"), unix.LOCK_EX)
	if err != nil {
		return p, "", err
	}
	defer lock.Close()
	conf := br.bh.path("shared-storage.conf")
	if err := writeOnce(conf, st.storageConf()); err != nil {
		return p, "", err
	}
	if digest := br.resolve(ctx, ref); digest != "" {
		if id := st.stored(digest); id != "" {
			key := strings.ReplaceAll(digest, ":", "-")
			if err := st.record(ctx, br.bh, store{root: st.path("s"), runroot: st.path("rr"), conf: conf}, key, id, ref); err != nil {
				return p, "", err
			}
			p.Duration = time.Since(start)
			p.OutputTail = fmt.Sprintf("%s is %s (%s)\n", ref, id[:12], digest)
			return p, id, nil
		}
	}
	// This pull writes the store: no build may read it meanwhile.
	release, err := st.writing(ctx)
	if err != nil {
		if ctx.Err() != nil {
			p.Failed, p.ExitCode = true, -1
			p.Duration = time.Since(start)
			return p, "", nil
		}
		return p, "", err
	}
	defer release()
	br.b.pulls.Add(1)
	cmd := br.bh.commandIn(store{root: st.path("s"), runroot: st.path("rr"), conf: conf},
		"pull", "--policy=always", "--signature-policy", br.bh.path("policy.json"), "--quiet", ref)
	stdout, stderr := newBoundedBuffer(maxAdminOutput), newBoundedBuffer(64<<10)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	runErr := run(pctx, cmd)
	p.Duration = time.Since(start)
	out, _ := stdout.result()
	errOut, _ := stderr.result()
	var exitErr interface{ ExitCode() int }
	switch {
	case runErr == nil:
	case ctx.Err() != nil:
		p.Failed, p.ExitCode = true, -1
		return p, "", nil
	case errors.As(runErr, &exitErr):
		p.Failed, p.ExitCode = true, exitErr.ExitCode()
		p.OutputTail = outputTail(nil, errOut) + br.unavailable(ref) + "\n"
		return p, "", nil
	default:
		return p, "", fmt.Errorf("running buildah pull: %w", runErr)
	}
	id := lastLine(out)
	if !reImageID.MatchString(id) {
		return p, "", fmt.Errorf("buildah pull %s: %q is not an image ID", ref, id)
	}
	digest, err := br.bh.outputIn(ctx, store{root: st.path("s"), runroot: st.path("rr"), conf: conf},
		"inspect", "--type", "image", "--format", "{{.FromImageDigest}}", id)
	if err != nil {
		return p, "", err
	}
	key := strings.ReplaceAll(strings.TrimSpace(string(digest)), ":", "-")
	if key == "" || strings.ContainsAny(key, "/.") {
		key = "id-" + id
	}
	if err := st.record(ctx, br.bh, store{root: st.path("s"), runroot: st.path("rr"), conf: conf}, key, id, ref); err != nil {
		return p, "", err
	}
	p.OutputTail = fmt.Sprintf("%s is %s (%s)\n", ref, id[:12], strings.TrimSpace(string(digest)))
	return p, id, nil
}

// unavailable names what a failed pull tried: the reference, then the
// mirror of its registry when the request has one, then the registry.
func (br *buildRun) unavailable(ref string) string {
	reg := registryOf(ref)
	tried := []string{}
	if m, ok := br.req.Build.RegistryMirrors[reg]; ok {
		tried = append(tried, fmt.Sprintf("%s (mirror of %s)", m, reg))
	}
	tried = append(tried, reg)
	return fmt.Sprintf("image unavailable: %s could not be pulled; tried %s", ref, strings.Join(tried, ", then "))
}

// registryOf is the registry of an image reference as buildah resolves it
// here: short names are on docker.io.
func registryOf(ref string) string {
	first, _, ok := strings.Cut(ref, "/")
	if !ok || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		return "docker.io"
	}
	return first
}

// record notes a use of the image of digest key: created with its size
// (as buildah reports it, to three significant digits) on its first pull,
// touched on every use.
func (s *baseStore) record(ctx context.Context, bh *buildah, st store, key, id, ref string) error {
	file := s.path(filepath.Join("used", key))
	now := time.Now()
	if _, err := os.Stat(file); err == nil {
		return os.Chtimes(file, now, now)
	}
	out, err := bh.outputIn(ctx, st, "images", "--json", "--no-trunc", id)
	if err != nil {
		return err
	}
	var imgs []struct {
		Size string `json:"size"`
	}
	if err := json.Unmarshal(out, &imgs); err != nil || len(imgs) != 1 {
		return fmt.Errorf("reading the size of base image %s: %q", id[:12], firstLine(out))
	}
	size := parseSize(imgs[0].Size)
	body := fmt.Sprintf("%s %d %s\n", id, size, ref)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		return fmt.Errorf("recording a base image: %w", err)
	}
	return nil
}

// parseSize reads a size as buildah prints it ("146 MB": decimal units, as
// go-units' HumanSize writes them); 0 when it cannot.
func parseSize(s string) int64 {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0
	}
	mult := map[string]float64{"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15}[unit]
	return int64(v * mult)
}

// writeOnce writes a configuration file unless it is there already.
func writeOnce(file, body string) error {
	if _, err := os.Stat(file); err == nil {
		return nil
	}
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(file), err)
	}
	return nil
}

// usedImage is one recorded image of the store.
type usedImage struct {
	key, id string
	bytes   int64
	used    time.Time
}

// list reads the records, least recently used first.
func (s *baseStore) list() []usedImage {
	entries, _ := os.ReadDir(s.path("used"))
	var out []usedImage
	for _, e := range entries {
		b, err := os.ReadFile(s.path(filepath.Join("used", e.Name())))
		fi, ierr := e.Info()
		if err != nil || ierr != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 || !reImageID.MatchString(f[0]) {
			continue
		}
		size, _ := strconv.ParseInt(f[1], 10, 64)
		out = append(out, usedImage{key: e.Name(), id: f[0], bytes: size, used: fi.ModTime()})
	}
	slices.SortFunc(out, func(a, b usedImage) int { return a.used.Compare(b.used) })
	return out
}

// PruneStats says what a prune of the base-image store did.
type PruneStats struct {
	// Dir is the store.
	Dir string `json:"dir"`
	// Removed counts the images removed, and Freed the bytes recorded for
	// them.
	Removed int   `json:"removed"`
	Freed   int64 `json:"freed_bytes"`
	// Kept counts the images left, and Bytes what they take.
	Kept  int   `json:"kept"`
	Bytes int64 `json:"bytes"`
	// Busy is set when a build held the store, so nothing was removed.
	Busy bool `json:"busy,omitempty"`
}

// ErrNoBaseStore reports a prune of a store that does not exist.
var ErrNoBaseStore = errors.New("no base-image store")

// Prune removes the least recently used images of the base-image store of
// cfg until what is left fits maxBytes (0: Config.BaseStoreBytes, which
// defaults to DefaultBaseStoreBytes; negative: every image). It gives up,
// with Busy set, when a build holds the store. It needs root and buildah,
// as builds do; a store that does not exist is ErrNoBaseStore.
func Prune(ctx context.Context, cfg Config, maxBytes int64) (PruneStats, error) {
	cfg = cfg.withDefaults()
	st := &baseStore{dir: cfg.BaseStore, maxBytes: cfg.BaseStoreBytes}
	switch {
	case maxBytes > 0:
		st.maxBytes = maxBytes
	case maxBytes < 0:
		st.maxBytes = 0
	}
	if _, err := os.Stat(st.path("used")); err != nil {
		return PruneStats{Dir: st.dir}, fmt.Errorf("%w at %s", ErrNoBaseStore, st.dir)
	}
	b := &Backend{cfg: cfg}
	tools, err := b.buildTools()
	if err != nil {
		return PruneStats{Dir: st.dir}, err
	}
	return st.prune(ctx, tools, st.maxBytes)
}

// prune removes least recently used images until the rest fits maxBytes
// (0 removes all of them).
func (s *baseStore) prune(ctx context.Context, tools buildTools, maxBytes int64) (PruneStats, error) {
	ps := PruneStats{Dir: s.dir}
	use, err := lockFile(s.path("use.lock"), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		ps.Busy = true
		return ps, nil
	}
	if err != nil {
		return ps, err
	}
	defer use.Close()
	imgs := s.list()
	var total int64
	for _, im := range imgs {
		total += im.bytes
	}
	var bh *buildah
	for _, im := range imgs {
		if total <= maxBytes && maxBytes > 0 {
			break
		}
		if bh == nil {
			if bh, err = s.admin(tools); err != nil {
				return ps, err
			}
		}
		if _, err := bh.outputIn(ctx, store{root: s.path("s"), runroot: s.path("rr"), conf: bh.path("shared-storage.conf")}, "rmi", "-f", im.id); err != nil {
			return ps, fmt.Errorf("removing base image %s: %w", im.id[:12], err)
		}
		if err := os.Remove(s.path(filepath.Join("used", im.key))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ps, fmt.Errorf("removing base image record: %w", err)
		}
		total -= im.bytes
		ps.Removed++
		ps.Freed += im.bytes
	}
	ps.Kept = len(imgs) - ps.Removed
	ps.Bytes = total
	return ps, nil
}

// admin is a private buildah setup for the store's own commands, made
// afresh in <store>/a.
func (s *baseStore) admin(tools buildTools) (*buildah, error) {
	dir := s.path("a")
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clearing the base store's admin directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the base store's admin directory: %w", err)
	}
	bh, err := newBuildah(tools, dir, nil)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(bh.path("shared-storage.conf"), []byte(s.storageConf()), 0o600); err != nil {
		return nil, fmt.Errorf("writing the shared store's storage.conf: %w", err)
	}
	return bh, nil
}

// pinBases rewrites the FROM line of each stage of pinned to name the
// image ID the spawn resolved, keeping its flags and AS name.
func pinBases(dockerfile []byte, stages []stage, pinned map[int]string) []byte {
	if len(pinned) == 0 {
		return dockerfile
	}
	lines := strings.Split(string(dockerfile), "\n")
	for i, id := range pinned {
		s := stages[i]
		if s.fromLine < 1 || s.fromLine > len(lines) {
			continue
		}
		var b strings.Builder
		b.WriteString("FROM ")
		for _, f := range s.fromFlags {
			b.WriteString(f + " ")
		}
		b.WriteString(id)
		if s.name != "" {
			b.WriteString(" AS " + s.name)
		}
		lines[s.fromLine-1] = b.String()
	}
	return []byte(strings.Join(lines, "\n"))
}

// fit prunes the store to its cap when the recorded images exceed it,
// unless a build holds it (the next one to end tries again).
func (s *baseStore) fit(ctx context.Context, tools buildTools) {
	var total int64
	for _, im := range s.list() {
		total += im.bytes
	}
	if total <= s.maxBytes {
		return
	}
	_, _ = s.prune(ctx, tools, s.maxBytes)
}
