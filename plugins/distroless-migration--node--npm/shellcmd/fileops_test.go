package shellcmd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseInstall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want Install
	}{
		{"-d -o node -g node /var/opt/app", Install{Dirs: []string{"/var/opt/app"}, Owner: "node", Group: "node"}},
		{"-dm755 /a /b", Install{Dirs: []string{"/a", "/b"}, Mode: "755"}},
		{"--directory --owner=app --mode 0700 /data", Install{Dirs: []string{"/data"}, Owner: "app", Mode: "0700"}},
		{"-m 0755 tool /usr/local/bin/tool", Install{Dest: "/usr/local/bin/tool", Mode: "0755"}},
		{"-Dm644 a b /usr/share/x/", Install{Dest: "/usr/share/x/", Mode: "644"}},
		{"-t /usr/local/bin a b", Install{Dest: "/usr/local/bin"}},
		{"--target-directory=/opt a", Install{Dest: "/opt"}},
		{"-o root -- -d", Install{Owner: "root"}},
	}
	for _, tt := range tests {
		if got := ParseInstall(strings.Fields(tt.line)); !cmp.Equal(got, tt.want) {
			t.Errorf("ParseInstall(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestMadeWrittenRemoved(t *testing.T) {
	t.Parallel()
	made := []struct {
		line string
		want []string
	}{
		{"mkdir -p /app/data /app/logs", []string{"/app/data", "/app/logs"}},
		{"mkdir -m 0700 -p /data", []string{"/data"}},
		{"mkdir --mode=0700 /data", []string{"/data"}},
		{"install -d -o node /var/opt/app", []string{"/var/opt/app"}},
		{"install -m 0755 a /usr/bin/a", nil},
		{"chown -R node /app", nil},
	}
	for _, tt := range made {
		if got := MadeDirs(strings.Fields(tt.line)); !cmp.Equal(got, tt.want) {
			t.Errorf("MadeDirs(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
	written := []struct {
		line string
		want []string
		ok   bool
	}{
		{"ln -sf /usr/bin/python3 /usr/bin/python", []string{"/usr/bin/python"}, true},
		{"ln -s /usr/bin/python3", []string{"."}, true},
		{"ln -s -t /usr/local/bin /app/cli.js", []string{"/usr/local/bin"}, true},
		{"cp -a /src/. /etc/app/", []string{"/etc/app/"}, true},
		{"cp --target-directory /etc a b", []string{"/etc"}, true},
		{"mv a b c /dir", []string{"/dir"}, true},
		{"install -d /x /y", []string{"/x", "/y"}, true},
		{"touch -d 2020-01-01 /etc/stamp", []string{"/etc/stamp"}, true},
		{"npm ci", nil, false},
	}
	for _, tt := range written {
		got, ok := Written(strings.Fields(tt.line))
		if ok != tt.ok || !cmp.Equal(got, tt.want) {
			t.Errorf("Written(%q) = %q, %v, want %q, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
	if got := Removed(strings.Fields("rm -rf -- /tmp/* /usr/bin/python")); !cmp.Equal(got, []string{"/tmp/*", "/usr/bin/python"}) {
		t.Errorf("Removed = %q", got)
	}
	if got := Removed(strings.Fields("unlink /x")); got != nil {
		t.Errorf("Removed(unlink) = %q, want nil", got)
	}
}
