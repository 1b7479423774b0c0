package runsc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// blobInfoCacheDir is where buildah writes its blob info cache as root,
// whatever --root says. Builds bind-mount a private directory over it in a
// private mount namespace (see buildah.command).
const blobInfoCacheDir = "/var/lib/containers/cache"

// registriesDropIns is the host's registries.conf.d. Its short-name aliases
// would apply to builds even with a private registries.conf; builds see an
// empty directory there instead.
const registriesDropIns = "/etc/containers/registries.conf.d"

// nsScript runs in a fresh private mount namespace (the Go runtime unshares
// it and makes / private before exec): it bind-mounts the spawn's blob info
// cache ($1) and an empty registries.conf.d ($2) over the host's, then
// execs the rest of its arguments. The mounts vanish with the namespace,
// that is when the last process in it exits; nothing needs unmounting.
const nsScript = `set -e
mount --bind "$1" ` + blobInfoCacheDir + `
if [ -d ` + registriesDropIns + ` ]; then mount --bind "$2" ` + registriesDropIns + `; fi
shift 2
exec "$@"`

// buildTools are the host programs a build runs.
type buildTools struct {
	buildah string
	sh      string
}

// lookTool finds name in the PATH that runsc and buildah run with.
func lookTool(name string) (string, error) {
	for _, dir := range strings.Split(strings.TrimPrefix(runscEnv[0], "PATH="), ":") {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w in %s", name, fs.ErrNotExist, runscEnv[0])
}

// buildTools finds buildah, sh and mount, or says why builds cannot run
// here.
func (b *Backend) buildTools() (buildTools, error) {
	t := buildTools{buildah: b.cfg.Buildah}
	if t.buildah != "" {
		if fi, err := os.Stat(t.buildah); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return t, &sandbox.UnsupportedError{Backend: Name, Reason: fmt.Sprintf(
				"builds need buildah, and %s is not an executable file: run scripts/setup.sh as root", t.buildah)}
		}
	} else {
		p, err := lookTool("buildah")
		if err != nil {
			return t, &sandbox.UnsupportedError{Backend: Name, Reason: fmt.Sprintf(
				"builds need buildah (%v): run scripts/setup.sh as root, or set Config.Buildah", err)}
		}
		t.buildah = p
	}
	sh, err := lookTool("sh")
	if err != nil {
		return t, &sandbox.UnsupportedError{Backend: Name, Reason: fmt.Sprintf("builds need a host sh: %v", err)}
	}
	if _, err := lookTool("mount"); err != nil {
		return t, &sandbox.UnsupportedError{Backend: Name, Reason: fmt.Sprintf("builds need the host's mount: %v", err)}
	}
	t.sh = sh
	return t, nil
}

// buildah is one spawn's private buildah: storage, configuration, temporary
// files and the runsc root of its build steps, all below dir:
//
//	s/              --root: image and layer storage (vfs)
//	rr/             --runroot
//	r/              runsc --root of the build steps (kept short: runsc puts
//	                its control socket there when the path fits)
//	t/              TMPDIR (buildah's bundles and step rootfs mounts)
//	c/              bind-mounted over /var/lib/containers/cache
//	d/              empty, bind-mounted over /etc/containers/registries.conf.d
//	h/              HOME
//	o/              the boot's overlay upper layer (a file runsc makes)
//	registries.conf, policy.json, storage.conf, containers.conf,
//	auth.json, aliases.conf
//	                its whole configuration; the host's is not read
type buildah struct {
	tools buildTools
	dir   string
	// shared is the graphroot of the shared base-image store the build
	// reads (additionalimagestores), "" when none.
	shared string
	// cgroup is the spawn's tracking cgroup that buildah starts in; nil
	// when the host has none.
	cgroup *os.File
}

