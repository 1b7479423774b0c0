package modgraph

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// at is the 1-based line and code-point column where marker starts in
// files[file].
func at(t *testing.T, files map[string]string, file, marker string) (int, int) {
	t.Helper()
	src := files[file]
	i := strings.Index(src, marker)
	if i < 0 {
		t.Fatalf("%s holds no %q", file, marker)
	}
	line := strings.Count(src[:i], "\n") + 1
	col := utf8.RuneCountInString(src[strings.LastIndex(src[:i], "\n")+1:i]) + 1
	return line, col
}

// TestRunsWhereCodeThatRunsNamesIt: a package's call runs only when its
// function is named by code that runs: a module's top level, the app's
// own code, or the body of a function that runs itself. Publications
// (exports.x = x, a re-export's getter, an import's binding, a comment)
// call nothing; a publication under another name runs when that name
// does.
func TestRunsWhereCodeThatRunsNamesIt(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":   "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
		"package.json": `{"name":"svc","dependencies":{"kit":"1","other":"1"}}`,
		"index.js": `const kit = require('kit')
require('other')
kit.onRequest()
function neverCalled () { return kit.appHook() }
`,
		"node_modules/kit/package.json": `{"name":"kit","main":"index.js"}`,
		"node_modules/kit/index.js": `"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
require('./lib/cli');
const used = require('./lib/used.mjs');
const hooks = require('./lib/hooks');
exports.onRequest = used.onRequest;
exports.appHook = hooks.appHook;
hooks.hostInfo();
const byName = 'viaString';
require('./lib/swc');
require('./lib/eager-once');
`,
		// Names that name nothing of swc.js's: another package's own
		// isWasm, a regular expression, a string that is not the name,
		// JSON's parse; and a callback that once defers.
		"node_modules/kit/lib/swc.js": `const cp = require('child_process')
function isWasm () { return loadBindings() }
function loadBindings () { return cp.execSync('npm view') }
function parse () { return cp.execSync('parse') }
function loadWasm () { return cp.execSync('wasm') }
function spawn () { return cp.execSync('cross') }
function readFile () { return cp.execSync('read') }
function once (fn) { let done = false; return function () { if (!done) { done = true; fn() } } }
const teardown = once(() => { loadBindings() })
const eager = run(() => cp.execSync('eager'))
const re = /loadBindings/
const label = 'isWasm: off'
JSON.parse('{}')
exports.isWasm = isWasm
`,
		// A once of the file's own that calls its callback at once.
		"node_modules/kit/lib/eager-once.js": `const cp = require('child_process')
function once (fn) { fn(); return () => {} }
const boot = once(() => cp.execSync('boot'))
`,
		"node_modules/other/package.json": `{"name":"other","main":"index.js"}`,
		"node_modules/other/index.js": `function isWasm () { return false }
isWasm()
module.exports = { isWasm }
// node's spawn and readFile, not swc.js's.
const _cp = _interop_require_default(require("node:child_process"))
const fs = require('fs')
_cp.spawn('ls', [])
fs.readFile('x', () => {})
// A property of the name that is only read or tested calls nothing.
const v = { loadWasm: true }
if (!v.loadWasm) {}
if ((v.loadWasm)) {}
const t = typeof v.loadWasm === 'function' ? 1 : v.loadWasm === 2
// A string of the name in a file that never loads used.mjs (an enum's
// value, a message's type) cannot be a key of its exports; a subscript's
// key is a property, of what its object holds.
var Kind; (function (Kind) { Kind["SYNC"] = "enumValue"; })(Kind || (Kind = {}))
process.send && process.send({ type: 'messageType' })
const o = global.o
o['bySubscript']()
const helper = require('./helper')
helper['byHelper']()
// A property set on it, or set, calls nothing; nor does a class field's
// name.
global.kit.viaAssign.exists = true
global.kit.viaLeft = o
class K { viaField = true }
// An operand of && in a test is tested; a property of a const object
// literal is this file's.
if (global.opts.file && global.opts.viaAnd) {}
const r2 = global.opts.file && global.opts.viaAnd ? 1 : 2
const lit = { viaObj () { return 1 } }
lit.viaObj()
`,
		"node_modules/other/helper.js": "module.exports = {}\n",
		// TypeScript's CommonJS output: a preamble, then a getter.
		"node_modules/kit/lib/helpers.js": `"use strict";
exports.getPkgManager = void 0;
Object.defineProperty(exports, "getPkgManager", { enumerable: true, get: function () { return getPkgManager; } });
const child_process = require("child_process");
function getPkgManager() {
    return (0, child_process.execSync)('yarn --version');
}
`,
		// swc's output: _export(exports, { name: function () { … } }).
		"node_modules/kit/lib/install.js": `"use strict";
function _export(target, all) { for (var name in all) Object.defineProperty(target, name, { enumerable: true, get: all[name] }); }
_export(exports, { installDependencies: function() { return installDependencies; } });
const _helpers = require("./helpers");
async function installDependencies() {
    return (0, _helpers.getPkgManager)();
}
`,
		// Only the CLI's command calls it; nothing calls the command.
		"node_modules/kit/lib/cli.js": `const { installDependencies } = require('./install')
// installDependencies, in a comment, calls nothing
async function nextTest () {
  await installDependencies()
}
function rec () { return rec() || require('child_process').execSync('true') }
module.exports = { nextTest }
`,
		"node_modules/kit/lib/used.mjs": `import { execSync } from 'node:child_process'
function runsLs () { return execSync('ls') }
function handler () { return runsLs() }
function viaString () { return execSync('id') }
function enumValue () { return execSync('enum') }
function messageType () { return execSync('message') }
function bySubscript () { return execSync('subscript') }
function byHelper () { return execSync('helper') }
function viaAssign () { return execSync('assign') }
function viaLeft () { return execSync('left') }
function viaField () { return execSync('field') }
function viaAnd () { return execSync('and') }
function viaObj () { return execSync('obj') }
export { handler as onRequest }
`,
		"node_modules/kit/lib/hooks.js": `const cp = require('child_process')
function appHook () { return cp.execSync('date') }
function regQuery () { return cp.execSync('REG QUERY HKLM') }
function onWindows () { return cp.execSync('ver') }
exports.appHook = appHook
if (process.platform === 'win32') {
  regQuery()
}
exports.hostInfo = () => process.platform === 'win32' ? onWindows() : 'linux'
`,
	}
	g := graphOf(t, files)
	for _, c := range []struct {
		file, marker string
		runs         bool
	}{
		{"node_modules/kit/lib/helpers.js", "(0, child_process.execSync)", false},
		{"node_modules/kit/lib/cli.js", "require('child_process')", false},
		{"node_modules/kit/lib/used.mjs", "execSync('ls')", true},    // export { handler as onRequest }, which index.js calls
		{"node_modules/kit/lib/used.mjs", "execSync('id')", true},    // a string names it at top level
		{"node_modules/kit/lib/used.mjs", "execSync('enum')", false}, // a string in a file that never loads it
		{"node_modules/kit/lib/used.mjs", "execSync('message')", false},
		{"node_modules/kit/lib/used.mjs", "execSync('subscript')", true}, // o['bySubscript'](), o unknown
		{"node_modules/kit/lib/used.mjs", "execSync('helper')", false},   // a key of a module that never loads it
		{"node_modules/kit/lib/used.mjs", "execSync('assign')", false},
		{"node_modules/kit/lib/used.mjs", "execSync('left')", false},
		{"node_modules/kit/lib/used.mjs", "execSync('field')", false},
		{"node_modules/kit/lib/used.mjs", "execSync('and')", false},
		{"node_modules/kit/lib/used.mjs", "execSync('obj')", false},
		{"node_modules/kit/lib/hooks.js", "cp.execSync('date')", true}, // the app names it, in code of its own
		{"node_modules/kit/lib/hooks.js", "cp.execSync('REG", false},   // named only where a platform test keeps it to Windows
		{"node_modules/kit/lib/hooks.js", "cp.execSync('ver')", false},
		{"node_modules/kit/lib/swc.js", "cp.execSync('npm view')", false},
		{"node_modules/kit/lib/swc.js", "cp.execSync('parse')", false},
		{"node_modules/kit/lib/swc.js", "cp.execSync('wasm')", false},
		{"node_modules/kit/lib/swc.js", "cp.execSync('cross')", false},
		{"node_modules/kit/lib/swc.js", "cp.execSync('read')", false},
		{"node_modules/kit/lib/swc.js", "cp.execSync('eager')", true}, // run is no wrapper known to defer
		{"node_modules/kit/lib/eager-once.js", "cp.execSync('boot')", true},
	} {
		line, col := at(t, files, c.file, c.marker)
		runs, why := g.Runs(t.Context(), c.file, line, col)
		if runs != c.runs {
			t.Errorf("Runs(%s:%d) = %v (%s), want %v", c.file, line, runs, why, c.runs)
		}
	}
	line, col := at(t, files, "node_modules/kit/lib/helpers.js", "(0, child_process.execSync)")
	if _, why := g.Runs(t.Context(), "node_modules/kit/lib/helpers.js", line, col); !strings.Contains(why, "getPkgManager()") || !strings.Contains(why, "installDependencies") {
		t.Errorf("the note %q should name the function and the one that names it", why)
	}

	// Once the app calls the command, the whole chain runs.
	files["index.js"] += "require('kit/lib/cli').nextTest()\n"
	g = graphOf(t, files)
	line, col = at(t, files, "node_modules/kit/lib/helpers.js", "(0, child_process.execSync)")
	if runs, why := g.Runs(t.Context(), "node_modules/kit/lib/helpers.js", line, col); !runs {
		t.Errorf("getPkgManager's call does not run (%s), though the app calls nextTest", why)
	}
}

