package trace

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hostBusybox is the static busybox that scripts/setup.sh installs
// (sandboxtest.BusyboxHost; that package is not imported here, since it
// imports this one through sandbox).
const hostBusybox = "/bin/busybox"

// byteOrder is binary.LittleEndian or binary.BigEndian.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// craftELF returns a small ELF file of the given class (elf.ELFCLASS32 or
// 64) and byte order: a header, two program headers (a PT_LOAD, then a
// PT_NOTE with a "Go" note and the GNU build ID note), then size bytes of
// filler in total, so that files with one build ID can differ in content.
func craftELF(class elf.Class, order byteOrder, buildID []byte, filler byte, size int) []byte {
	note := func(name string, typ uint32, desc []byte) []byte {
		var b []byte
		b = order.AppendUint32(b, uint32(len(name)+1))
		b = order.AppendUint32(b, uint32(len(desc)))
		b = order.AppendUint32(b, typ)
		b = append(b, name...)
		b = append(b, 0)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		b = append(b, desc...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	notes := append(note("Go", 4, []byte("go build id")), note("GNU", 3, buildID)...)
	ehsize, phentsize := 64, 56
	if class == elf.ELFCLASS32 {
		ehsize, phentsize = 52, 32
	}
	noteOff := ehsize + 2*phentsize
	data := byte(elf.ELFDATA2LSB)
	if order == binary.BigEndian {
		data = byte(elf.ELFDATA2MSB)
	}
	b := []byte{0x7f, 'E', 'L', 'F', byte(class), data, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	word := func(v uint64) {
		if class == elf.ELFCLASS32 {
			b = order.AppendUint32(b, uint32(v))
		} else {
			b = order.AppendUint64(b, v)
		}
	}
	b = order.AppendUint16(b, uint16(elf.ET_EXEC))
	b = order.AppendUint16(b, uint16(elf.EM_X86_64))
	b = order.AppendUint32(b, 1)
	word(0x401000)       // entry
	word(uint64(ehsize)) // phoff
	word(0)              // shoff
	b = order.AppendUint32(b, 0)
	b = order.AppendUint16(b, uint16(ehsize))
	b = order.AppendUint16(b, uint16(phentsize))
	b = order.AppendUint16(b, 2)
	b = order.AppendUint16(b, 64)
	b = order.AppendUint16(b, 0)
	b = order.AppendUint16(b, 0)
	prog := func(typ elf.ProgType, off, size uint64) {
		if class == elf.ELFCLASS32 {
			for _, v := range []uint32{uint32(typ), uint32(off), 0, 0, uint32(size), uint32(size), 4, 4} {
				b = order.AppendUint32(b, v)
			}
			return
		}
		b = order.AppendUint32(b, uint32(typ))
		b = order.AppendUint32(b, 4)
		for _, v := range []uint64{off, 0, 0, size, size, 4} {
			b = order.AppendUint64(b, v)
		}
	}
	prog(elf.PT_LOAD, 0, uint64(size))
	prog(elf.PT_NOTE, uint64(noteOff), uint64(len(notes)))
	b = append(b, notes...)
	for len(b) < size {
		b = append(b, filler)
	}
	return b
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

// gnuBuildID reads the GNU build ID of a file with debug/elf, from its
// section headers, independently of elfBuildID.
func gnuBuildID(t *testing.T, file string) string {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatalf("%v (scripts/setup.sh installs busybox-static)", err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		t.Fatalf("build ID note of %s: %v", file, err)
	}
	return hex.EncodeToString(b[16:])
}

func TestELFBuildID(t *testing.T) {
	t.Parallel()
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, tc := range []struct {
		name  string
		class elf.Class
		order byteOrder
	}{
		{"elf64 little endian", elf.ELFCLASS64, binary.LittleEndian},
		{"elf64 big endian", elf.ELFCLASS64, binary.BigEndian},
		{"elf32 little endian", elf.ELFCLASS32, binary.LittleEndian},
		{"elf32 big endian", elf.ELFCLASS32, binary.BigEndian},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := craftELF(tc.class, tc.order, id, 0, 4096)
			if got, want := elfBuildID(b), hex.EncodeToString(id); got != want {
				t.Errorf("elfBuildID = %q, want %q", got, want)
			}
			// Cut inside the note: no build ID, and no panic.
			if got := elfBuildID(b[:len(b)-4096+150]); got != "" {
				t.Errorf("elfBuildID of a cut file = %q, want none", got)
			}
		})
	}
	for name, b := range map[string][]byte{
		"empty":      nil,
		"script":     []byte("#!/bin/sh\n"),
		"magic only": []byte("\x7fELF"),
		"no note":    craftELF(elf.ELFCLASS64, binary.LittleEndian, nil, 0, 512),
	} {
		if got := elfBuildID(b); got != "" {
			t.Errorf("elfBuildID(%s) = %q, want none", name, got)
		}
	}
	// A real, stripped, static binary: the note is within its head.
	f, err := os.Open(hostBusybox)
	if err != nil {
		t.Fatalf("%v (scripts/setup.sh installs busybox-static)", err)
	}
	defer f.Close()
	head := make([]byte, ELFHeadBytes)
	n, _ := io.ReadFull(f, head)
	want := gnuBuildID(t, hostBusybox)
	if want == "" {
		t.Fatalf("%s has no GNU build ID", hostBusybox)
	}
	if got := elfBuildID(head[:n]); got != want {
		t.Errorf("build ID of %s = %q, want %q (debug/elf)", hostBusybox, got, want)
	}
}

// shellRootfs is an image's root filesystem with busybox (the host's) at
// /bin/busybox, /bin/sh an absolute and /bin/ash a relative symlink to it,
// a dash and a bash (crafted ELF files), a mksh bigger than MaxDigestBytes,
// a FIFO named zsh and a ksh symlink that tries to leave the root; and
// under /app, files that are or are not copies of them.
type shellRootfs struct {
	dir                       string
	busybox, dash, bash, mksh []byte
}

func newShellRootfs(t *testing.T) shellRootfs {
	t.Helper()
	bb, err := os.ReadFile(hostBusybox)
	if err != nil {
		t.Fatalf("%v (scripts/setup.sh installs busybox-static)", err)
	}
	le := binary.LittleEndian
	r := shellRootfs{
		dir:     t.TempDir(),
		busybox: bb,
		dash:    craftELF(elf.ELFCLASS64, le, []byte("dash-build-id-000001"), 'd', 3000),
		bash:    craftELF(elf.ELFCLASS64, le, []byte("bash-build-id-000002"), 'b', 5000),
		mksh:    craftELF(elf.ELFCLASS64, le, []byte("mksh-build-id-000003"), 'm', 1000),
	}
	write := func(p string, b []byte) {
		t.Helper()
		full := filepath.Join(r.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(r.dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	write("bin/busybox", bb)
	link("/bin/busybox", "bin/sh")
	link("busybox", "bin/ash")
	link("busybox", "bin/ls")
	write("usr/bin/dash", r.dash)
	write("usr/bin/bash", r.bash)
	write("usr/local/bin/mksh", r.mksh)
	if err := os.Truncate(filepath.Join(r.dir, "usr/local/bin/mksh"), MaxDigestBytes+1); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(r.dir, "usr/bin/zsh"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("../../../../../../etc/shadow", "usr/bin/ksh")
	write("app/dashcopy", r.dash)
	write("app/mybash", craftELF(elf.ELFCLASS64, le, []byte("bash-build-id-000002"), 'x', 700)) // same build, other bytes
	write("app/mymksh", craftELF(elf.ELFCLASS64, le, []byte("mksh-build-id-000003"), 'y', 700))
	write("app/node", craftELF(elf.ELFCLASS64, le, []byte("node-build-id-000004"), 'n', 700))
	write("app/run.sh", []byte("#!/bin/sh\n"))
	return r
}

func TestReadIdentity(t *testing.T) {
	t.Parallel()
	r := newShellRootfs(t)
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	type res struct {
		ID Identity
		OK bool
	}
	for p, want := range map[string]res{
		"/usr/bin/dash":       {Identity{sha(r.dash), hex.EncodeToString([]byte("dash-build-id-000001"))}, true},
		"/bin/sh":             {Identity{sha(r.busybox), gnuBuildID(t, hostBusybox)}, true}, // an absolute symlink, inside the root
		"/bin/ash":            {Identity{sha(r.busybox), gnuBuildID(t, hostBusybox)}, true},
		"/usr/local/bin/mksh": {Identity{"", hex.EncodeToString([]byte("mksh-build-id-000003"))}, true}, // too big to hash
		"/app/run.sh":         {Identity{sha([]byte("#!/bin/sh\n")), ""}, true},
		"/usr/bin/zsh":        {}, // a FIFO: not opened for reading, so no hang
		"/usr/bin/ksh":        {}, // leaves the root: resolved inside it, where nothing is
		"/usr/bin":            {},
		"/missing":            {},
		"/../../etc/passwd":   {},
	} {
		id, ok := ReadIdentity(root, p)
		if diff := cmp.Diff(want, res{id, ok}); diff != "" {
			t.Errorf("ReadIdentity(%s) (-want +got):\n%s", p, diff)
		}
	}
}

// TestShellsIdentify is issue 22, item 6: a shell is known by what its
// file is, not only by its name.
func TestShellsIdentify(t *testing.T) {
	t.Parallel()
	r := newShellRootfs(t)
	shells := NewShells()
	shells.AddRootfs(r.dir)
	shells.AddRootfs(filepath.Join(r.dir, "missing")) // no such rootfs: adds nothing
	evs := []Event{
		{Kind: KindExec, Binary: "/tmp/bb", Digest: sha(r.busybox), Argv: []string{"bb"}},                   // 0: a copy in sandbox memory
		{Kind: KindExec, Binary: "/dev/fd/3", Digest: sha(r.dash), Argv: []string{"x", "-c", "id"}},         // 1: a memfd (execveat AT_EMPTY_PATH)
		{Kind: KindExec, Binary: "/app/dashcopy", Argv: []string{"dashcopy"}},                               // 2: read host-side
		{Kind: KindExec, Binary: "/app/mybash", Argv: []string{"mybash"}},                                   // 3: the build ID of bash
		{Kind: KindExec, Binary: "/app/dashcopy", Digest: sha([]byte("other")), Argv: []string{"dashcopy"}}, // 4: what ran is not the host's file
		{Kind: KindExec, Binary: "/app/node", Argv: []string{"node"}},                                       // 5
		{Kind: KindExec, Binary: "/app/mymksh", Argv: []string{"mymksh"}},                                   // 6: by build ID only (mksh is too big to hash)
		{Kind: KindExecAttempt, Execfn: "/app/dashcopy", Argv: []string{"dashcopy"}},                        // 7: an attempt ran nothing
		{Kind: KindExec, Binary: "/bin/sh", Argv: []string{"sh"}},                                           // 8
		{Kind: KindExec, Container: "other", Binary: "/app/dashcopy", Argv: []string{"dashcopy"}},           // 9: its rootfs is unknown
		{Kind: KindExec, Binary: "/memfd:x (deleted)", Argv: []string{"x"}},                                 // 10: never read host-side
		{Kind: KindExec, Binary: "/app/run.sh", Argv: []string{"run.sh"}, Interp: "/bin/sh"},                // 11
	}
	shells.Identify(evs, func(container string) string {
		if container == "" {
			return r.dir
		}
		return ""
	})
	var got []string
	for _, e := range evs {
		got = append(got, e.SameAs)
	}
	want := []string{"/bin/busybox", "/usr/bin/dash", "/usr/bin/dash", "/usr/bin/bash", "", "", "/usr/local/bin/mksh", "", "/bin/busybox", "", "", ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SameAs (-want +got):\n%s", diff)
	}
	a := Analyze(BuildTree(evs), nil)
	var shellsRan []string
	for _, inv := range a.Invocations {
		shellsRan = append(shellsRan, inv.Match.By+":"+inv.Match.Shell+"@"+strings.Join(inv.Argv, " "))
	}
	wantRan := []string{
		"content:dash@x -c id", "content:dash@dashcopy", "content:bash@mybash", "content:mksh@mymksh",
		"binary:sh@sh", "shebang:sh@run.sh",
	}
	if diff := cmp.Diff(wantRan, shellsRan); diff != "" {
		t.Errorf("shells (-want +got):\n%s", diff)
	}
}

// TestShellsPreferMultiCall: when a file is both /bin/sh and /bin/busybox
// (a copy, or a hard link), it is busybox, whose applet argv[0] picks.
func TestShellsPreferMultiCall(t *testing.T) {
	t.Parallel()
	bb, err := os.ReadFile(hostBusybox)
	if err != nil {
		t.Fatalf("%v (scripts/setup.sh installs busybox-static)", err)
	}
	dir := t.TempDir()
	for _, p := range []string{"usr/bin", "usr/sbin"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A merged /usr: /bin is a symlink to usr/bin, scanned once.
	if err := os.Symlink("usr/bin", filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usr/bin/sh"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "usr/bin/sh"), filepath.Join(dir, "usr/sbin/busybox")); err != nil {
		t.Fatal(err)
	}
	shells := NewShells()
	shells.AddRootfs(dir)
	if got := shells.Match(Identity{Digest: sha(bb)}); got != "/usr/sbin/busybox" {
		t.Errorf("busybox, also at /usr/bin/sh, is known as %q, want /usr/sbin/busybox", got)
	}
	if got := shells.Match(Identity{BuildID: gnuBuildID(t, hostBusybox)}); got != "/usr/sbin/busybox" {
		t.Errorf("busybox by build ID is known as %q, want /usr/sbin/busybox", got)
	}
	if got := shells.Match(Identity{}); got != "" {
		t.Errorf("an empty identity matches %q", got)
	}
}

func FuzzELFBuildID(f *testing.F) {
	f.Add(craftELF(elf.ELFCLASS64, binary.LittleEndian, []byte("0123456789abcdef0123"), 0, 300))
	f.Add(craftELF(elf.ELFCLASS32, binary.BigEndian, []byte("0123456789abcdef0123"), 0, 300))
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id := elfBuildID(b)
		if len(id) > 2*maxBuildIDBytes {
			t.Fatalf("build ID of %d hex digits", len(id))
		}
		if _, err := hex.DecodeString(id); err != nil {
			t.Fatalf("build ID %q is not hex: %v", id, err)
		}
		if id != "" && !bytes.HasPrefix(b, []byte("\x7fELF")) {
			t.Fatalf("build ID %q from a file that is not ELF", id)
		}
	})
}
