package trace

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// Shells by content.
//
// A name says little: a copy of dash under another name, or run from a
// memfd, is still dash. So the backend identifies the shells of the
// spawn's images by content (AddRootfs: the files named as shells or
// multi-call binaries in the usual directories, symlinks followed), and
// marks every exec whose file is one of them (Identify sets Event.SameAs):
//
//   - by Event.Digest, the SHA-256 that gVisor's sentry computed of the file
//     it executed, which covers files the host cannot read: a memfd run by
//     execveat(AT_EMPTY_PATH) or fexecve, or a copy in the sandbox's /tmp;
//   - by the file read host-side from the rootfs the exec ran in: its
//     SHA-256 (up to MaxDigestBytes) or, failing that, its ELF build ID
//     (the .note.gnu.build-id of one build, which strip keeps). When the
//     event has a Digest, the host's file must have the same digest, or it
//     is not the file that ran and is not used.
//
// ClassifyShell then calls the exec a shell when SameAs is a shell. When it
// is a multi-call binary (busybox), the applet that argv picks decides, as
// busybox decides it: a renamed busybox run as "x" runs no applet.
//
// What this cannot see: a shell that the image does not hold (fetched, or
// built, at run time), and a modified copy of one (a byte changed, packed,
// its build ID stripped). A memfd exec whose digest matches nothing and
// whose argv names no shell stays unresolved, since the host cannot read
// it to tell a script from an ELF file.

// MaxDigestBytes bounds the files that ReadIdentity hashes. A shell is far
// smaller (a static busybox is about 2 MiB); a larger file gets a build ID
// only.
const MaxDigestBytes = 16 << 20

// ELFHeadBytes is how much of a file ReadIdentity reads for its ELF build
// ID: the note is near the start, right after the program headers.
const ELFHeadBytes = 64 << 10

// maxBuildIDBytes bounds a build ID (GNU ld writes 20 bytes of SHA-1, or
// 16 of MD5 or UUID; --build-id=0x... can be longer).
const maxBuildIDBytes = 64

// maxDirEntries bounds the entries AddRootfs reads from one directory.
const maxDirEntries = 1 << 16

// Identity is what a file is by content.
type Identity struct {
	// Digest is "sha256:<hex>" of the whole file; empty when it is larger
	// than MaxDigestBytes.
	Digest string
	// BuildID is the hex of the ELF file's GNU build ID note; empty when
	// there is none within its first ELFHeadBytes.
	BuildID string
}

