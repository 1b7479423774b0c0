package shellcmd

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// npm reads its command line with nopt: an option is npm's configuration,
// whether it comes before or after the command, and only positional
// arguments (and everything after --) go to the script. An option npm does
// not know is still configuration, which npm gives the script as
// npm_config_<name> in its environment. The tables below are npm's (10 and
// 11) configuration names, by how nopt reads a value for them.

// npmBoolKeys are npm's boolean options: --key, --no-key, --key true|false.
var npmBoolKeys = strings.Fields(`all allow-same-version allow-scripts-pending allow-scripts-pin audit bin-links bypass-2fa
commit-hooks dangerously-allow-all-scripts description dev diff-ignore-all-space diff-name-only diff-no-prefix diff-text
dry-run engine-strict force foreground-scripts format-package-lock fund git-tag-version global global-style if-present
ignore-scripts include-attestations include-staged include-workspace-root init-private install-links json legacy-bundling
legacy-peer-deps link long offline omit-lockfile-registry-resolved package-lock package-lock-only packages-all parseable
prefer-dedupe prefer-offline prefer-online progress provenance read-only rebuild-bundle save save-bundle save-dev save-exact
save-optional save-peer save-prod shrinkwrap sign-git-commit sign-git-tag strict-allow-scripts strict-peer-deps strict-ssl
timing unicode update-notifier usage version versions workspaces-update`)

// npmBoolOrValueKeys are boolean options that also take some values after
// a space: the values each takes.
var npmBoolOrValueKeys = map[string]func(string) bool{
	"browser":        func(v string) bool { return !shortOptionRE.MatchString(v) }, // any string
	"color":          func(v string) bool { return v == "always" },
	"expect-results": func(v string) bool { return v == "null" },
	"optional":       func(v string) bool { return v == "null" },
	"production":     func(v string) bool { return v == "null" },
	"workspaces":     func(v string) bool { return v == "null" },
	"yes":            func(v string) bool { return v == "null" },
}

// npmStringKeys are options whose value is a string alone: the next
// argument is the value unless it looks like an option.
var npmStringKeys = strings.Fields(`call diff-dst-prefix diff-src-prefix editor git heading init-author-email init-author-name
init-license init-type init.author.email init.author.name init.license message pack-destination preid save-prefix scope
searchexclude searchopts shell tag tag-version-prefix user-agent viewer`)

// npmValueKeys are options with another kind of value (a path, a number,
// a URL, one of a list, a string or null): the next argument is the
// value.
var npmValueKeys = strings.Fields(`_auth access allow-directory allow-file allow-git allow-remote allow-scripts also
audit-level auth-type before ca cache cache-max cache-min cafile cert cidr cpu depth diff diff-unified expect-result-count
expires fetch-retries fetch-retry-factor fetch-retry-maxtimeout fetch-retry-mintimeout fetch-timeout globalconfig
https-proxy include init-author-url init-module init-version init.author.url init.module init.version install-strategy key
libc local-address location lockfile-version loglevel logs-dir logs-max maxsockets min-release-age
min-release-age-exclude name node-gyp node-options noproxy omit only orgs orgs-permission os otp package packages
packages-and-scopes-permission password prefix provenance-file proxy registry replace-registry-host sbom-format sbom-type
scopes script-shell searchlimit searchstaleness token-description umask userconfig which workspace`)