// newBuildah makes the private directories and configuration of a build
// in dir, which must exist (the mount point of the spawn's disk).
func newBuildah(tools buildTools, dir string, mirrors map[string]string) (*buildah, error) {
	bh := &buildah{tools: tools, dir: dir}
	if err := isDir(dir); err != nil {
		return nil, fmt.Errorf("opening build directory: %w", err)
	}
	for _, d := range []string{"s", "rr", "r", "t", "c", "d", "h", "o"} {
		if err := os.Mkdir(bh.path(d), 0o700); err != nil {
			return nil, fmt.Errorf("creating build directory: %w", err)
		}
	}
	storage := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", bh.path("s"), bh.path("rr"))
	files := map[string]string{
		"registries.conf": registriesConf(mirrors),
		// Images are pulled into this spawn's private store only, and
		// nothing here verifies signatures: accept what the registry (or
		// its mirror) serves, as a default Debian install does.
		"policy.json":     `{"default":[{"type":"insecureAcceptAnything"}]}` + "\n",
		"storage.conf":    storage,
		"containers.conf": "# codegenie: built-in defaults only\n",
		// No credentials: the host's are not used.
		"auth.json": `{"auths":{}}` + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(bh.path(name), []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("writing build configuration: %w", err)
		}
	}
	// The bind mount needs its mount point. buildah would create this
	// directory on its first pull anyway; it stays empty on the host.
	if err := os.MkdirAll(blobInfoCacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the mount point %s: %w", blobInfoCacheDir, err)
	}
	return bh, nil
}

func (bh *buildah) path(name string) string { return filepath.Join(bh.dir, name) }

// runscRoot is the runsc --root of the build steps.
func (bh *buildah) runscRoot() string { return bh.path("r") }

// env is buildah's whole environment: nothing of the caller's, and every
// configuration file private. REGISTRY_AUTH_FILE holds no credentials: the
// host's registry credentials are not used.
func (bh *buildah) env() []string {
	return []string{
		runscEnv[0],
		"HOME=" + bh.path("h"),
		"TMPDIR=" + bh.path("t"),
		"CONTAINERS_CONF=" + bh.path("containers.conf"),
		"CONTAINERS_STORAGE_CONF=" + bh.path("storage.conf"),
		"CONTAINERS_REGISTRIES_CONF=" + bh.path("registries.conf"),
		"REGISTRY_AUTH_FILE=" + bh.path("auth.json"),
	}
}

// command returns buildah with args, in its private storage and
// configuration, run through nsScript in a private mount namespace, in its
// own process group, and killed if this process dies.
func (bh *buildah) command(args ...string) *exec.Cmd {
	return bh.commandIn(store{root: bh.path("s"), runroot: bh.path("rr"), conf: bh.path("storage.conf")}, args...)
}

// store is an image store a buildah command works on: the private one,
// or the shared base-image store.
type store struct{ root, runroot, conf string }

// commandIn is command on another store, with this buildah's
// configuration otherwise.
func (bh *buildah) commandIn(st store, args ...string) *exec.Cmd {
	// The store is named only by its storage.conf (graphroot, runroot,
	// driver): with --root or --storage-driver on the command line buildah
	// drops the conf's additional image stores.
	full := []string{"-c", nsScript, "sh", bh.path("c"), bh.path("d"), bh.tools.buildah,
		"--registries-conf", bh.path("registries.conf"), "--short-name-alias-conf", bh.path("aliases.conf")}
	full = append(full, args...)
	cmd := exec.Command(bh.tools.sh, full...)
	cmd.Env = bh.env()
	for i, kv := range cmd.Env {
		if strings.HasPrefix(kv, "CONTAINERS_STORAGE_CONF=") {
			cmd.Env[i] = "CONTAINERS_STORAGE_CONF=" + st.conf
		}
	}
	cmd.Dir = bh.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Unshareflags: syscall.CLONE_NEWNS,
		Setpgid:      true,
		Pdeathsig:    syscall.SIGKILL, // run starts it pinned (see startPinned)
	}
	intoCgroup(cmd, bh.cgroup)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// run starts cmd and waits for it; when ctx is done first, it kills cmd's
// process group and returns ctx's error. The runsc sandboxes of build
// steps are not in that group: cleanBuild deletes them.
func run(ctx context.Context, cmd *exec.Cmd) error {
	p, err := startPinned(cmd)
	if err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		<-p.done
		return ctxErr(ctx)
	}
}

// maxAdminOutput bounds what the backend reads of a buildah command that
// is not a build (an image inspection is a few KiB).
const maxAdminOutput = 4 << 20

