package shellcmd

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// shWords is what /bin/sh makes of words: the arguments printf receives.
// ok is false when sh rejects the line.
func shWords(t *testing.T, words string) ([]string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `printf '%s\0' start `+words)
	cmd.Dir = t.TempDir() // globs match nothing
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, false
	}
	got := strings.Split(out.String(), "\x00")
	return got[1 : len(got)-1], true
}

// checkWords compares the argv Analyze gives for "printf %s WORDS" with
// the one /bin/sh gives, whenever Analyze says the line needs no shell.
func checkWords(t *testing.T, words string) {
	t.Helper()
	a := Analyze(`printf '%s\0' start ` + words)
	if a.NeedsShell {
		return
	}
	want, ok := shWords(t, words)
	if !ok {
		t.Errorf("Analyze(%q) = %q, but sh rejects the line", words, a.Argv[3:])
		return
	}
	if diff := cmp.Diff(want, a.Argv[3:]); diff != "" {
		t.Errorf("words %q (-sh +Analyze):\n%s", words, diff)
	}
	// An entrypoint script's words are read the same way.
	s := AnalyzeScript("exec printf '%s\\0' start " + words)
	if s.DefaultsOnly {
		if diff := cmp.Diff(want, s.Exec[3:]); diff != "" {
			t.Errorf("script words %q (-sh +AnalyzeScript):\n%s", words, diff)
		}
	}
}

func needSh(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("/bin/sh"); err != nil {
		t.Skip("no /bin/sh on this host to compare with")
	}
}

// TestWordsMatchSh: each word reads as sh reads it. A backslash in double
// quotes escapes only $ ` " \ and newline.
func TestWordsMatchSh(t *testing.T) {
	t.Parallel()
	needSh(t)
	for _, words := range []string{
		`"a\"b"`, `"a\\b"`, `"a\b"`, `"a\$b"`, "\"a\\`b\"", `"\x" '\x' \x`, "\"a\\\nb\"", "a\\\nb",
		`a\ b "c d" 'e f'`, `'a\'`, `\\ \' \"`, `"it's"`, `''`, `""`, `"a"'b'c`, `a#b #c`, `"\\\\"`,
		`--header="X-A: \"1\""`, `\#x`, `"\\$"`, `"a\	b"`,
	} {
		checkWords(t, words)
	}
}

// TestWordsMatchShRandom compares random lines of quotes, backslashes
// and plain characters with sh.
func TestWordsMatchShRandom(t *testing.T) {
	t.Parallel()
	needSh(t)
	n := 400
	if testing.Short() {
		n = 50
	}
	r := rand.New(rand.NewPCG(7, 22))
	pieces := []string{"a", "b", `\`, `"`, `'`, " ", "\n", "\t", "$", "`", "#", "-", "=", "x"}
	for range n {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		checkWords(t, b.String())
	}
}

// FuzzWordsMatchSh is TestWordsMatchSh with the fuzzer's lines.
func FuzzWordsMatchSh(f *testing.F) {
	for _, s := range []string{`"a\"b"`, `a\ b`, `'x'"y"`, "\"a\\\nb\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, words string) {
		if _, err := exec.LookPath("/bin/sh"); err != nil {
			t.Skip("no /bin/sh")
		}
		if strings.ContainsRune(words, 0) {
			return // sh -c cannot take a NUL
		}
		checkWords(t, words)
	})
}