// ReadIdentity reads the identity of the file at the absolute sandbox path
// p in root. Symlinks are followed inside root (an absolute target starts
// again at root, ".." stops at it), since the rootfs comes from untrusted
// image layers. Only a regular file is read, opened without blocking: a
// FIFO does not hang the reader. ok is false when p cannot be read.
func ReadIdentity(root *os.Root, p string) (id Identity, ok bool) {
	rel, err := resolveIn(root, p)
	if err != nil {
		return Identity{}, false
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return Identity{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return Identity{}, false
	}
	head := make([]byte, ELFHeadBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return Identity{}, false
	}
	head = head[:n]
	id.BuildID = elfBuildID(head)
	if fi.Size() > MaxDigestBytes {
		return id, true
	}
	h := sha256.New()
	h.Write(head)
	rest, err := io.Copy(h, io.LimitReader(f, MaxDigestBytes+1-int64(n)))
	if err != nil {
		return Identity{}, false
	}
	if int64(n)+rest <= MaxDigestBytes {
		id.Digest = DigestPrefix + hex.EncodeToString(h.Sum(nil))
	}
	return id, true
}

// resolveIn resolves the symlinks of the absolute path p inside root, as
// the sandbox would see them, and returns the result relative to root
// ("." for the root itself).
func resolveIn(root *os.Root, p string) (string, error) {
	var done []string
	rest := strings.Split(p, "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		next := path.Join(append(slices.Clone(done), name)...)
		fi, err := root.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, name)
			continue
		}
		if links++; links > 40 { // Linux's MAXSYMLINKS
			return "", syscall.ELOOP
		}
		target, err := root.Readlink(next)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			done = nil
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// elfBuildID returns the hex of the GNU build ID note (name "GNU", type
// NT_GNU_BUILD_ID) of an ELF file, read from its program headers' PT_NOTE
// segments within head (the file's first bytes); "" when there is none
// there. head is hostile input: every offset is checked against it.
func elfBuildID(head []byte) string {
	if len(head) < 16 || string(head[:4]) != "\x7fELF" {
		return ""
	}
	var bo binary.ByteOrder
	switch head[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return ""
	}
	var phoff, phentsize, phnum uint64
	is64 := false
	switch head[4] {
	case 1:
		if len(head) < 52 {
			return ""
		}
		phoff, phentsize, phnum = uint64(bo.Uint32(head[28:])), uint64(bo.Uint16(head[42:])), uint64(bo.Uint16(head[44:]))
		if phentsize < 32 {
			return ""
		}
	case 2:
		if len(head) < 64 {
			return ""
		}
		is64 = true
		phoff, phentsize, phnum = bo.Uint64(head[32:]), uint64(bo.Uint16(head[54:])), uint64(bo.Uint16(head[56:]))
		if phentsize < 56 {
			return ""
		}
	default:
		return ""
	}
	size := uint64(len(head))
	for i := range phnum {
		off := phoff + i*phentsize
		if off < phoff || off > size || size-off < phentsize {
			return ""
		}
		ph := head[off:]
		var typ uint32
		var noff, nsize, align uint64
		if is64 {
			typ, noff, nsize, align = bo.Uint32(ph), bo.Uint64(ph[8:]), bo.Uint64(ph[32:]), bo.Uint64(ph[48:])
		} else {
			typ, noff, nsize, align = bo.Uint32(ph), uint64(bo.Uint32(ph[4:])), uint64(bo.Uint32(ph[16:])), uint64(bo.Uint32(ph[28:]))
		}
		const ptNote = 4
		if typ != ptNote || noff > size || nsize > size-noff {
			continue
		}
		if id := gnuBuildIDNote(head[noff:noff+nsize], bo, align); id != "" {
			return id
		}
	}
	return ""
}

// gnuBuildIDNote walks the notes of one PT_NOTE segment, each padded to
// align (4, or 8 for an 8-aligned segment).
func gnuBuildIDNote(b []byte, bo binary.ByteOrder, align uint64) string {
	if align != 8 {
		align = 4
	}
	pad := func(n uint64) uint64 { return (n + align - 1) &^ (align - 1) }
	for len(b) >= 12 {
		namesz, descsz, typ := uint64(bo.Uint32(b)), uint64(bo.Uint32(b[4:])), bo.Uint32(b[8:])
		b = b[12:]
		rest := uint64(len(b))
		if namesz > rest || pad(namesz) > rest {
			return ""
		}
		name := b[:namesz]
		b = b[pad(namesz):]
		rest = uint64(len(b))
		if descsz > rest {
			return ""
		}
		desc := b[:descsz]
		const ntGNUBuildID = 3
		if typ == ntGNUBuildID && string(name) == "GNU\x00" {
			if descsz == 0 || descsz > maxBuildIDBytes {
				return ""
			}
			return hex.EncodeToString(desc)
		}
		if pad(descsz) > rest {
			return ""
		}
		b = b[pad(descsz):]
	}
	return ""
}

// shellDirs are where AddRootfs looks for shells.
var shellDirs = []string{"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}

// Shells identifies the shells and multi-call binaries of root filesystems
// by content (see Shells by content above). Make one with NewShells. It is
// not safe for concurrent use.
type Shells struct {
	byDigest  map[string]string // Identity.Digest → path
	byBuildID map[string]string // Identity.BuildID → path
}

// NewShells returns an empty set.
func NewShells() *Shells {
	return &Shells{byDigest: map[string]string{}, byBuildID: map[string]string{}}
}

// AddRootfs adds the shells of the root filesystem at the host directory
// dir: the files in /bin, /usr/bin, /sbin, /usr/sbin, /usr/local/bin and
// /usr/local/sbin whose name, or whose symlink target's name, is a shell's
// (IsShellName) or a multi-call binary's (busybox*, toybox*), read with
// ReadIdentity. Each is known by the path that names what it is: the
// multi-call binary's when a file is both (/bin/sh a symlink to, or a copy
// of, /bin/busybox), else the first found. What cannot be read is skipped,
// so copies of it are known by name only.
func (s *Shells) AddRootfs(dir string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	seenDir := map[string]bool{}
	ids := map[string]Identity{} // resolved path → identity
	for _, d := range shellDirs {
		rd, err := resolveIn(root, d)
		if err != nil || seenDir[rd] {
			continue
		}
		seenDir[rd] = true
		for _, name := range dirNames(root, rd) {
			if !IsShellName(name) && !isMultiCall(name) {
				continue
			}
			p := "/" + path.Join(rd, name)
			target, err := resolveIn(root, p)
			if err != nil {
				continue
			}
			id, ok := ids[target]
			if !ok {
				if id, ok = ReadIdentity(root, "/"+target); !ok {
					continue
				}
				ids[target] = id
			}
			known := p
			if !isMultiCall(name) && isMultiCall(path.Base(target)) {
				known = "/" + target
			}
			s.add(known, id)
		}
	}
}

// dirNames lists up to maxDirEntries names in the directory rel of root,
// sorted.
func dirNames(root *os.Root, rel string) []string {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxDirEntries)
	slices.Sort(names)
	return names
}

// add records that id is the file known as p: a multi-call binary's path
// replaces a shell's, else the first stays.
func (s *Shells) add(p string, id Identity) {
	put := func(m map[string]string, key string) {
		if key == "" {
			return
		}
		if old, ok := m[key]; ok && (isMultiCall(path.Base(old)) || !isMultiCall(path.Base(p))) {
			return
		}
		m[key] = p
	}
	put(s.byDigest, id.Digest)
	put(s.byBuildID, id.BuildID)
}

// Match returns the path of the shell or multi-call binary that id is, by
// digest, else by build ID; "" when none.
func (s *Shells) Match(id Identity) string {
	if p := s.byDigest[id.Digest]; id.Digest != "" && p != "" {
		return p
	}
	if id.BuildID != "" {
		return s.byBuildID[id.BuildID]
	}
	return ""
}

// Identify sets SameAs on every exec event whose file is one of s: by the
// event's Digest, or by its Binary read host-side (ReadIdentity) from
// rootfsOf(event.Container), the host directory that holds the files as
// the exec saw them ("" for none: a rootfs that holds only the heads of
// files, as a step snapshot does, must not be named). A Binary under
// /proc, /dev or /sys, or a memfd's "/memfd:" name, is never read: the
// host's rootfs does not hold what the sandbox ran there. Each file is
// read once.
func (s *Shells) Identify(events []Event, rootfsOf func(container string) string) {
	if len(s.byDigest) == 0 && len(s.byBuildID) == 0 {
		return
	}
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			if r != nil {
				r.Close()
			}
		}
	}()
	type key struct{ rootfs, binary string }
	type read struct {
		id Identity
		ok bool
	}
	reads := map[key]read{}
	for i := range events {
		e := &events[i]
		if e.Kind != KindExec || e.SameAs != "" {
			continue
		}
		if p := s.Match(Identity{Digest: e.Digest}); p != "" {
			e.SameAs = p
			continue
		}
		if !path.IsAbs(e.Binary) || sandboxOnly(e.Binary) {
			continue
		}
		rootfs := rootfsOf(e.Container)
		if rootfs == "" {
			continue
		}
		k := key{rootfs, e.Binary}
		r, done := reads[k]
		if !done {
			root, opened := roots[rootfs]
			if !opened {
				root, _ = os.OpenRoot(rootfs)
				roots[rootfs] = root
			}
			if root != nil {
				r.id, r.ok = ReadIdentity(root, e.Binary)
			}
			reads[k] = r
		}
		if !r.ok || (e.Digest != "" && r.id.Digest != e.Digest) {
			continue
		}
		e.SameAs = s.Match(r.id)
	}
}

// sandboxOnly reports whether p names a file that only the sandbox has.
func sandboxOnly(p string) bool {
	p = path.Clean(p)
	if strings.HasPrefix(p, "/memfd:") {
		return true
	}
	for _, d := range []string{"/proc", "/dev", "/sys"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
