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
