// Package failtail picks the lines of a failed step's or boot's output
// that say why it failed. The last lines alone are often noise: npm ends
// every error with its usage text, its update notice and the path of its
// log, and node ends a crash with the stack's frames and its version, so
// the line that names the cause ("Missing: x@1 from lock file", "Error:
// Dialect needs to be explicitly supplied") falls outside them.
package failtail

import (
	"regexp"
	"strings"
)

var noise = []*regexp.Regexp{
	regexp.MustCompile(`^\s*$`),
	regexp.MustCompile(`^\s+at .+`),             // a stack frame
	regexp.MustCompile(`^Node\.js v\d`),         // node's version after a crash
	regexp.MustCompile(`^\s*\^+\s*$`),           // the caret under the throwing line
	regexp.MustCompile(`^npm notice\b`),         // update notices
	regexp.MustCompile(`^npm (error|ERR!)\s*$`), // npm's blank error lines
	regexp.MustCompile(`^npm (error|ERR!) A complete log of this run can be found in`),
	regexp.MustCompile(`^npm warn\b`),
	// buildah's warning for an ARG with no default and no --build-arg
	// (node-red's TAG_SUFFIX), printed before any step: rarely the cause.
	regexp.MustCompile(`^time="[^"]*" level=warning msg="missing \\".*\\" build argument`),
	// npm's usage text, which a bounded tail may hold without its
	// "Usage:" line.
	regexp.MustCompile(`^npm (error|ERR!) (\[-|Options:\s*$|aliases: |Run "npm help )`),
}

var (
	usageStart = regexp.MustCompile(`^npm (error|ERR!) Usage:\s*$`)
	usageEnd   = regexp.MustCompile(`^npm (error|ERR!) Run "npm help `)
)

// Lines returns up to n lines of out that say why it failed, joined by
// " | ": the last n once npm's usage text and notices, stack frames and
// blank lines are left out. When nothing is left it returns the last n
// lines as they are.
func Lines(out string, n int) string {
	all := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var kept []string
	inUsage := false
	for i, l := range all {
		switch {
		case inUsage:
			if usageEnd.MatchString(l) {
				inUsage = false
			}
			continue
		case usageStart.MatchString(l):
			inUsage = true
			// npm prints the command's one-line description just before
			// its usage, blank error lines apart.
			if k := len(kept) - 1; k >= 0 && kept[k] == lastReal(all[:i]) && strings.HasPrefix(kept[k], "npm ") && !strings.Contains(kept[k], " code ") {
				kept = kept[:k]
			}
			continue
		}
		if isNoise(l) {
			continue
		}
		kept = append(kept, l)
	}
	if len(kept) == 0 {
		kept = all
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, " | ")
}

// lastReal is the last line of lines that is not noise.
func lastReal(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if !isNoise(lines[i]) {
			return lines[i]
		}
	}
	return ""
}

func isNoise(l string) bool {
	for _, re := range noise {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}