// npmShorthands expand as nopt expands them.
var npmShorthands = map[string][]string{
	"enjoy-by": {"--before"}, "d": {"--loglevel", "info"}, "dd": {"--loglevel", "verbose"}, "ddd": {"--loglevel", "silly"},
	"quiet": {"--loglevel", "warn"}, "q": {"--loglevel", "warn"}, "s": {"--loglevel", "silent"}, "silent": {"--loglevel", "silent"},
	"verbose": {"--loglevel", "verbose"}, "desc": {"--description"}, "help": {"--usage"}, "local": {"--no-global"},
	"n": {"--no-yes"}, "no": {"--no-yes"}, "porcelain": {"--parseable"}, "readonly": {"--read-only"}, "reg": {"--registry"},
	"iwr": {"--include-workspace-root"}, "ws": {"--workspaces"}, "a": {"--all"}, "c": {"--call"}, "f": {"--force"},
	"g": {"--global"}, "L": {"--location"}, "l": {"--long"}, "m": {"--message"}, "p": {"--parseable"}, "C": {"--prefix"},
	"S": {"--save"}, "B": {"--save-bundle"}, "D": {"--save-dev"}, "E": {"--save-exact"}, "O": {"--save-optional"},
	"P": {"--save-prod"}, "?": {"--usage"}, "H": {"--usage"}, "h": {"--usage"}, "v": {"--version"}, "w": {"--workspace"},
	"y": {"--yes"},
}

// npmUnsupported are options that change which package's script runs, or
// whether any runs: a rewrite to the script's own command cannot keep
// them.
var npmUnsupported = map[string]string{
	"workspaces":             "runs the script in every workspace",
	"include-workspace-root": "runs the script in workspaces",
	"global":                 "runs the script of the global package",
	"usage":                  "prints help instead of running the script",
	"version":                "prints npm's version instead of running the script",
	"versions":               "prints versions instead of running the script",
	"userconfig":             "reads npm configuration from another file",
	"globalconfig":           "reads npm configuration from another file",
}

type npmKind uint8

const (
	npmUnknown npmKind = iota
	npmBool
	npmBoolOrValue
	npmString
	npmValue
)

var npmKinds = func() map[string]npmKind {
	m := map[string]npmKind{}
	for _, k := range npmBoolKeys {
		m[k] = npmBool
	}
	for k := range npmBoolOrValueKeys {
		m[k] = npmBoolOrValue
	}
	for _, k := range npmStringKeys {
		m[k] = npmString
	}
	for _, k := range npmValueKeys {
		m[k] = npmValue
	}
	return m
}()

