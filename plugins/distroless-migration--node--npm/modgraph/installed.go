package modgraph

import "strings"

// A package whose computed loads resolve a module name the way node does
// (a plugin the user's configuration names) loads an installed package,
// never one of its own files: such a site is Installed, as a load by a
// node_modules path is, and leaves the rest of the package unreached.
// typescript.js is the case met: its computed load counted every file of
// typescript as loaded, _typingsInstaller.js's execSync among them, in
// five of the corpus's images.

// installedLoader is a package file whose computed loads were read.
type installedLoader struct {
	Package, File string
	// Says is where they were read.
	Says string
}

var installedLoaders = []installedLoader{
	{
		Package: "typescript", File: "lib/typescript.js",
		Says: "typescript 4.9.5, 5.0.4, 5.3.3, 5.5.2, 5.6.2, 5.8.3 and 5.9.3: its only computed loads are sys.require(baseDir, " +
			"moduleName), which require()s what resolveJSModule resolves for a language service plugin's module name, and (to 5.5) " +
			"require(etwModulePath), TS_ETW_MODULE_PATH or ./node_modules/@microsoft/typescript-etw; _tsserver.js and " +
			"_typingsInstaller.js run as their own processes, from tsserver.js and typingsInstaller.js; typescript 7 has no lib/typescript.js",
	},
}

// loadsInstalled reports whether file's computed loads load installed
// packages only.
func loadsInstalled(file string) bool {
	pkg := PackageOf(file)
	if pkg == "" {
		return false
	}
	for _, l := range installedLoaders {
		if strings.HasSuffix(pkg, "node_modules/"+l.Package) && file == pkg+"/"+l.File {
			return true
		}
	}
	return false
}