// TestRunsThroughLoads: a function published as its module's default
// export (module.exports = f, or a bundle module's e.exports = f) runs
// where its importers use what their load binds; a property of a module
// names only functions of the files that module reaches; and names that
// are the file's own (a parameter, a plain variable, this.name in a class
// with its own, a private name, an event's name, a property of a bundle's
// built-in module) name no package's function.
func TestRunsThroughLoads(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":                     "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
		"package.json":                   `{"name":"svc","dependencies":{"kit":"1","wrap":"1","other":"1"}}`,
		"index.js":                       "require('kit')\nrequire('other')\n",
		"node_modules/wrap/package.json": `{"name":"wrap","main":"index.js"}`,
		"node_modules/wrap/index.js": `const cp = require('child_process')
function run (cmd) { return cp.execSync(cmd) }
module.exports = run
`,
		"node_modules/wrap/sync.js": `const cp = require('child_process')
function sync (cmd) { return cp.execSync('sync ' + cmd) }
exports.sync = sync
`,
		// An ncc bundle: module 7 is child_process, module 9 the wrapper.
		"node_modules/kit/package.json": `{"name":"kit","main":"index.js"}`,
		"node_modules/kit/dist/compiled/spawner/index.js": "(()=>{var e={7:e=>{\"use strict\";e.exports=require(\"child_process\")}," +
			"9:(e,t,n)=>{const r=n(7);function spawn(a){return r.spawn(a,[],{shell:true})}e.exports=spawn;e.exports.spawn=spawn}," +
			"5:(e,t,i)=>{const s=i(7);class C{go(e){return s.spawn(e,[])}}e.exports=C}};" +
			"var t={};function __nccwpck_require__(n){var r=t[n];if(r!==undefined){return r.exports}var s=t[n]={exports:{}};e[n](s,s.exports,__nccwpck_require__);return s.exports}" +
			"var n=__nccwpck_require__(9);new(__nccwpck_require__(5))().go('x');module.exports=n})();\n",
		"node_modules/kit/index.js": `"use strict";
const _spawner = _interop_require_default(require("./dist/compiled/spawner"));
const run = require('wrap');
const { sync } = require('wrap/sync');
function _interop_require_default(obj) { return obj && obj.__esModule ? obj : { default: obj } }
async function nextTest () { (0, _spawner.default)('test'); run('x') }
function onSync () { return sync('y') }
`,
		// Names that are other's own.
		"node_modules/other/package.json": `{"name":"other","main":"index.js"}`,
		"node_modules/other/index.js": `const g = require('./glob')
g.sync('*')
function f (spawn, run) { return spawn() + run() }
const run = Date.now()
class A { spawn () {} #run () {} go () { this.spawn(); this.#run() } }
new A().go()
process.once('spawn', () => {})
f(() => 1, () => 2)
require('./dist/finder')()
require('./dist/walker')()
const { serialize } = require('./glob')
serialize.sync()
`,
		"node_modules/other/glob.js": "exports.sync = function () { return [] }\nexports.serialize = { sync () { return 1 } }\n",
		// A bundle's property of one of its own modules (f.sync, f = n(3))
		// names that module's, not wrap's.
		"node_modules/other/dist/finder.js": "(()=>{var r={3:(e,t,n)=>{const c=n(7);e.exports.sync=function sync(){return c.execSync('bundled')}}," +
			"7:e=>{e.exports=require(\"child_process\")},8:(e,t,n)=>{const f=n(3);e.exports=()=>f.sync()}};" +
			"var o={};function req(n){var t=o[n];if(t!==undefined)return t.exports;var s=o[n]={exports:{}};r[n](s,s.exports,req);return s.exports}" +
			"module.exports=req(8)})();\n",
		// Module 3 publishes a spawnSync as sync; the sync that module 5
		// calls is module 4's (s, assigned in a branch), which never
		// requires 3, and module 4's bare sync is its own.
		"node_modules/other/dist/walker.js": "(()=>{var r={3:(e,t,n)=>{const c=n(7);function spawnSync(){return c.execSync('walker')}e.exports.sync=spawnSync}," +
			"4:(e,t,n)=>{e.exports=isexe;isexe.sync=sync;function isexe(){}function sync(){return 1}sync()}," +
			"5:(e,t,n)=>{var s;if(process.env.W){s=n(4)}else{s=n(4)}e.exports=()=>s.sync()}," +
			"7:e=>{e.exports=require(\"child_process\")},8:(e,t,n)=>{const w=n(5);e.exports=w}};" +
			"var o={};function req(n){var t=o[n];if(t!==undefined)return t.exports;var s=o[n]={exports:{}};r[n](s,s.exports,req);return s.exports}" +
			"module.exports=req(8)})();\n",
	}
	g := graphOf(t, files)
	for _, c := range []struct {
		file, marker string
		runs         bool
	}{
		{"node_modules/wrap/index.js", "cp.execSync(cmd)", false},               // only nextTest calls it
		{"node_modules/wrap/sync.js", "cp.execSync('sync", false},               // only onSync; g.sync and serialize.sync are glob's, f.sync the bundle's
		{"node_modules/kit/dist/compiled/spawner/index.js", "r.spawn(a", false}, // only nextTest calls it
		{"node_modules/kit/dist/compiled/spawner/index.js", "s.spawn(e", true},  // C's go runs at the bundle's top level
		{"node_modules/other/dist/finder.js", "c.execSync('bundled')", true},    // f.sync() runs where the bundle's default export does
		{"node_modules/other/dist/walker.js", "c.execSync('walker')", false},    // s.sync() is module 4's
	} {
		line, col := at(t, files, c.file, c.marker)
		runs, why := g.Runs(t.Context(), c.file, line, col)
		if runs != c.runs {
			t.Errorf("Runs(%s:%d:%d) = %v (%s), want %v", c.file, line, col, runs, why, c.runs)
		}
	}

	// Once kit calls them at its top level, they run.
	files["node_modules/kit/index.js"] += "nextTest()\nonSync()\n"
	g = graphOf(t, files)
	for _, c := range []struct{ file, marker string }{
		{"node_modules/wrap/index.js", "cp.execSync(cmd)"},
		{"node_modules/wrap/sync.js", "cp.execSync('sync"},
		{"node_modules/kit/dist/compiled/spawner/index.js", "r.spawn(a"},
	} {
		line, col := at(t, files, c.file, c.marker)
		if runs, why := g.Runs(t.Context(), c.file, line, col); !runs {
			t.Errorf("Runs(%s:%d:%d) = false (%s), though kit calls it", c.file, line, col, why)
		}
	}
}

