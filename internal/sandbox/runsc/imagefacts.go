package runsc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// The facts of a built image (sandbox.ImageFacts) are read host-side,
// read-only and bounded, once its boot has ended: its size and layers from
// the metadata of buildah's stores (the build's private store, and the
// shared base store its bases come from), and the rest from the root
// filesystem the boot mounted (the working container's directory, which
// the boot's overlay never writes). Nothing of the image runs. The walk
// does not follow symlinks, and every file is opened through an os.Root
// on the root filesystem, so that a link in the image cannot lead out of
// it.

// Bounds of the reading.
const (
	// maxFactEntries bounds the entries the walk of a root filesystem
	// visits.
	maxFactEntries = 1 << 20
	// maxPackageDB bounds a package database file (dpkg's status of a
	// full Debian image is a few MiB).
	maxPackageDB = 64 << 20
	// maxStatusD bounds the files read in /var/lib/dpkg/status.d and
	// maxStatusDFile each of them.
	maxStatusD     = 1 << 14
	maxStatusDFile = 1 << 20
	// maxStoreMeta bounds a store's images.json or layers.json.
	maxStoreMeta = 64 << 20
	// maxLayers bounds a chain of layers (also against a cycle).
	maxLayers = 4096
	// maxFactPath bounds a path or link target as the facts show it.
	maxFactPath = 512
)

// shellNames are the base names of shells, busybox among them: it runs
// as sh.
var shellNames = map[string]bool{
	"sh": true, "bash": true, "rbash": true, "dash": true, "ash": true, "zsh": true, "ksh": true, "ksh93": true,
	"mksh": true, "pdksh": true, "oksh": true, "yash": true, "posh": true, "csh": true, "tcsh": true, "fish": true,
	"busybox": true,
}

// shellDirs are the base names of the directories a shell is looked for
// in ("busybox" for the /busybox of debug images), besides /.
var shellDirs = map[string]bool{"bin": true, "sbin": true, "busybox": true}

// imageFacts reads the facts of the built image whose root filesystem is
// mounted at rootfs. What it cannot read is said in Incomplete.
func (br *buildRun) imageFacts(ctx context.Context, image, rootfs string) *sandbox.ImageFacts {
	stores := []string{br.bh.path("s")}
	if br.b.bases != nil {
		stores = append(stores, br.b.bases.path("s"))
	}
	f := rootfsFacts(ctx, rootfs)
	var notes []string
	if f.Incomplete != "" {
		notes = append(notes, f.Incomplete)
	}
	l, err := readLayers(stores, image)
	if err != nil {
		notes = append(notes, "the image's layers: "+err.Error())
	} else {
		f.Bytes, f.Layers = l.bytes, l.count
	}
	f.Incomplete = br.scrub(strings.Join(notes, "; "))
	return f
}

// layerSizes are an image's layers, summed.
type layerSizes struct {
	count int
	bytes int64
}

// readLayers sums the layers of image, whose ID is full, from the vfs
// metadata of stores (graphroots): the image's top layer, then each
// parent, in any of the stores. A layer with no recorded size is an
// error. (The compressed sizes are not summed: a layer the build made was
// never compressed, and its recorded "compressed" size is its tar's.)
func readLayers(stores []string, image string) (layerSizes, error) {
	type storedImage struct {
		ID    string `json:"id"`
		Layer string `json:"layer"`
	}
	type storedLayer struct {
		ID       string `json:"id"`
		Parent   string `json:"parent"`
		DiffSize *int64 `json:"diff-size"`
	}
	var out layerSizes
	top, found := "", false
	layers := map[string]storedLayer{}
	for i, st := range stores {
		var imgs []storedImage
		if err := readStoreMeta(filepath.Join(st, "vfs-images", "images.json"), &imgs); err != nil {
			return out, fmt.Errorf("store %d: %w", i, err)
		}
		for _, im := range imgs {
			if im.ID == image && !found {
				top, found = im.Layer, true
			}
		}
		var ls []storedLayer
		if err := readStoreMeta(filepath.Join(st, "vfs-layers", "layers.json"), &ls); err != nil {
			return out, fmt.Errorf("store %d: %w", i, err)
		}
		for _, l := range ls {
			if _, ok := layers[l.ID]; !ok && l.ID != "" {
				layers[l.ID] = l
			}
		}
	}
	if !found {
		return out, fmt.Errorf("no image %.12s in the build's stores", image)
	}
	for id := top; id != ""; {
		l, ok := layers[id]
		switch {
		case !ok:
			return out, fmt.Errorf("layer %.12s (of %d read) is in none of the build's stores", id, out.count)
		case l.DiffSize == nil || *l.DiffSize < 0:
			return out, fmt.Errorf("layer %.12s has no recorded size", id)
		case out.count == maxLayers:
			return out, fmt.Errorf("more than %d layers", maxLayers)
		}
		out.count++
		out.bytes += *l.DiffSize
		id = l.Parent
	}
	return out, nil
}

