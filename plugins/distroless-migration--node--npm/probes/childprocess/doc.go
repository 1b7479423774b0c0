// Package childprocess is the child_process probe. It finds the places where
// a Node.js service starts other programs through the child_process module,
// in the application's own JavaScript and TypeScript and in its production
// dependencies under node_modules, and says for each whether the call needs
// /bin/sh (which a distroless image lacks), another binary (also missing),
// only node, or cannot be decided statically. It reads files only; it runs
// nothing and does not decide the verdict (gather does).
//
// # Parser
//
// Files are parsed with tree-sitter (github.com/smacker/go-tree-sitter),
// using the javascript grammar for .js, .cjs, .mjs and .jsx and the
// typescript and tsx grammars for TypeScript, because a regular expression
// cannot tell a call from the same text in a comment or a string. The
// alternatives were rejected: goja's parser rejects ESM import statements,
// which real services use; esbuild exposes no syntax tree through its API;
// and tree-sitter is error tolerant (a file with a syntax error still yields
// the calls around the error) and covers TypeScript and JSX. The cost is
// cgo.
//
// # What is recognised
//
// A binding of the module is require('child_process') or
// require('node:child_process') assigned to a name or destructured (with
// renames and defaults), an ESM default, namespace or named import (type-only
// TypeScript imports are ignored), TypeScript's import cp = require(...), an
// awaited dynamic import, and util.promisify of one of its functions. Calls
// through a binding (cp.exec(...), exec(...), cp['spawn'](...)) are findings;
// a function of the module that escapes uncalled (passed as an argument,
// exported, stored) is a finding without a command, and the module object
// itself escaping is a dynamic finding with function "module". Bindings are
// matched by name within a file, without scope analysis: a local variable
// that shadows a binding is treated as the binding. The exception is a
// bundle's module table (ncc, webpack: bundle.go): a module whose body is
// e.exports = require('child_process') is the module wherever the bundle's
// require is called with its id, and the names such a call binds hold in
// the function around it, less where a parameter or a declaration shadows
// them, since minified code reuses every short name.
//
// Each finding has a Kind. exec and execSync always run /bin/sh: shell.
// spawn, spawnSync, execFile and execFileSync run a shell when their options
// object literal sets shell to true or a non-empty string (shell). They may
// run one (maybe_shell) when shell is not a literal, when the options object
// spreads another object without setting shell after it, or when the third
// argument (where options go once an argument list is given) is an
// expression such as a variable: a variable in the second position is taken
// to be the argument list. Otherwise a literal command whose basename is a
// shell (sh, bash, dash, ash, zsh, ksh, mksh, yash) is shell, any other
// literal is binary (a program distroless does not have, such as git or
// getconf), and a command that is not a literal is dynamic, except
// process.execPath, which is node. fork always runs node: Node forces shell
// to false for it.
//
// Production dependencies are the root package.json's dependencies and
// optionalDependencies, then each installed package's dependencies,
// optionalDependencies and peerDependencies, resolved as Node's require
// does. Workspace packages are scanned as application code, but only the
// root package.json's dependencies are followed. Wrapper libraries (execa,
// shelljs) are seen only through their own child_process calls, which are
// usually dynamic or maybe_shell: a call of the wrapper in the
// application is not a finding. The exceptions are a package that exports
// child_process's own functions under their names with the same arguments
// (promisify-child-process, child-process-promise: moduleSpecs), whose
// import is read as the module's, and cross-spawn, whose export is spawn
// itself (with spawn and sync, spawnSync, as properties) and which on
// Linux passes its arguments and options to child_process unchanged: the
// app's calls of them are findings too.
//
// # Cost
//
// The probe is light and must stay within the light phase's budget on
// repositories of tens of thousands of files. It uses the repository's one
// shared listing (probe.Repo.Files), reads candidate files in parallel with
// GOMAXPROCS workers using plain system calls (os.File registers each file
// with the runtime poller, several extra system calls per open), and parses
// only files whose bytes hold one of moduleSpecs ('child_process', 'node:child_process', …)
// between matching quotes, the only spellings the analysis recognises, so
// the prefilter loses nothing: every other file costs an open, a stat, a
// read and a byte search. Parsing dominates what remains (about a
// millisecond per few kilobytes on a shared 2-core machine). Each worker
// reuses its parsers. Files over MaxParseBytes are searched but not parsed;
// one that names the module is reported as too large and lowers the
// confidence. Minified bundles under that size are parsed like any other
// file. In dependencies only .js, .cjs and .mjs files are read (what Node
// loads); extensionless bin scripts are not.
//
// # Caching
//
// The output depends on every application source file, package.json, and
// every package.json and JavaScript file under node_modules, so those are
// the declared inputs. That is honest but not free: a warm lookup hashes
// every matched file, which on a 50,000-file repository costs more than a
// cold run (the pipeline hashes them one at a time), so the cache saves
// nothing there. Narrower inputs (only the production packages) cannot be
// expressed as static globs, and a key built here from sizes and
// modification times would make a warm hit able to be wrong; the fix
// belongs in the pipeline (parallel hashing, or a stat-keyed digest memo as
// git's index keeps). Directory symlinks cannot be hashed by the pipeline,
// so an output that followed any symlink (pnpm layouts, workspace links) is
// marked uncacheable.
package childprocess
