package sandboxtest

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BusyboxHost is where busybox-static is installed (scripts/setup.sh).
const BusyboxHost = "/bin/busybox"

// Applets are the busybox applets that BusyboxRootfs links into /bin.
var Applets = []string{
	"cat", "echo", "env", "false", "head", "hostname", "id", "ifconfig", "ip",
	"ls", "mkdir", "nc", "pwd", "rm", "seq", "sh", "sleep", "tail", "touch",
	"true", "wc", "wget", "yes",
}

// BusyboxRootfs builds a minimal root filesystem in a test directory: a
// copy of the host's static busybox at /bin/busybox, a relative symlink to it
// for each of Applets, /etc/passwd and /etc/group with root, and empty
// mount points (/proc, /dev, /sys, /tmp, /workspace). It fails the test when
// busybox is missing: scripts/setup.sh installs it.
func BusyboxRootfs(t testing.TB) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"bin", "etc", "root", "proc", "dev", "sys", "tmp", "workspace"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(BusyboxHost)
	if err != nil {
		t.Fatalf("opening busybox (scripts/setup.sh installs busybox-static): %v", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(root, "bin", "busybox"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	for _, a := range Applets {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":  "root:x:0:\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