// TestRunsAnswersPerFile: what a mention names can depend on the file
// asked about (this.transform names the class's method, not another
// package's plain function of the name), so the answer for one file is
// not the answer for the other, whichever is asked first.
func TestRunsAnswersPerFile(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":                      "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
		"package.json":                    `{"name":"svc","dependencies":{"plain":"1","schema":"1"}}`,
		"index.js":                        "require('plain')\nrequire('schema')\nrequire('lazy/' + process.argv[2])\n",
		"node_modules/plain/package.json": `{"name":"plain","main":"index.js"}`,
		"node_modules/plain/index.js": `const cp = require('child_process')
function transform () { return cp.execSync('plain') }
function sync () { return cp.execSync('plain sync') }
exports.transform = transform
exports.sync = sync
exports.wasm = { transform (src) { return src } }
`,
		// A file with a parse of its own in one scope calls yamlish's
		// in another.
		"node_modules/yamlish/package.json": `{"name":"yamlish","main":"index.js"}`,
		"node_modules/yamlish/index.js": `const cp = require('child_process')
function parse (s) { return cp.execSync('yaml') }
exports.parse = parse
`,
		"node_modules/schema/bundle.js": `function outer () { function parse (s) { return s } return parse('a') }
{ const { parse } = require('yamlish'); parse('b') }
`,
		"node_modules/schema/package.json": `{"name":"schema","main":"index.js"}`,
		"node_modules/schema/index.js": `const cp = require('child_process')
class Type {
  constructor () { this.transform = this.transform.bind(this) }
  transform () { return cp.execSync('method') }
}
module.exports = new Type()
require('./bundle')
const Kind = { SYNC: 'sync' }
`,
		// A string in a file that never loads plain names its sync only
		// where a computed load may hand it on: lazy's, not plain's.
		"node_modules/lazy/package.json": `{"name":"lazy","main":"index.js"}`,
		"node_modules/lazy/index.js": `const cp = require('child_process')
function sync () { return cp.execSync('lazy sync') }
exports.sync = sync
`,
	}
	g := graphOf(t, files)
	for _, c := range []struct {
		file, marker string
		runs         bool
	}{
		{"node_modules/plain/index.js", "cp.execSync('plain')", false},
		{"node_modules/schema/index.js", "cp.execSync('method')", true}, // its constructor binds it
		{"node_modules/yamlish/index.js", "cp.execSync('yaml')", true},  // bundle.js's parse('b') is yamlish's
		{"node_modules/plain/index.js", "cp.execSync('plain sync')", false},
		{"node_modules/lazy/index.js", "cp.execSync('lazy sync')", true},
	} {
		line, col := at(t, files, c.file, c.marker)
		if runs, why := g.Runs(t.Context(), c.file, line, col); runs != c.runs {
			t.Errorf("Runs(%s:%d:%d) = %v (%s), want %v", c.file, line, col, runs, why, c.runs)
		}
	}
}