// readStoreMeta decodes one of a store's metadata files, bounded; a
// missing one reads as empty (a store with no images yet).
func readStoreMeta(file string, v any) error {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	name := path.Join(filepath.Base(filepath.Dir(file)), filepath.Base(file))
	if err != nil {
		return fmt.Errorf("%s cannot be opened", name)
	}
	defer f.Close()
	b, err := readBounded(f, maxStoreMeta)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return nil
}

// rootfsFacts reads the package databases, setuid and setgid files and
// shells of a root filesystem. The sizes are left to readLayers.
func rootfsFacts(ctx context.Context, rootfs string) *sandbox.ImageFacts {
	f := &sandbox.ImageFacts{}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		f.Incomplete = "the root filesystem cannot be opened"
		return f
	}
	defer root.Close()
	var notes []string
	n, dbs, err := countPackages(root)
	f.Packages, f.PackageDBs = n, dbs
	if err != nil {
		notes = append(notes, err.Error())
	}
	entries := 0
	// Found by their paths as they are; shown once sorted and cut.
	var setuid []string
	type shellAtPath struct {
		p  string
		sh sandbox.Shell
	}
	var shells []shellAtPath
	werr := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			notes = append(notes, fmt.Sprintf("%s: cannot be read", factPath(p)))
			return nil
		}
		entries++
		if entries%4096 == 0 && ctx.Err() != nil {
			return fmt.Errorf("the walk of the files stopped: %w", ctx.Err())
		}
		if entries > maxFactEntries {
			return fmt.Errorf("the image has more than %d files: the walk stopped there", maxFactEntries)
		}
		typ := d.Type()
		if typ.IsRegular() {
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if privileged(info.Mode()) {
				setuid = append(setuid, p)
			}
		}
		if shellNames[d.Name()] && (typ.IsRegular() || typ&fs.ModeSymlink != 0) && (path.Dir(p) == "." || shellDirs[path.Base(path.Dir(p))]) {
			if sh, ok := shellAt(root, rootfs, p, typ); ok {
				shells = append(shells, shellAtPath{p, sh})
			}
		}
		return nil
	})
	if werr != nil {
		notes = append(notes, werr.Error())
	}
	slices.Sort(setuid)
	slices.SortFunc(shells, func(a, b shellAtPath) int { return strings.Compare(a.p, b.p) })
	f.SetuidCount, f.ShellCount = len(setuid), len(shells)
	for _, p := range setuid[:min(len(setuid), sandbox.MaxFactSetuid)] {
		f.Setuid = append(f.Setuid, factPath(p))
	}
	for _, s := range shells[:min(len(shells), sandbox.MaxFactShells)] {
		f.Shells = append(f.Shells, s.sh)
	}
	if len(notes) > 8 {
		notes = append(notes[:8], fmt.Sprintf("and %d more", len(notes)-8))
	}
	f.Incomplete = strings.Join(notes, "; ")
	return f
}

// privileged reports whether mode is an executable's with the setuid bit,
// or with the setgid bit and group execute (setgid without it marks
// mandatory locking, not a privilege).
func privileged(mode fs.FileMode) bool {
	return mode&fs.ModeSetuid != 0 && mode.Perm()&0o111 != 0 || mode&fs.ModeSetgid != 0 && mode.Perm()&0o010 != 0
}

// shellAt reports the shell at p (slash-separated, relative to the root
// filesystem rootfs, which root opens): an executable regular file, or a
// symlink that resolves to one as the image sees it (an absolute target
// starts at the image's root; ".." stops there). A dangling link is no
// shell.
func shellAt(root *os.Root, rootfs, p string, typ fs.FileMode) (sandbox.Shell, bool) {
	sh := sandbox.Shell{Path: factPath(p)}
	if typ&fs.ModeSymlink != 0 {
		target, err := root.Readlink(p)
		if err != nil {
			return sh, false
		}
		sh.Target = factText(target)
	}
	return sh, fsView{rootfs: rootfs}.check("/"+p).state == lookupFound
}

// factPath is the absolute image path of p, relative to the root, as the
// facts show it.
func factPath(p string) string {
	if p == "." {
		return "/"
	}
	return factText("/" + p)
}

