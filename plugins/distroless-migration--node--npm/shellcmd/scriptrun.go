package shellcmd

import (
	"path"
	"strings"
)

// ShellScript returns the script file a shell command line runs (bash
// /app/entrypoint.sh, sh -e start.sh, bash -- x.sh): the first operand
// after the shell's options. It is "" when argv is no shell, or the shell
// reads its commands from -c or standard input.
func ShellScript(argv []string) string {
	script, _ := ShellScriptArgs(argv)
	return script
}

// ShellScriptArgs is ShellScript with the script's own arguments: the
// operands after it, which the script sees as "$@".
func ShellScriptArgs(argv []string) (script string, args []string) {
	if len(argv) < 2 || !IsShell(argv[0]) || path.Base(argv[0]) == "busybox" {
		return "", nil
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--" || a == "-":
			if i+1 < len(argv) {
				return argv[i+1], argv[i+2:]
			}
			return "", nil
		case a == "-o" || a == "+o" || a == "--rcfile" || a == "--init-file" || a == "-O" || a == "+O":
			i++ // the option's value
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.ContainsAny(a[1:], "cs") {
				return "", nil // -c LINE, or -s: commands from standard input
			}
		default:
			return a, argv[i+1:]
		}
	}
	return "", nil
}

// ShellLine returns the command line of sh -c LINE (with its options
// before -c), or "".
func ShellLine(argv []string) string {
	if len(argv) < 3 || !IsShell(argv[0]) || path.Base(argv[0]) == "busybox" {
		return ""
	}
	for i := 1; i < len(argv)-1; i++ {
		a := argv[i]
		switch {
		case a == "-o" || a == "+o":
			i++
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c"):
			return argv[i+1]
		case !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			return ""
		}
	}
	return ""
}

// ShellLineOnly is ShellLine when nothing follows the line: sh [OPTIONS]
// -c LINE, with no positional arguments for LINE to read.
func ShellLineOnly(argv []string) string {
	if l := ShellLine(argv); l != "" && l == argv[len(argv)-1] {
		return l
	}
	return ""
}
