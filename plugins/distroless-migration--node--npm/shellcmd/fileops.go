package shellcmd

import (
	"path"
	"strings"
)

// File commands as coreutils reads their arguments: which paths a command
// line makes or writes, so that a RUN step's effect on the image's files
// can be told from its words.

// getopt splits args as GNU getopt_long does: short options may be
// clustered (-dm755), a short option in valued takes the rest of its
// cluster or the next argument as its value, a long option in longValued
// takes "=value" or the next argument, "--" ends the options, and
// everything else is an operand. opts maps each option seen, by its
// short letter or long name, to its last value.
func getopt(args []string, valued string, longValued map[string]bool) (opts map[string]string, operands []string) {
	opts = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...)
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			if !hasVal && longValued[name] && i+1 < len(args) {
				i++
				val = args[i]
			}
			opts[name] = val
		case strings.HasPrefix(a, "-") && len(a) > 1:
		cluster:
			for j := 1; j < len(a); j++ {
				c := a[j : j+1]
				if !strings.Contains(valued, c) {
					opts[c] = ""
					continue
				}
				switch {
				case j+1 < len(a):
					opts[c] = a[j+1:]
				case i+1 < len(args):
					i++
					opts[c] = args[i]
				default:
					opts[c] = ""
				}
				break cluster
			}
		default:
			operands = append(operands, a)
		}
	}
	return opts, operands
}

// opt returns the value of an option given by its short letter or its
// long name.
func opt(opts map[string]string, short, long string) (string, bool) {
	if v, ok := opts[long]; ok {
		return v, true
	}
	v, ok := opts[short]
	return v, ok
}

// Install is what a coreutils install command line does.
type Install struct {
	// Dirs are the directories install -d makes (as mkdir -p does), with
	// Owner, Group and Mode set on each.
	Dirs []string
	// Dest is where install without -d copies its files: a file, or the
	// directory -t or the last operand names.
	Dest               string
	Owner, Group, Mode string
}

// ParseInstall reads the arguments of install (after the program name).
func ParseInstall(args []string) Install {
	opts, ops := getopt(args, "ogmtS", map[string]bool{"owner": true, "group": true, "mode": true, "target-directory": true, "suffix": true, "strip-program": true})
	var in Install
	in.Owner, _ = opt(opts, "o", "owner")
	in.Group, _ = opt(opts, "g", "group")
	in.Mode, _ = opt(opts, "m", "mode")
	if _, ok := opt(opts, "d", "directory"); ok {
		in.Dirs = ops
		return in
	}
	if t, ok := opt(opts, "t", "target-directory"); ok {
		in.Dest = t
	} else if len(ops) > 1 {
		in.Dest = ops[len(ops)-1]
	}
	return in
}

// MadeDirs returns the directories a command makes: mkdir's operands and
// install -d's. It is nil for any other command.
func MadeDirs(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	switch path.Base(argv[0]) {
	case "mkdir":
		_, ops := getopt(argv[1:], "m", map[string]bool{"mode": true})
		return ops
	case "install":
		return ParseInstall(argv[1:]).Dirs
	}
	return nil
}

// Written returns the paths a file command creates or overwrites: the
// link name of ln, the destination of cp, mv and install (a directory
// when -t names one or there are several sources), the operands of touch.
// ok is false for a command it does not know. A single-operand ln or cp
// writes into the working directory, which is returned as ".".
func Written(argv []string) (paths []string, ok bool) {
	if len(argv) == 0 {
		return nil, false
	}
	dest := func(valued string, longValued map[string]bool) []string {
		opts, ops := getopt(argv[1:], valued+"t", mergeLong(longValued, "target-directory"))
		if t, ok := opt(opts, "t", "target-directory"); ok {
			return []string{t}
		}
		switch len(ops) {
		case 0:
			return nil
		case 1:
			return []string{"."}
		}
		return ops[len(ops)-1:]
	}
	switch path.Base(argv[0]) {
	case "ln":
		return dest("S", map[string]bool{"suffix": true}), true
	case "cp":
		return dest("S", map[string]bool{"suffix": true}), true
	case "mv":
		return dest("S", map[string]bool{"suffix": true}), true
	case "install":
		in := ParseInstall(argv[1:])
		if in.Dirs != nil {
			return in.Dirs, true
		}
		if in.Dest == "" {
			return nil, true
		}
		return []string{in.Dest}, true
	case "touch":
		_, ops := getopt(argv[1:], "dtr", map[string]bool{"date": true, "reference": true})
		return ops, true
	}
	return nil, false
}

// Removed returns the paths rm removes (its operands, globs as written).
func Removed(argv []string) []string {
	if len(argv) == 0 || path.Base(argv[0]) != "rm" {
		return nil
	}
	_, ops := getopt(argv[1:], "", nil)
	return ops
}

func mergeLong(m map[string]bool, names ...string) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		out[k] = v
	}
	for _, n := range names {
		out[n] = true
	}
	return out
}