// output runs a short buildah command and returns its stdout. The error
// carries the first line of its stderr.
func (bh *buildah) output(ctx context.Context, args ...string) ([]byte, error) {
	return bh.outputIn(ctx, store{root: bh.path("s"), runroot: bh.path("rr"), conf: bh.path("storage.conf")}, args...)
}

// outputIn is output on another store.
func (bh *buildah) outputIn(ctx context.Context, st store, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := bh.commandIn(st, args...)
	stdout, stderr := newBoundedBuffer(maxAdminOutput), newBoundedBuffer(64<<10)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := run(ctx, cmd)
	out, truncated := stdout.result()
	if err != nil {
		e, _ := stderr.result()
		return out, fmt.Errorf("buildah %s: %w: %s", args[0], err, lastLine(e))
	}
	if truncated {
		return out, fmt.Errorf("buildah %s: output larger than %d bytes", args[0], maxAdminOutput)
	}
	return out, nil
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// reImageID is a full image ID as buildah prints it.
var reImageID = regexp.MustCompile(`^[0-9a-f]{64}$`)

// imageID returns the full ID of the image tagged tag.
func (bh *buildah) imageID(ctx context.Context, tag string) (string, error) {
	out, err := bh.output(ctx, "inspect", "--type", "image", "--format", "{{.FromImageID}}", tag)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if !reImageID.MatchString(id) {
		return "", fmt.Errorf("buildah inspect %s: %q is not an image ID", tag, id)
	}
	return id, nil
}

// imageConfig is the part of an image's config that a boot uses.
type imageConfig struct {
	User       string   `json:"User"`
	Env        []string `json:"Env"`
	Entrypoint []string `json:"Entrypoint"`
	Cmd        []string `json:"Cmd"`
	WorkingDir string   `json:"WorkingDir"`
	// ExposedPorts are the image's EXPOSEd ports ("8080/tcp").
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	// Healthcheck is the Docker config's HEALTHCHECK test (["CMD", ...] or
	// ["CMD-SHELL", "..."]); the OCI config has none.
	Healthcheck []string `json:"-"`
}

// config reads the OCI config of image, and the HEALTHCHECK of its Docker
// config.
func (bh *buildah) config(ctx context.Context, image string) (imageConfig, error) {
	out, err := bh.output(ctx, "inspect", "--type", "image", image)
	if err != nil {
		return imageConfig{}, err
	}
	var doc struct {
		OCIv1 struct {
			Config imageConfig `json:"config"`
		} `json:"OCIv1"`
		Docker struct {
			Config struct {
				Healthcheck *struct {
					Test []string `json:"Test"`
				} `json:"Healthcheck"`
			} `json:"config"`
		} `json:"Docker"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return imageConfig{}, fmt.Errorf("decoding buildah inspect of %s: %w", image, err)
	}
	cfg := doc.OCIv1.Config
	if hc := doc.Docker.Config.Healthcheck; hc != nil {
		cfg.Healthcheck = hc.Test
	}
	return cfg, nil
}

// mounted is an image's root filesystem as a working container.
type mounted struct {
	name   string // the working container
	rootfs string // its root filesystem on the host
}

// mount returns image's root filesystem, for reading: the boot's sandbox
// reads it as the lower layer of its overlay (its writes go to the upper
// layer, never to the host), and the facts and the trace's interpreters
// read files in it. With vfs storage every layer's directory holds the
// whole tree, so the image's top layer is its root filesystem, and no copy
// is made (a working container would copy the whole image: seconds for
// a node image). When the layer cannot be found, mount makes a working
// container name from image (never pulling) and returns its root
// filesystem: a plain directory in the private store, visible outside
// buildah's mount namespace, that removing the store removes.
func (bh *buildah) mount(ctx context.Context, image, name string) (mounted, error) {
	if dir, ok := bh.layerRoot(image); ok {
		return mounted{name: name, rootfs: dir}, nil
	}
	if _, err := bh.output(ctx, "from", "--pull=never", "--quiet", "--name", name, image); err != nil {
		return mounted{}, err
	}
	out, err := bh.output(ctx, "mount", name)
	if err != nil {
		return mounted{}, err
	}
	dir := strings.TrimSpace(string(out))
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !strings.HasPrefix(dir, bh.path("s")+"/") {
		return mounted{}, fmt.Errorf("buildah mount %s: %q is not a directory of the private store", name, dir)
	}
	if err := isDir(dir); err != nil {
		return mounted{}, fmt.Errorf("buildah mount %s: %w", name, err)
	}
	return mounted{name: name, rootfs: dir}, nil
}

// vfsImage is an image as a vfs store's vfs-images/images.json lists it.
type vfsImage struct {
	ID    string `json:"id"`
	Layer string `json:"layer"`
}

// layerRoot finds image (an image ID, or a prefix of one of at least 11
// digits, as buildah's output gives them) in the private store, then the
// shared one, and returns the directory of its top layer. The images of a
// finished build and the shared bases stay put while the build runs: the
// build holds the shared store's use lock, which the store's eviction
// waits for.
func (bh *buildah) layerRoot(image string) (string, bool) {
	if len(image) < 11 || !reHex.MatchString(image) {
		return "", false
	}
	for _, store := range []string{bh.path("s"), bh.shared} {
		if store == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(store, "vfs-images", "images.json"))
		if err != nil {
			continue
		}
		var images []vfsImage
		if json.Unmarshal(b, &images) != nil {
			continue
		}
		var found []vfsImage
		for _, im := range images {
			if strings.HasPrefix(im.ID, image) {
				found = append(found, im)
			}
		}
		if len(found) != 1 || !reHex.MatchString(found[0].Layer) {
			continue
		}
		dir := filepath.Join(store, "vfs", "dir", found[0].Layer)
		if isDir(dir) == nil {
			return dir, true
		}
	}
	return "", false
}

var reHex = regexp.MustCompile(`^[0-9a-f]+$`)

// registriesConf is the registries.conf of a build: docker.io for short
// names, and each mirror of mirrors in front of its registry. A mirror on
// loopback is plain HTTP (insecure = true); any other uses TLS. mirrors
// must have passed checkMirrors.
func registriesConf(mirrors map[string]string) string {
	var b strings.Builder
	b.WriteString("unqualified-search-registries = [\"docker.io\"]\nshort-name-mode = \"permissive\"\n")
	regs := make([]string, 0, len(mirrors))
	for r := range mirrors {
		regs = append(regs, r)
	}
	slices.Sort(regs)
	for _, r := range regs {
		m := mirrors[r]
		fmt.Fprintf(&b, "\n[[registry]]\nlocation = %q\n\n[[registry.mirror]]\nlocation = %q\n", r, m)
		if loopbackHost(m) {
			b.WriteString("insecure = true\n")
		}
	}
	return b.String()
}

var (
	reRegistry = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$`)
	reMirror   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._/-][a-z0-9]+)*)?$`)
)

// checkMirrors validates BuildSpec.RegistryMirrors: registry hosts mapped
// to mirror hosts (with an optional port and repository path), nothing
// that could break out of a TOML string.
func checkMirrors(mirrors map[string]string) error {
	for r, m := range mirrors {
		if !reRegistry.MatchString(r) {
			return invalid("registry %q in the mirrors is not a registry host", r)
		}
		if !reMirror.MatchString(m) {
			return invalid("mirror %q of %s is not host[:port][/path]", m, r)
		}
	}
	return nil
}

// loopbackHost reports whether a mirror's host is on loopback.
func loopbackHost(mirror string) bool {
	host, _, _ := strings.Cut(mirror, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cleanBuild deletes what a build left in its runsc root: sandboxes of
// build steps that buildah did not delete (it was killed, or crashed) and
// their cgroups, which runsc names after the container. It only touches
// containers listed in that private root.
func (b *Backend) cleanBuild(ctx context.Context, runscRoot string) error {
	if emptyDir(runscRoot) {
		return nil
	}
	out, err := b.admin(ctx, runscRoot, "list", "-quiet")
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range strings.Fields(string(out)) {
		_, _ = b.admin(ctx, runscRoot, "kill", "--all", c, "KILL")
		if _, err := b.admin(ctx, runscRoot, "delete", "--force", c); err != nil {
			errs = append(errs, err)
		}
		for _, cg := range cgroupLeaves(c) {
			if err := removeCgroup(ctx, cg); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// readBounded reads at most limit bytes of r, and fails past that.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}