var (
	npmKeys       = sortedKeys(npmKinds)
	npmShortKeys  = sortedKeys(npmShorthands)
	dashesRE      = regexp.MustCompile(`^-{2,}$`)
	shortOptionRE = regexp.MustCompile(`^-[^-]`)
	optionLikeRE  = regexp.MustCompile(`^-{1,2}[^-]+`)
)

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// abbrev returns the one name of names that s is a prefix of (s itself
// when it is one), "" when none or several are.
func abbrev(s string, names []string) string {
	if slices.Contains(names, s) {
		return s
	}
	found := ""
	for _, n := range names {
		if strings.HasPrefix(n, s) {
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}

// npmShort resolves an option name (dashes removed) that is a shorthand,
// a group of one-letter shorthands or an abbreviation of one, as nopt's
// resolveShort does; nil when it is none.
func npmShort(name string) []string {
	if _, ok := npmKinds[name]; ok {
		return nil
	}
	if exp, ok := npmShorthands[name]; ok {
		return exp
	}
	var group []string
	for _, c := range name {
		exp, ok := npmShorthands[string(c)]
		if !ok {
			group = nil
			break
		}
		group = append(group, exp...)
	}
	if group != nil {
		return group
	}
	if abbrev(name, npmKeys) != "" {
		return nil
	}
	if full := abbrev(name, npmShortKeys); full != "" {
		return npmShorthands[full]
	}
	return nil
}

// npmArgs is an npm command line read as npm reads it.
type npmArgs struct {
	positional []string
	config     []npmSetting
}

type npmSetting struct {
	key, value string
	known      bool
}

// parseNPMArgs reads npm's arguments (after "npm") as nopt does.
func parseNPMArgs(in []string) npmArgs {
	args := slices.Clone(in)
	var out npmArgs
	for i := 0; i < len(args) && i < 1024; i++ {
		arg := args[i]
		if dashesRE.MatchString(arg) {
			out.positional = append(out.positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || len(arg) == 1 {
			out.positional = append(out.positional, arg)
			continue
		}
		hadEq := false
		if name, v, ok := strings.Cut(arg, "="); ok {
			hadEq = true
			arg = name
			args = slices.Insert(slices.Delete(args, i, i+1), i, name, v)
		}
		if exp := npmShort(strings.TrimLeft(arg, "-")); exp != nil {
			args = slices.Insert(slices.Delete(args, i, i+1), i, exp...)
			if exp[0] != arg {
				i--
				continue
			}
		}
		key := strings.TrimLeft(arg, "-")
		no := false
		for strings.HasPrefix(strings.ToLower(key), "no-") {
			no = !no
			key = key[3:]
		}
		if full := abbrev(key, npmKeys); full != "" {
			key = full
		}
		kind := npmKinds[key]
		la, hasLA := "", i+1 < len(args)
		if hasLA {
			la = args[i+1]
		}
		if no || kind == npmBool || kind == npmBoolOrValue || kind == npmUnknown && !hadEq {
			val := !no
			v := ""
			if hasLA && (la == "true" || la == "false") {
				val = (la == "true") != no
				hasLA = false
				i++
			}
			if val {
				v = "true"
			}
			if kind == npmBoolOrValue && hasLA && npmBoolOrValueKeys[key](la) {
				v = la
				i++
			}
			out.config = append(out.config, npmSetting{key: key, value: v, known: kind != npmUnknown})
			continue
		}
		v := "true"
		switch {
		case kind == npmString && !hasLA:
			v = ""
		case kind == npmString && optionLikeRE.MatchString(la):
			v = ""
			i--
		case hasLA && dashesRE.MatchString(la):
			i--
		case hasLA:
			v = la
		}
		out.config = append(out.config, npmSetting{key: key, value: v, known: kind != npmUnknown})
		i++
	}
	return out
}

// npmInvocation reads an npm command line (after "npm").
func npmInvocation(args []string) (ScriptInvocation, bool) {
	a := parseNPMArgs(args)
	inv := ScriptInvocation{Runner: NPM}
	pos := a.positional
	if len(pos) == 0 {
		return inv, false
	}
	switch pos[0] {
	case "start", "stop", "test", "restart", "t", "tst":
		inv.Script = map[string]string{"t": "test", "tst": "test"}[pos[0]]
		if inv.Script == "" {
			inv.Script = pos[0]
		}
		pos = pos[1:]
	case "run", "run-script", "rum", "urn":
		if len(pos) < 2 {
			return inv, false
		}
		inv.Script, pos = pos[1], pos[2:]
	default:
		return inv, false
	}
	if len(pos) > 0 {
		inv.Args = pos
	}
	envAt := map[string]int{}
	for _, c := range a.config {
		switch c.key {
		case "prefix":
			// npm runs the package.json in that directory, as if it ran there.
			if c.value == "" || c.value == "true" {
				inv.Unsupported = append(inv.Unsupported, "--prefix with no directory")
			}
			inv.Dir = c.value
			continue
		case "workspace":
			// -w NAME|PATH runs that workspace's script, in its directory;
			// given twice, npm runs the script in each.
			switch {
			case c.value == "" || c.value == "true":
				inv.Unsupported = append(inv.Unsupported, "--workspace with no workspace")
			case inv.Workspace != "":
				inv.Unsupported = append(inv.Unsupported, "--workspace given twice runs the script in several workspaces")
			}
			inv.Workspace = c.value
			continue
		}
		if why, ok := npmUnsupported[c.key]; ok && (c.value != "" || c.key == "prefix" || c.key == "workspace") {
			inv.Unsupported = append(inv.Unsupported, "--"+c.key+" "+why)
			continue
		}
		switch {
		case c.key == "ignore-scripts":
			inv.NoHooks = c.value == "true"
		case c.key == "node-options":
			inv.Env = setEnv(inv.Env, envAt, "NODE_OPTIONS", c.value)
		case c.key == "script-shell" || c.key == "shell":
			// The rewrite runs the script's one command without a shell.
			if c.value != "" && c.value != "true" && !IsShell(c.value) {
				inv.Unsupported = append(inv.Unsupported, "--"+c.key+" "+c.value+" runs the script with a program that is not a shell")
			}
		case !c.known && c.key != "" && !strings.ContainsAny(c.key[:1], "/@_"):
			// npm gives the script what it does not know itself.
			name := "npm_config_" + strings.ToLower(strings.ReplaceAll(c.key, "-", "_"))
			if _, twice := envAt[name]; twice {
				// npm joins the values with blank lines, which ENV cannot hold.
				inv.Unsupported = append(inv.Unsupported, "--"+c.key+" is given twice")
				continue
			}
			inv.Env = setEnv(inv.Env, envAt, name, c.value)
		}
	}
	return inv, true
}

// setEnv sets name in env, replacing an earlier value.
func setEnv(env []string, at map[string]int, name, value string) []string {
	if i, ok := at[name]; ok {
		env[i] = name + "=" + value
		return env
	}
	at[name] = len(env)
	return append(env, name+"="+value)
}

// yarnPnpmBoolOptions are yarn and pnpm options before the script name
// that change nothing about what the script runs.
var yarnPnpmBoolOptions = map[string]bool{
	"--silent": true, "-s": true, "--verbose": true, "--offline": true, "--frozen-lockfile": true, "--non-interactive": true,
	"--no-progress": true, "--ignore-engines": true, "--prefer-offline": true, "--no-default-rc": true, "--if-present": true,
}

// yarnPnpmInvocation reads a yarn or pnpm command line (after the runner):
// their options come before the script name, and the arguments after it
// go to the script. yarn --cwd and pnpm -C/--dir run the package.json of
// another directory, pnpm --filter and yarn workspace NAME a workspace's.
func yarnPnpmInvocation(runner Runner, rest []string) (ScriptInvocation, bool) {
	inv := ScriptInvocation{Runner: runner}
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "--" {
		opt := rest[0]
		rest = rest[1:]
		name, value, hasValue := strings.Cut(opt, "=")
		takeValue := func() string {
			if !hasValue && len(rest) > 0 {
				value, rest = rest[0], rest[1:]
			}
			return value
		}
		switch {
		case yarnPnpmBoolOptions[opt]:
		case hasValue && (name == "--loglevel" || name == "--reporter"):
		case runner == Yarn && name == "--cwd", runner == PNPM && (name == "-C" || name == "--dir"):
			if inv.Dir = takeValue(); inv.Dir == "" {
				inv.Unsupported = append(inv.Unsupported, name+" with no directory")
			}
		case runner == PNPM && (name == "--filter" || name == "-F"):
			inv.Unsupported = append(inv.Unsupported, inv.setWorkspace(name, pnpmSelector(takeValue()))...)
		default:
			inv.Unsupported = append(inv.Unsupported, name+" is an option codegenie does not know to keep")
		}
	}
	for runner == Yarn && len(rest) >= 3 && rest[0] == "workspace" {
		// yarn workspace NAME COMMAND runs COMMAND in that workspace.
		inv.Unsupported = append(inv.Unsupported, inv.setWorkspace("workspace", rest[1])...)
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return inv, false
	}
	if rest[0] == "run" || rest[0] == "run-script" {
		if len(rest) < 2 {
			return inv, false
		}
		rest = rest[1:]
	} else if managerCommands[rest[0]] {
		return inv, false
	}
	inv.Script, rest = rest[0], rest[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) > 0 {
		inv.Args = rest
	}
	return inv, true
}

// setWorkspace records the workspace an option selects, with why it
// cannot be kept when it is a second one or selects more than one.
func (inv *ScriptInvocation) setWorkspace(opt, sel string) []string {
	var why []string
	switch {
	case sel == "":
		why = append(why, opt+" with no workspace")
	case inv.Workspace != "":
		why = append(why, opt+" given twice runs the script in several packages")
	case strings.ContainsAny(sel, "!^[") || strings.Contains(sel, "..."):
		why = append(why, opt+" "+sel+" selects packages by their dependencies or by exclusion")
	}
	inv.Workspace = sel
	return why
}

// pnpmSelector returns a --filter selector's package: a name (or name
// pattern), or a directory written ./dir or {dir}.
func pnpmSelector(sel string) string {
	if strings.HasPrefix(sel, "{") && strings.HasSuffix(sel, "}") {
		sel = strings.TrimSuffix(strings.TrimPrefix(sel, "{"), "}")
		if !strings.HasPrefix(sel, ".") && !strings.HasPrefix(sel, "/") {
			sel = "./" + sel
		}
	}
	return sel
}

// IsPathSelector reports whether a workspace selector names a directory
// (./dir, ../dir, /dir) rather than a package name.
func IsPathSelector(sel string) bool {
	return sel == "." || strings.HasPrefix(sel, "./") || strings.HasPrefix(sel, "../") || strings.HasPrefix(sel, "/")
}

// nodeRunInvocation reads node --run NAME [-- ARGS]: Node's own script
// runner (Node 22) runs the script with /bin/sh -c on POSIX, from the
// nearest package.json up from the working directory, without pre or post
// scripts; the arguments after -- go to the script.
func nodeRunInvocation(args []string) (ScriptInvocation, bool) {
	inv := ScriptInvocation{Runner: NodeRun, NoHooks: true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--run" && i+1 < len(args):
			inv.Script = args[i+1]
			i++
		case strings.HasPrefix(a, "--run="):
			inv.Script = strings.TrimPrefix(a, "--run=")
		case a == "--" && inv.Script != "":
			if rest := args[i+1:]; len(rest) > 0 {
				inv.Args = rest
			}
			i = len(args)
		case inv.Script != "" && !strings.HasPrefix(a, "-"):
			// node --run x y: y is not the script's; node ignores it.
			inv.Unsupported = append(inv.Unsupported, "argument "+a+" after the script name is not passed without --")
		default:
			inv.Unsupported = append(inv.Unsupported, a+" is a node option codegenie does not know to keep with --run")
		}
	}
	return inv, inv.Script != ""
}

// NpxBin reads an npx command line (argv[0] is npx): the command it runs
// from node_modules/.bin and that command's arguments, with the options
// that keep it from being only that (a package to install, a shell line).
// ok is false when argv is not npx or names no command.
func NpxBin(argv []string) (bin []string, unsupported []string, ok bool) {
	if len(argv) < 2 || path.Base(argv[0]) != "npx" {
		return nil, nil, false
	}
	rest := argv[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		opt := rest[0]
		rest = rest[1:]
		name, _, _ := strings.Cut(opt, "=")
		switch name {
		case "--":
			return rest, unsupported, len(rest) > 0
		case "--no-install", "--no", "-y", "--yes", "-q", "--quiet", "--silent", "--offline", "--prefer-offline", "--no-yes":
		case "-p", "--package":
			unsupported = append(unsupported, name+" installs or runs another package")
			if !strings.Contains(opt, "=") && len(rest) > 0 {
				rest = rest[1:]
			}
		case "-c", "--call":
			unsupported = append(unsupported, name+" runs a shell command line")
			if !strings.Contains(opt, "=") && len(rest) > 0 {
				rest = rest[1:]
			}
		default:
			unsupported = append(unsupported, name+" is an npx option codegenie does not know to keep")
		}
	}
	return rest, unsupported, len(rest) > 0
}
