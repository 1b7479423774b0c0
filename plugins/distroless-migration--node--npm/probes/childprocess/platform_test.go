package childprocess

import "testing"

// TestPlatformGuards: a call that a process.platform test for another
// system guards never runs on Linux; any other condition leaves it be.
func TestPlatformGuards(t *testing.T) {
	t.Parallel()
	const head = "const cp = require('child_process'); const os = require('os');\n"
	tests := []struct {
		name, src, want string
	}{
		{"if ===", "if (process.platform === 'darwin') { cp.execFileSync('sw_vers'); }", "darwin"},
		{"reversed, ==", "if ('win32' == process.platform) cp.exec('ver');", "win32"},
		{"os.platform()", "if (os.platform() === 'win32') { cp.execSync('ver'); }", "win32"},
		{"a conjunct", "if (process.platform === 'win32' && opts.ver) { cp.execSync('ver'); }", "win32"},
		{"else of !==", "if (process.platform !== 'win32') { x(); } else { cp.execSync('ver'); }", "win32"},
		{"else of === linux", "if (process.platform === 'linux') { x(); } else { cp.execSync('sw_vers'); }", "a system other than linux"},
		{"!== linux", "if (process.platform !== 'linux') { cp.execSync('sw_vers'); }", "a system other than linux"},
		{"ternary", "const v = process.platform === 'darwin' ? cp.execSync('sw_vers') : os.release();", "darwin"},
		{"ternary else: runs on Linux", "const v = process.platform === 'darwin' ? os.release() : cp.execSync('uname -r');", ""},
		{"&& short circuit", "process.platform === 'win32' && cp.exec('ver');", "win32"},
		{"nested in a function", "if (process.platform === 'win32') { run(() => { cp.exec('ver'); }); }", "win32"},
		{"else-if chain", "if (a) { x(); } else if (process.platform === 'darwin') { cp.execSync('sw_vers'); }", "darwin"},
		{"then of !==: runs on Linux", "if (process.platform !== 'win32') { cp.execSync('uname'); }", ""},
		{"an || condition", "if (process.platform === 'win32' || force) { cp.execSync('ver'); }", ""},
		{"linux", "if (process.platform === 'linux') { cp.execSync('uname'); }", ""},
		{"a variable", "if (platform === 'win32') { cp.execSync('ver'); }", ""},
		{"the condition's right of &&", "if (process.platform === 'win32' && cp.execSync('x')) { y(); }", "win32"},
		{"the condition's left of &&", "if (cp.execSync('x') && process.platform === 'win32') { y(); }", ""},
		{"no guard", "cp.execSync('uname');", ""},
		{"after an early throw", "async function id() {\n  if (process.platform !== 'darwin') {\n    throw new Error('macOS only');\n  }\n  return cp.execFileSync('defaults', ['read']);\n}", "darwin"},
		{"after an early return", "function v() { if (process.platform !== 'win32') return null; return cp.execSync('ver'); }", "win32"},
		{"at the top level after an exit", "if (process.platform === 'linux') { process.exitCode = 1; throw new Error('x'); }\ncp.execSync('sw_vers');", "a system other than linux"},
		{"an early exit that may fall through", "function v() { if (process.platform !== 'darwin') { log('x'); } return cp.execSync('sw_vers'); }", ""},
		{"an early exit with an else", "function v() { if (process.platform !== 'darwin') { return 1; } else { y(); } return cp.execSync('sw_vers'); }", ""},
		{"an early exit on Linux's own test", "function v() { if (process.platform === 'win32') { return 1; } return cp.execSync('uname'); }", ""},
		{"a switch case", "switch (process.platform) {\n  case 'darwin':\n    cp.execSync('sw_vers');\n    break;\n  case 'linux':\n    x();\n}", "darwin"},
		{"grouped cases", "switch (os.platform()) { case 'freebsd': case 'openbsd': return cp.execSync('kenv'); default: x(); }", "openbsd"},
		{"the linux case", "switch (process.platform) { case 'darwin': y(); break; case 'linux': cp.execSync('uname'); break; }", ""},
		{"a case linux falls into", "switch (process.platform) { case 'linux': y(); case 'darwin': cp.execSync('sw_vers'); break; }", ""},
		{"a case after one that returns", "switch (process.platform) { case 'linux': return y(); case 'win32': cp.execSync('ver'); }", "win32"},
		{"a default", "switch (process.platform) { case 'darwin': break; default: cp.execSync('uname'); }", ""},
		{"a switch on something else", "switch (mode) { case 'darwin': cp.execSync('sw_vers'); }", ""},
		{"an exit after the call", "function v() { cp.execSync('uname'); if (process.platform !== 'darwin') { return 1; } }", ""},
		// A function of the file that only calls kept to another system
		// call runs there only (@prisma/streams-local's readDarwinTopMemBytes).
		{"a function its callers keep to darwin", "function top(pid) { return cp.execFileSync('/usr/bin/top', ['-l', pid]); }\nclass G { mem() { if (process.platform !== 'darwin') return 0; return top(process.pid); } }\nif (process.platform === 'darwin') top(1);", "darwin"},
		{"a function one caller runs on Linux", "function top(pid) { return cp.execFileSync('/usr/bin/top', ['-l', pid]); }\nif (process.platform === 'darwin') top(1);\ntop(2);", ""},
		{"a function passed as a value", "function top(pid) { return cp.execFileSync('/usr/bin/top', ['-l', pid]); }\nif (process.platform === 'darwin') top(1);\nsetTimeout(top, 1);", ""},
		{"an exported function", "export function top(pid) { return cp.execFileSync('/usr/bin/top', ['-l', pid]); }\nif (process.platform === 'darwin') top(1);", ""},
		{"a function nothing calls", "function top(pid) { return cp.execFileSync('/usr/bin/top', ['-l', pid]); }", ""},
		{"callers kept to two systems", "function top(pid) { return cp.execFileSync('top', [pid]); }\nif (process.platform === 'darwin') top(1);\nif (process.platform === 'win32') top(2);", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := scanString(t, langJS, head+tt.src)
			if len(fs.calls) != 1 {
				t.Fatalf("%d calls in %q, want 1", len(fs.calls), tt.src)
			}
			if got := fs.calls[0].platform; got != tt.want {
				t.Errorf("platform %q, want %q", got, tt.want)
			}
		})
	}
}