// factText is s made safe to show: quoted when it is not printable UTF-8,
// and cut to maxFactPath bytes.
func factText(s string) string {
	if len(s) > maxFactPath {
		s = s[:maxFactPath]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return strconv.QuoteToASCII(s)
	}
	return s
}

// Package database locations, relative to the root.
const (
	dpkgStatus  = "var/lib/dpkg/status"
	dpkgStatusD = "var/lib/dpkg/status.d"
	apkDB       = "lib/apk/db/installed"
)

// countPackages counts the installed OS packages that the root's package
// databases record, and names the databases found.
func countPackages(root *os.Root) (int, []string, error) {
	var dbs []string
	var errs []error
	total := 0
	dpkg := false
	if b, ok, err := readDB(root, dpkgStatus); err != nil {
		errs = append(errs, err)
	} else if ok {
		dpkg = true
		total += countParagraphs(b, dpkgInstalled)
	}
	if n, ok, err := countStatusD(root); err != nil {
		errs = append(errs, err)
	} else if ok {
		dpkg = true
		total += n
	}
	if dpkg {
		dbs = append(dbs, sandbox.PackageDBDpkg)
	}
	if b, ok, err := readDB(root, apkDB); err != nil {
		errs = append(errs, err)
	} else if ok {
		dbs = append(dbs, sandbox.PackageDBApk)
		total += countParagraphs(b, func(p []field) bool { _, ok := fieldValue(p, "P", false); return ok })
	}
	return total, dbs, errors.Join(errs...)
}

// readDB reads a package database file of the root, bounded. ok is false
// when there is none.
func readDB(root *os.Root, name string) ([]byte, bool, error) {
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("/%s cannot be opened", name)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("/%s is not a regular file", name)
	}
	b, err := readBounded(f, maxPackageDB)
	if err != nil {
		return nil, false, fmt.Errorf("/%s: %w", name, err)
	}
	return b, true, nil
}

// countStatusD counts the packages of /var/lib/dpkg/status.d: one file
// per package (its control paragraph), beside which newer distroless
// images keep a .md5sums file. ok is false when there is no such
// directory.
func countStatusD(root *os.Root) (int, bool, error) {
	d, err := root.Open(dpkgStatusD)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("/%s cannot be opened", dpkgStatusD)
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		return 0, false, nil
	}
	ents, err := d.ReadDir(maxStatusD + 1)
	if err != nil && len(ents) == 0 {
		return 0, true, nil
	}
	var errs []error
	if len(ents) > maxStatusD {
		ents = ents[:maxStatusD]
		errs = append(errs, fmt.Errorf("/%s has more than %d files: the rest are not counted", dpkgStatusD, maxStatusD))
	}
	n := 0
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".md5sums") {
			continue
		}
		name := dpkgStatusD + "/" + e.Name()
		f, err := root.Open(name)
		if err != nil {
			continue
		}
		b, err := readBounded(f, maxStatusDFile)
		_ = f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", factPath(name), err))
			continue
		}
		n += countParagraphs(b, dpkgInstalled)
	}
	return n, true, errors.Join(errs...)
}

// dpkgInstalled reports whether a dpkg paragraph is an installed package:
// it names a package, and its Status, when it has one (the status.d files
// of distroless have none), is installed ("install ok installed", "hold ok
// installed").
func dpkgInstalled(p []field) bool {
	if _, ok := fieldValue(p, "Package", true); !ok {
		return false
	}
	st, ok := fieldValue(p, "Status", true)
	if !ok {
		return true
	}
	w := strings.Fields(st)
	return len(w) == 3 && w[2] == "installed"
}

// field is one "Key: value" line of a control paragraph.
type field struct{ key, value string }

// fieldValue returns the value of key in p, with the key's case ignored when
// fold (dpkg's) or not (apk's P: and p: differ).
func fieldValue(p []field, key string, fold bool) (string, bool) {
	for _, f := range p {
		if f.key == key || fold && strings.EqualFold(f.key, key) {
			return f.value, true
		}
	}
	return "", false
}

// countParagraphs counts the paragraphs of a control file (dpkg's status,
// apk's installed: "Key: value" lines, paragraphs apart by blank lines,
// continuation lines starting with a space or tab) for which keep is true.
func countParagraphs(b []byte, keep func([]field) bool) int {
	n := 0
	var p []field
	end := func() {
		if len(p) > 0 && keep(p) {
			n++
		}
		p = p[:0]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), len(b)+1)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			end()
		case line[0] == ' ' || line[0] == '\t':
			// A continuation of the field before.
		default:
			k, v, ok := strings.Cut(line, ":")
			if ok {
				p = append(p, field{strings.TrimSpace(k), strings.TrimSpace(v)})
			}
		}
	}
	end()
	return n
}
