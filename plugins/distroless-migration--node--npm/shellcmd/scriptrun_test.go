package shellcmd

import (
	"reflect"
	"slices"
	"testing"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

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

func TestShellScriptArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv   []string
		script string
		args   []string
	}{
		{[]string{"sh", "-e", "start.sh", "--port", "80"}, "start.sh", []string{"--port", "80"}},
		{[]string{"bash", "--", "x.sh", "a"}, "x.sh", []string{"a"}},
		{[]string{"bash", "x.sh"}, "x.sh", []string{}},
		{[]string{"sh", "-c", "x.sh", "a"}, "", nil},
	}
	for _, tt := range tests {
		script, args := ShellScriptArgs(tt.argv)
		if script != tt.script || !slices.Equal(args, tt.args) {
			t.Errorf("ShellScriptArgs(%q) = %q, %q; want %q, %q", tt.argv, script, args, tt.script, tt.args)
		}
	}
}

func TestInstructionReadsAnExecFormShellLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   dockerfile.Instruction
		want [][]string
	}{
		{dockerfile.Instruction{Form: dockerfile.FormExec, Args: []string{"bash", "-ec", "node a.js && node b.js"}}, [][]string{{"node", "a.js"}, {"node", "b.js"}}},
		{dockerfile.Instruction{Form: dockerfile.FormExec, Args: []string{"bash", "start.sh"}}, [][]string{{"bash", "start.sh"}}},
		// Positional arguments after the line: the argv as it is.
		{dockerfile.Instruction{Form: dockerfile.FormExec, Args: []string{"sh", "-c", "node \"$1\"", "sh", "x.js"}}, [][]string{{"sh", "-c", "node \"$1\"", "sh", "x.js"}}},
		{dockerfile.Instruction{Form: dockerfile.FormShell, Args: []string{"node a.js && node b.js"}}, [][]string{{"node", "a.js"}, {"node", "b.js"}}},
	}
	for _, tt := range tests {
		if got := Instruction(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Instruction(%q) = %q, want %q", tt.in.Args, got, tt.want)
		}
	}
}
