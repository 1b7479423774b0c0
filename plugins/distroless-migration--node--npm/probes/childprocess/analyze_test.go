package childprocess

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// c is a want entry: line, column, function, kind, command, binary.
func c(line, col int, fn string, kind Kind, command, binary string) call {
	return call{line: line, column: col, function: fn, kind: kind, command: command, binary: binary}
}

func scanString(t *testing.T, l language, src string) fileScan {
	t.Helper()
	sc := newScanner()
	defer sc.close()
	fs, err := sc.scan(t.Context(), l, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

var allowCall = cmp.AllowUnexported(call{}, position{})

// within is c in the body of the function called name.
func within(c call, name string) call {
	c.within = name
	return c
}

func TestScanForms(t *testing.T) {
	t.Parallel()
	const cpReq = "const cp = require('child_process');\n"
	tests := []struct {
		name string
		lang language
		src  string
		want []call
	}{
		{"require bound to a name", langJS, cpReq + "cp.exec('ls -l', cb);",
			[]call{c(2, 1, "exec", KindShell, "ls -l", "ls")}},
		{"compiled call without a this", langJS, cpReq + "(0, cp.execSync)('yarn --version');\n(cp.spawn, 0)('x');",
			[]call{c(2, 1, "execSync", KindShell, "yarn --version", "yarn")}},
		{"node: scheme, execSync", langJS, "const cp = require(\"node:child_process\");\nconst bits = cp.execSync(\"getconf LONG_BIT\");",
			[]call{c(2, 14, "execSync", KindShell, "getconf LONG_BIT", "getconf")}},
		{"destructured with rename", langJS, "const { exec, execSync: es } = require('child_process');\nexec('a b');\nes('FOO=1 make all');",
			[]call{c(2, 1, "exec", KindShell, "a b", "a"), c(3, 1, "execSync", KindShell, "FOO=1 make all", "make")}},
		{"destructured with default", langJS, "const { spawn = null } = require('child_process');\nspawn('git', ['status']);",
			[]call{c(2, 1, "spawn", KindBinary, "git", "git")}},
		{"require member call", langJS, "require('child_process').execSync('whoami');",
			[]call{c(1, 1, "execSync", KindShell, "whoami", "whoami")}},
		{"require member bound", langJS, "var exec = require('child_process').exec;\nexec('uname -a');",
			[]call{c(2, 1, "exec", KindShell, "uname -a", "uname")}},
		{"assignment", langJS, "let cp;\ncp = require('child_process');\ncp.spawnSync('tar', ['x']);",
			[]call{c(3, 1, "spawnSync", KindBinary, "tar", "tar")}},
		{"ESM default import", langJS, "import cp from 'child_process';\ncp.spawn('ffmpeg', ['-i', f]);",
			[]call{c(2, 1, "spawn", KindBinary, "ffmpeg", "ffmpeg")}},
		{"ESM namespace import", langJS, "import * as cp from 'node:child_process';\ncp.execFileSync('/bin/true');",
			[]call{c(2, 1, "execFileSync", KindBinary, "/bin/true", "/bin/true")}},
		{"ESM named import, template literal", langJS, "import { execSync } from 'node:child_process';\nexecSync(`git rev-parse HEAD`);",
			[]call{c(2, 1, "execSync", KindShell, "git rev-parse HEAD", "git")}},
		{"ESM named import with alias and callback", langJS, "import { execFile as ef } from 'child_process';\nef('git', ['log'], (err) => {});",
			[]call{c(2, 1, "execFile", KindBinary, "git", "git")}},
		{"dynamic import destructured", langJS, "const { exec } = await import('child_process');\nexec('id');",
			[]call{c(2, 1, "exec", KindShell, "id", "id")}},
		{"dynamic import bound, spawn of sh", langJS, "const cp = await import('node:child_process');\ncp.spawnSync('sh', ['-c', 'echo hi']);",
			[]call{c(2, 1, "spawnSync", KindShell, "sh", "sh")}},
		{"spawn of /bin/bash", langJS, cpReq + "cp.spawn('/bin/bash', ['script.sh']);",
			[]call{c(2, 1, "spawn", KindShell, "/bin/bash", "/bin/bash")}},
		{"shell: true", langJS, cpReq + "cp.spawn('git status', { shell: true });",
			[]call{c(2, 1, "spawn", KindShell, "git status", "git")}},
		{"shell: string", langJS, cpReq + "cp.execFile('ls', [], { 'shell': '/bin/bash' }, cb);",
			[]call{c(2, 1, "execFile", KindShell, "ls", "ls")}},
		{"shell: false", langJS, cpReq + "cp.spawn('git', [], { shell: false });",
			[]call{c(2, 1, "spawn", KindBinary, "git", "git")}},
		{"shell: empty string", langJS, cpReq + "cp.spawn('git', [], { shell: '' });",
			[]call{c(2, 1, "spawn", KindBinary, "git", "git")}},
		{"shell: non-literal", langJS, cpReq + "cp.spawn('git', [], { shell: useShell });",
			[]call{c(2, 1, "spawn", KindMaybeShell, "git", "git")}},
		{"options spread", langJS, cpReq + "cp.spawn('git', [], { cwd, ...opts });",
			[]call{c(2, 1, "spawn", KindMaybeShell, "git", "git")}},
		{"spread overridden", langJS, cpReq + "cp.spawn('git', [], { ...opts, shell: false });",
			[]call{c(2, 1, "spawn", KindBinary, "git", "git")}},
		{"options object without args", langJS, cpReq + "cp.spawnSync('make', { shell: true });",
			[]call{c(2, 1, "spawnSync", KindShell, "make", "make")}},
		{"options not a literal", langJS, cpReq + "cp.spawn('git', args, opts);",
			[]call{c(2, 1, "spawn", KindMaybeShell, "git", "git")}},
		{"args not a literal", langJS, cpReq + "cp.spawn('git', args);",
			[]call{c(2, 1, "spawn", KindBinary, "git", "git")}},
		{"execFile of /bin/true", langJS, cpReq + "cp.execFile('/bin/true');",
			[]call{c(2, 1, "execFile", KindBinary, "/bin/true", "/bin/true")}},
		{"fork", langJS, cpReq + "cp.fork('./worker.js', [], { shell: true });",
			[]call{c(2, 1, "fork", KindNode, "./worker.js", "")}},
		{"spawn of process.execPath", langJS, cpReq + "cp.spawn(process.execPath, ['x.js']);",
			[]call{c(2, 1, "spawn", KindNode, "", "")}},
		{"dynamic command", langJS, cpReq + "cp.spawn(cmd, args);\ncp.exec(line);",
			[]call{c(2, 1, "spawn", KindDynamic, "", ""), c(3, 1, "exec", KindShell, "", "")}},
		{"template with substitution", langJS, cpReq + "cp.execSync(`git log ${ref}`);\ncp.exec('ffmpeg ' + args);\ncp.exec(`${tool} -v`);",
			[]call{c(2, 1, "execSync", KindShell, "", "git"), c(3, 1, "exec", KindShell, "", "ffmpeg"), c(4, 1, "exec", KindShell, "", "")}},
		{"subscript", langJS, cpReq + "cp['execSync']('id');\ncp[name]('x');",
			[]call{c(2, 1, "execSync", KindShell, "id", "id"), c(3, 1, FunctionModule, KindDynamic, "", "")}},
		{"promisify", langJS, "const util = require('util');\nconst cp = require('child_process');\nconst execP = util.promisify(cp.exec);\nawait execP('git pull');",
			[]call{c(4, 7, "exec", KindShell, "git pull", "git")}},
		{"promisify of require member", langJS, "const run = promisify(require('child_process').execFile);\nrun('git', ['tag']);",
			[]call{c(2, 1, "execFile", KindBinary, "git", "git")}},
		{"compiled promisify", langJS, "const _util = require('util');\nconst _cp = require('child_process');\nconst run = (0, _util.promisify)(_cp.execFile);\nrun('git', ['tag']);",
			[]call{c(4, 1, "execFile", KindBinary, "git", "git")}},
		// ncc's and webpack's module tables (bundle.go): the id's
		// require is child_process's, and its names hold in the module
		// function that binds them (s is another variable in module 5).
		{"ncc bundle", langJS, "(()=>{var e={421:e=>{\"use strict\";e.exports=require(\"node:child_process\")},\n" +
			"47:(e,t,i)=>{const s=i(421);function run(a){return s.spawn(a,[],{stdio:\"inherit\"})}e.exports=run;\n" +
			"class C{m(e,t,s){s=s||{};return s}n(){let s=t;try{}catch(s){f(s)}for(const s of t)f(s);return [s]}}},\n" +
			"5:(e,t,i)=>{const s=i(47);s(\"x\");e.exports=[s]}};\n" +
			"function __nccwpck_require__(t){var i=e[t];return i}(()=>{var i=__nccwpck_require__(421);i.execSync(\"id\")})()})();",
			[]call{{line: 2, column: 52, function: "spawn", kind: KindDynamic, within: "run"}, c(5, 90, "execSync", KindShell, "id", "id")}},
		{"webpack bundle, string ids", langJS, "var m={\"child_process\":function(module){module.exports=require(\"child_process\")},\n" +
			"\"./a.js\":function(module,exports,__webpack_require__){var cp=__webpack_require__(/*! child_process */ \"child_process\");cp.exec(\"ls\")}};",
			[]call{c(2, 120, "exec", KindShell, "ls", "ls")}},
		{"bundle id required some other way", langJS, "var e={421:e=>{e.exports=require(\"child_process\")},\n" +
			"47:(e,t,i)=>{const s=load(421);s.exec(x)}};",
			[]call{c(1, 26, FunctionModule, KindDynamic, "", "")}},
		{"function escapes", langJS, "const { exec, fork } = require('child_process');\nmodule.exports = { exec, run: fork };",
			[]call{c(2, 20, "exec", KindShell, "", ""), c(2, 31, "fork", KindNode, "", "")}},
		{"module escapes", langJS, cpReq + "module.exports = cp;\nuse(require('child_process'));",
			[]call{c(2, 18, FunctionModule, KindDynamic, "", ""), c(3, 5, FunctionModule, KindDynamic, "", "")}},
		{"re-exports", langJS, "export { execSync } from 'child_process';\nexport * from 'node:child_process';",
			[]call{c(1, 10, "execSync", KindShell, "", ""), c(2, 1, FunctionModule, KindDynamic, "", "")}},
		{"comments and strings", langJS, "// require('child_process').exec('rm -rf /')\n" +
			"const s = \"require('child_process')\";\n/* cp.exec('x') child_process */\nconst t = `child_process`;\nlog('child_process');",
			nil},
		{"same names from another module", langJS, "const { exec } = require('shelljs');\nexec('ls');\n" + cpReq + "db.exec('select 1');",
			nil},
		{"typeof and shadowing parameter", langJS, "const { exec } = require('child_process');\nif (typeof exec === 'function') {}\nfunction f(exec) { return 1 }",
			nil},
		{"module members that start nothing", langJS, cpReq + "const { ChildProcess } = cp;\nconsole.log(cp.constants);",
			nil},
		{"require of a computed name", langJS, "const cp = require('child' + '_process');\ncp.exec('x');",
			nil},
		{"column counts code points", langJS, cpReq + "const é = 'ü'; cp.exec('x');",
			[]call{c(2, 16, "exec", KindShell, "x", "x")}},
		{"TypeScript type imports", langTS, "import type { ExecOptions } from 'child_process';\n" +
			"import { type SpawnOptions, execSync } from 'node:child_process';\n" +
			"const opts: ExecOptions = {};\nconst out: string = execSync('uname -a', { encoding: 'utf8' }) as string;",
			[]call{c(4, 21, "execSync", KindShell, "uname -a", "uname")}},
		{"TypeScript import require and non-null", langTS, "import cp = require('child_process');\ncp.spawn!('git', ['fetch']);",
			[]call{c(2, 1, "spawn", KindBinary, "git", "git")}},
		{"TypeScript import type only", langTS, "import type * as cp from 'child_process';\nimport type { exec } from 'child_process';\nexport type { ChildProcess } from 'child_process';",
			nil},
		{"TSX", langTSX, "import { exec } from 'child_process';\nexport const C = () => <div onClick={() => exec('open x')}>hi</div>;",
			[]call{within(c(2, 44, "exec", KindShell, "open x", "open"), "C")}},
		{"JSX in .js", langJS, "import { execSync } from 'child_process';\nconst el = <b>{execSync('date').toString()}</b>;",
			[]call{c(2, 16, "execSync", KindShell, "date", "date")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := scanString(t, tt.lang, tt.src)
			if diff := cmp.Diff(tt.want, got.calls, allowCall); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if got.syntaxErr != nil {
				t.Errorf("syntax error at %+v in valid input", *got.syntaxErr)
			}
		})
	}
}

func TestScanSyntaxError(t *testing.T) {
	t.Parallel()
	got := scanString(t, langJS, "const cp = require('child_process');\ncp.exec('ls');\nfunction (( {\n")
	want := fileScan{
		calls:     []call{c(2, 1, "exec", KindShell, "ls", "ls")},
		syntaxErr: &position{line: 3, column: 1},
	}
	if diff := cmp.Diff(want, got, allowCall, cmp.AllowUnexported(fileScan{})); diff != "" {
		t.Errorf("scan (-want +got):\n%s", diff)
	}
}

func TestScanCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	sc := newScanner()
	defer sc.close()
	src := []byte(strings.Repeat("const cp = require('child_process'); cp.exec('x');\n", 20000))
	if _, err := sc.scan(ctx, langJS, src); err == nil {
		t.Fatal("scan with a cancelled context succeeded")
	}
	// The parser is usable again afterwards.
	fs, err := sc.scan(t.Context(), langJS, []byte("require('child_process').exec('x')"))
	if err != nil || len(fs.calls) != 1 {
		t.Fatalf("scan after cancel: %v, %d calls", err, len(fs.calls))
	}
}

func TestFirstWord(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"git status ":          "git",
		"  ls":                 "",
		"ls -l ":               "ls",
		"A=1 B=2 node x ":      "node",
		"FOO=1":                "",
		"cd /app && make ":     "cd",
		`"git" log `:           "git",
		"./bin/tool;":          "./bin/tool",
		"(cd x; make) ":        "",
		"getconf LONG_BIT ":    "getconf",
		"echo $(id) > out.txt": "echo",
	}
	for in, want := range tests {
		if got := firstWord(in); got != want {
			t.Errorf("firstWord(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnescape(t *testing.T) {
	t.Parallel()
	src := `const cp = require('child_process'); cp.exec('a\tb\x41\u0042\u{1F600}\'\\\q');`
	got := scanString(t, langJS, src)
	if len(got.calls) != 1 || got.calls[0].command != "a\tbAB😀'\\q" {
		t.Errorf("calls = %+v, want one exec with the decoded command", got.calls)
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{
		"const cp = require('child_process'); cp.exec('ls');",
		"import { execSync as e } from 'node:child_process'; e(`x ${y}`);",
		"const { spawn, ...rest } = await import('child_process'); spawn('git', a, { shell: s, ...o });",
		"import cp = require('child_process'); cp.spawn!(process.execPath);",
		"export * from 'child_process'; export { fork as default } from 'child_process';",
		"require('child_process')[x](",
		"child_process \xff\xfe 'child_process' `child_process",
		"const e = promisify(promisify(require('child_process').exec)); e(e)(e);",
	} {
		for l := range 3 {
			f.Add([]byte(s), uint8(l))
		}
	}
	f.Fuzz(func(t *testing.T, src []byte, l uint8) {
		sc := newScanner()
		defer sc.close()
		fs, err := sc.scan(context.Background(), language(l%3)+langJS, src)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(string(src), "\n") + 1
		for _, c := range fs.calls {
			if c.line < 1 || c.line > lines || c.column < 1 || c.function == "" || c.kind == "" {
				t.Fatalf("bad call %+v for %d lines", c, lines)
			}
		}
		if p := fs.syntaxErr; p != nil && (p.line < 1 || p.line > lines || p.column < 1) {
			t.Fatalf("syntax error at %+v outside %d lines", *p, lines)
		}
	})
}

// TestScanCommandWrapper: a function of the file that hands its parameter
// to spawn as the command is judged at each call with the literal the
// caller passes; a caller with a variable, an exported wrapper, one passed
// as a value, or a parameter given another value keeps the call dynamic.
func TestScanCommandWrapper(t *testing.T) {
	t.Parallel()
	const head = "import { spawn } from 'child_process';\nfunction run(command, args, prefix) {\n  const p = spawn(command, args);\n  return p;\n}\n"
	tests := []struct {
		name, tail string
		want       []call
	}{
		{"literal callers", "run('caddy', ['run'], 'Caddy');\nrun('sh', ['-c', x], 'Shell');\n",
			[]call{c(6, 5, "spawn", KindBinary, "caddy", "caddy"), c(7, 5, "spawn", KindShell, "sh", "sh")}},
		{"a variable caller", "run('caddy', [], 'a');\nrun(bin, [], 'b');\n",
			[]call{within(c(3, 13, "spawn", KindDynamic, "", ""), "run")}},
		{"exported", "run('caddy', [], 'a');\nexport { run };\n",
			[]call{within(c(3, 13, "spawn", KindDynamic, "", ""), "run")}},
		{"passed as a value", "run('caddy', [], 'a');\nqueue.push(run);\n",
			[]call{within(c(3, 13, "spawn", KindDynamic, "", ""), "run")}},
		{"no caller", "\n",
			[]call{within(c(3, 13, "spawn", KindDynamic, "", ""), "run")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := scanString(t, langJS, head+tt.tail).calls
			if diff := cmp.Diff(tt.want, got, allowCall); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
	reassigned := "const { spawn } = require('child_process');\nconst run = (command) => {\n  command = command || process.env.SHELL;\n  return spawn(command);\n};\nrun('caddy');\n"
	if got := scanString(t, langJS, reassigned).calls; len(got) != 1 || got[0].kind != KindDynamic {
		t.Errorf("a parameter given another value: calls %+v, want one dynamic call", got)
	}
}
