package shellcmd

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// PackageInstall is a package that a command line installs by name with
// a package manager. A global one (`npm install -g thelounge@4.6.0`, `yarn
// global add thelounge@${VERSION}`, `pnpm add -g serve`) has its bins on
// the image's PATH (/usr/local/bin on the node images), outside any app
// folder; a local one (`npm install --no-save libsql`, `yarn add x`, `pnpm
// add x`) lands in the working directory's node_modules, whether or not a
// lockfile pins it.
type PackageInstall struct {
	// Tool is the command that installs it: "npm install -g", "yarn
	// global add" or "pnpm add -g"; "npm install", "yarn add" or "pnpm
	// add".
	Tool    string `json:"tool"`
	Package string `json:"package"`
	// Version is the version or range asked for, when the line gives it;
	// VersionVar the variable it comes from when the line does not
	// (thelounge@${THELOUNGE_VERSION}).
	Version    string `json:"version,omitempty"`
	VersionVar string `json:"version_var,omitempty"`
	// Line is the line of the command line the install starts on, from 1.
	Line int `json:"line"`
	// Global is set for a global install.
	Global bool `json:"-"`
}

// npmInstallVerbs are npm install's name and its aliases.
var npmInstallVerbs = []string{"install", "i", "add", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall"}

// npmValued are npm options of an install that take the next word as
// their value, when not given with =.
var npmValued = []string{"--prefix", "--registry", "--loglevel", "--cache", "--userconfig", "--tag", "--omit", "--include", "--workspace", "-w"}

// pnpmValued are pnpm options that take the next word as their value,
// when not given with =.
var pnpmValued = []string{"--filter", "-F", "--dir", "-C", "--allow-build", "--reporter", "--loglevel", "--store-dir", "--virtual-store-dir", "--modules-dir", "--config"}

// GlobalInstalls returns the packages that the shell line src installs
// globally, in order. A package whose name is not a literal is left out.
func GlobalInstalls(src string) []PackageInstall {
	var out []PackageInstall
	for _, p := range Installs(src) {
		if p.Global {
			out = append(out, p)
		}
	}
	return out
}

// Installs returns the packages that the shell line src installs by name,
// globally or into the working directory, in order. A package whose name
// is not a literal is left out.
func Installs(src string) []PackageInstall {
	var out []PackageInstall
	eachCall(src, 3, func(call *syntax.CallExpr) {
		words := make([][]EnvPart, len(call.Args))
		for i, w := range call.Args {
			words[i], _ = envWord(w)
		}
		tool, global, specs := installSpecs(words)
		for _, s := range specs {
			if g, ok := namedPackage(s); ok {
				g.Tool, g.Line, g.Global = tool, int(call.Pos().Line()), global
				out = append(out, g)
			}
		}
	})
	return out
}

// lit is a word's value when it is all literal text.
func lit(w []EnvPart) (string, bool) {
	if len(w) == 1 && w[0].Env == "" {
		return w[0].Text, true
	}
	return "", len(w) == 0
}

// installSpecs returns the install command, whether it is global, and
// its package words, when words installs packages by name.
func installSpecs(words [][]EnvPart) (string, bool, [][]EnvPart) {
	argv := make([]string, len(words))
	for i, w := range words {
		argv[i], _ = lit(w)
	}
	switch path.Base(argv[0]) {
	case "npm":
		verb := slices.IndexFunc(argv[1:], func(a string) bool { return !strings.HasPrefix(a, "-") })
		if verb < 0 || !slices.Contains(npmInstallVerbs, argv[1+verb]) {
			return "", false, nil
		}
		global := false
		var specs [][]EnvPart
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			switch {
			case i == 1+verb:
			case a == "-g" || a == "--global" || a == "--location=global":
				global = true
			case a == "--location" && i+1 < len(argv):
				global, i = global || argv[i+1] == "global", i+1
			case slices.Contains(npmValued, a):
				i++
			case strings.HasPrefix(a, "-"):
			default:
				specs = append(specs, words[i])
			}
		}
		if global {
			return "npm install -g", true, specs
		}
		return "npm install", false, specs
	case "yarn":
		verb := slices.IndexFunc(argv[1:], func(a string) bool { return !strings.HasPrefix(a, "-") }) + 1
		switch {
		case verb == 0:
		case argv[verb] == "add":
			return "yarn add", false, packageWords(words[verb+1:], argv[verb+1:])
		case argv[verb] == "global" && verb+1 < len(argv) && argv[verb+1] == "add":
			return "yarn global add", true, packageWords(words[verb+2:], argv[verb+2:])
		}
	case "pnpm":
		// Options may come before the command (umami's pnpm
		// --allow-build='@prisma/engines' add …); a valued one's value is
		// the next word unless given with =.
		verb := 1
		for verb < len(argv) && strings.HasPrefix(argv[verb], "-") {
			if slices.Contains(pnpmValued, argv[verb]) {
				verb++
			}
			verb++
		}
		if verb+1 >= len(argv) || !slices.Contains([]string{"add", "install", "i"}, argv[verb]) {
			return "", false, nil
		}
		rest, restArgv := words[verb+1:], argv[verb+1:]
		if slices.ContainsFunc(argv[1:], func(a string) bool { return a == "-g" || a == "--global" }) {
			return "pnpm add -g", true, packageWords(rest, restArgv)
		}
		return "pnpm add", false, packageWords(rest, restArgv)
	}
	return "", false, nil
}

// packageWords are the words of words that are not options.
func packageWords(words [][]EnvPart, argv []string) [][]EnvPart {
	var out [][]EnvPart
	for i, a := range argv {
		if !strings.HasPrefix(a, "-") {
			out = append(out, words[i])
		}
	}
	return out
}

// namedPackage reads a package word: name, name@version, @scope/name or
// @scope/name@version, whose version may come from a variable. A path, a
// URL or a git spec is not a registry package, and is left out.
func namedPackage(w []EnvPart) (PackageInstall, bool) {
	if len(w) == 0 || w[0].Env != "" {
		return PackageInstall{}, false
	}
	text := w[0].Text
	name, version := text, ""
	if at := strings.IndexByte(text[min(1, len(text)):], '@'); at >= 0 { // past a scope's @
		name, version = text[:at+1], text[at+2:]
	} else if len(w) > 1 {
		return PackageInstall{}, false // name${SUFFIX}: the name is not known
	}
	if name == "" || strings.ContainsAny(name, ":\\") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "/") ||
		strings.Count(name, "/") != strings.Count(name[:1], "@") {
		return PackageInstall{}, false
	}
	g := PackageInstall{Package: name, Version: version}
	if len(w) > 1 {
		if g.Version == "" && len(w) == 2 && w[1].Env != "" {
			g.VersionVar = w[1].Env
		} else {
			g.Version = "" // part literal, part variable: say nothing of it
		}
	}
	return g, true
}
