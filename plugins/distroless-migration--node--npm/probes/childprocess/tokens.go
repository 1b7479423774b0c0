package childprocess

import (
	"bytes"
	"errors"
	"io"
)

// MaxTokenScanBytes is the most of a file too large to parse that
// streamTokens reads. A file larger still stays unread (TooLarge).
const MaxTokenScanBytes = 512 << 20

// tokenScan is what streamTokens found in a file too large to parse.
type tokenScan struct {
	// mentions: the file names child_process between quotes.
	mentions bool
	// calls are the uses that always run a shell, each at its line:
	// execSync(, a bare exec( or one on a child_process receiver, and a
	// literal shell: true.
	calls []call
	// unclassified: a call that needs the parser to classify (spawn(,
	// execFile(, fork(…, or the module passed on) was seen.
	unclassified bool
	// truncated: the file is larger than the scan's limit.
	truncated bool
}

// token is one spelling streamTokens looks for.
type token struct {
	text     []byte
	function string
	// shell: the token runs a shell; otherwise only a parse classifies it.
	shell bool
	// receiver: for exec(, the preceding byte must not be '.' unless a
	// child_process receiver precedes it (RegExp.prototype.exec is
	// everywhere in bundles).
	receiver bool
}

var tokens = []token{
	{text: []byte("execSync("), function: "execSync", shell: true},
	{text: []byte("exec("), function: "exec", shell: true, receiver: true},
	{text: []byte("shell:true"), function: "spawn", shell: true},
	{text: []byte("shell: true"), function: "spawn", shell: true},
	{text: []byte("shell:!0"), function: "spawn", shell: true},
	{text: []byte("spawn("), function: "spawn"},
	{text: []byte("spawnSync("), function: "spawnSync"},
	{text: []byte("execFile("), function: "execFile"},
	{text: []byte("execFileSync("), function: "execFileSync"},
	{text: []byte("fork("), function: "fork"},
}

// childReceivers are the names a child_process module object usually has,
// as in cp.exec( (child_process_1 is TypeScript's emit).
var childReceivers = [][]byte{[]byte("cp"), []byte("child_process"), []byte("childProcess"), []byte("child_process_1"), []byte("childprocess")}

// maxTokenCalls bounds the calls one token-scanned file reports: a
// blocker needs one, and a bundle may hold millions.
const maxTokenCalls = 64

// tokenOverlap is how many bytes of one chunk the next one sees again: the
// longest token with its receiver and the quoted module name.
const tokenOverlap = 64

// streamTokens scans r in chunks, each overlapping the one before, for the
// spellings of child_process calls: the bounded, streaming stand-in for
// parsing a file over MaxParseBytes (a bundle of several megabytes is
// normal). It reads at most limit bytes. It is a token scan, not a parse:
// it finds the calls that always run a shell by name, and says when a call
// that only a parse classifies is present.
func streamTokens(r io.Reader, limit int64) (tokenScan, error) {
	var ts tokenScan
	buf := make([]byte, 256<<10)
	// buf[:keep] are bytes of the last chunk: buf[:from] were scanned
	// already and only give the next match its preceding bytes.
	keep, from, line := 0, 0, 1 // line: the line of buf[0]
	var read int64
	for {
		n, err := r.Read(buf[keep:])
		read += int64(n)
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			return ts, err
		}
		window := buf[:keep+n]
		// Matches that start in the last tokenOverlap bytes are left to
		// the next chunk, which sees them whole; at EOF none is left.
		end := len(window)
		if !eof {
			end = max(from, len(window)-tokenOverlap)
		}
		if !ts.mentions && loadsModule(window) {
			ts.mentions = true
		}
		ts.scanWindow(window, from, end, line)
		if eof {
			return ts, nil
		}
		if read >= limit {
			ts.truncated = true
			return ts, nil
		}
		lb := max(0, end-tokenOverlap) // the preceding bytes kept
		line += bytes.Count(window[:lb], []byte{'\n'})
		keep = copy(buf, window[lb:])
		from = end - lb
	}
}

// scanWindow records the tokens that start in window[from:end]. line is
// the line of window[0].
func (ts *tokenScan) scanWindow(window []byte, from, end, line int) {
	for _, tk := range tokens {
		for off := from; off < end; {
			i := bytes.Index(window[off:], tk.text)
			if i < 0 || off+i >= end {
				break
			}
			at := off + i
			off = at + len(tk.text)
			if at > 0 && isIdent(window[at-1]) {
				continue // execSync( inside myexecSync(, spawn( inside respawn(
			}
			if tk.receiver && at > 0 && window[at-1] == '.' && !childReceiver(window[:at-1]) {
				continue // re.exec(…)
			}
			if tk.text[len(tk.text)-1] == '(' && definition(window, off) {
				continue // exec(v, I, P) { … }: a method of that name
			}
			if !tk.shell {
				ts.unclassified = true
				continue
			}
			if len(ts.calls) >= maxTokenCalls {
				continue
			}
			ln := line + bytes.Count(window[:at], []byte{'\n'})
			col := at - bytes.LastIndexByte(window[:at], '\n')
			ts.calls = append(ts.calls, call{line: ln, column: col, function: tk.function, kind: KindShell})
		}
	}
}

// definition reports whether the argument list that opens just before
// window[off] is a function's parameters: its closing parenthesis, within
// a few hundred bytes, is followed by a body's brace. One that does not
// close in the window counts as a call.
func definition(window []byte, off int) bool {
	depth := 1
	for i := off; i < len(window) && i < off+512; i++ {
		switch window[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				rest := bytes.TrimLeft(window[i+1:], " \t\r\n")
				return len(rest) > 0 && rest[0] == '{'
			}
		case '"', '\'', '`':
			return false // a string argument: a call
		}
	}
	return false
}

// childReceiver reports whether before ends with a child_process module
// name that is not the tail of a longer identifier.
func childReceiver(before []byte) bool {
	for _, q := range []string{"'", "\"", "`"} {
		if bytes.HasSuffix(before, []byte("child_process"+q+")")) {
			return true // require('child_process').exec(
		}
	}
	for _, name := range childReceivers {
		if bytes.HasSuffix(before, name) {
			if k := len(before) - len(name); k == 0 || !isIdent(before[k-1]) {
				return true
			}
		}
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
