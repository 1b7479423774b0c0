package shellcmd

import "testing"

func TestShellLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/sh", "-c", "./x.sh", "node"}, "./x.sh"},
		{[]string{"bash", "-o", "pipefail", "-ec", "a && b"}, "a && b"},
		{[]string{"sh", "x.sh", "-c"}, ""},
		{[]string{"sh", "-c"}, ""},
		{[]string{"node", "-c", "x"}, ""},
	}
	for _, tt := range tests {
		if got := ShellLine(tt.argv); got != tt.want {
			t.Errorf("ShellLine(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

func TestShellScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/bash", "/cryptpad/docker-entrypoint.sh"}, "/cryptpad/docker-entrypoint.sh"},
		{[]string{"sh", "-eu", "start.sh", "arg"}, "start.sh"},
		{[]string{"bash", "-o", "pipefail", "--noprofile", "x.sh"}, "x.sh"},
		{[]string{"bash", "--", "-x.sh"}, "-x.sh"},
		{[]string{"sh", "-c", "./x.sh"}, ""},
		{[]string{"sh", "-ec", "./x.sh"}, ""},
		{[]string{"sh", "-s"}, ""},
		{[]string{"sh"}, ""},
		{[]string{"node", "x.js"}, ""},
		{[]string{"busybox", "sh", "x.sh"}, ""},
	}
	for _, tt := range tests {
		if got := ShellScript(tt.argv); got != tt.want {
			t.Errorf("ShellScript(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}
