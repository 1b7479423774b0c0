package httpcheck

import (
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// A health check line may pipe the tool's output into grep:
//
//	wget -qO- http://localhost:3000/_health | grep -q OK || exit 1
//
// sh has no pipefail, so the line's status is grep's: it passes when a
// line of what the tool printed matches, whatever the tool's own status.
// A generated check carries that when it knows what the tool prints: the
// body of the final answer (when the tool prints it at all), or curl's
// status code (-o /dev/null -w '%{http_code}').

// Filter is the grep a check's output is piped into.
type Filter struct {
	// Reads is what the tool prints for grep to read: ReadsBody or
	// ReadsStatus.
	Reads string `json:"reads"`
	// BodyOnError is set when curl prints the body of an answer it fails
	// on (--fail-with-body): with -f it otherwise prints nothing then.
	BodyOnError bool `json:"body_on_error,omitempty"`
	// Regexp matches a line, in the syntax Go's regexp and JavaScript's
	// RegExp read alike; IgnoreCase is grep -i.
	Regexp     string `json:"regexp"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	// Command is the grep as written, for messages.
	Command string `json:"command"`
}

// What a Filter reads.
const (
	ReadsBody   = "body"
	ReadsStatus = "status"
)

// output is what a tool prints on standard output, as its options say.
type output struct {
	bodyGone    bool    // -o /dev/null, wget -O /dev/null or --spider
	bodyOnError bool    // curl --fail-with-body
	writeOut    *string // curl -w
	other       bool    // headers (-i, -I, -D -) or more
}

// statusFormats are the curl -w formats that print the status code alone.
var statusFormats = map[string]bool{"%{http_code}": true, "%{response_code}": true}

// Pipe records that the check's output is piped into a grep with regexp
// (IgnoreCase for -i); command is the grep as written. It refuses, with
// an UnsupportedError, output a generated check would not reproduce:
// headers, a -w format other than the status code, nothing at all, several
// URLs' output run together, or retries whose earlier answers are printed
// too.
func (c *Check) Pipe(regexp string, ignoreCase bool, command string) error {
	tool := c.Tool
	if tool == BusyboxWget {
		tool = Wget
	}
	f := &Filter{Regexp: regexp, IgnoreCase: ignoreCase, Command: command, BodyOnError: c.out.bodyOnError}
	body := !c.out.bodyGone
	status := false
	if w := c.out.writeOut; w != nil {
		format := strings.TrimSuffix(strings.TrimSuffix(*w, `\n`), "\n")
		if !statusFormats[format] {
			return &UnsupportedError{tool, "-w " + *w, "it prints a format other than the status code for grep to read"}
		}
		status = true
	}
	switch {
	case c.out.other:
		return &UnsupportedError{tool, "| " + command, "the tool prints headers for grep to read, not only the body"}
	case body && status:
		return &UnsupportedError{tool, "| " + command, "grep reads the body and the status code run together"}
	case status:
		f.Reads = ReadsStatus
	case body:
		f.Reads = ReadsBody
	default:
		return &UnsupportedError{tool, "| " + command, "the tool prints nothing for grep to read, so the line always fails"}
	}
	if len(c.URLs) > 1 {
		return &UnsupportedError{tool, "| " + command, "grep reads several URLs' output run together"}
	}
	// GNU Wget prints the body of the answer that passes only; curl
	// prints each answer it retries.
	if c.Tool == Curl && c.Retry.Count > 0 {
		return &UnsupportedError{tool, "--retry | " + command, "grep reads the output of the retried answers too"}
	}
	c.Filter = f
	return nil
}

// URLFromEnv is a URL the check line builds from the environment
// (http://localhost:${PORT:-3000}/_health): Docker runs the check with the
// container's environment, so a generated check builds it again from its
// own, with the same defaults. Index is its place in URLs, which holds it
// as the image's ENV resolves it.
type URLFromEnv struct {
	Index int                `json:"index"`
	Parts []shellcmd.EnvPart `json:"parts"`
}

// FromEnv records that the command-line word resolved (as the image's ENV
// resolves it) is built from the environment as parts say. Only a URL may
// be: a header, a body or an option built from the environment is refused,
// and so are credentials in such a URL.
func (c *Check) FromEnv(resolved string, parts []shellcmd.EnvPart) error {
	other := &UnsupportedError{c.Tool, resolved, "a word other than the URL is built from the environment"}
	u, auth, err := absURL(c.Tool, resolved)
	if err != nil {
		return other
	}
	if auth != nil {
		return &UnsupportedError{c.Tool, "URL " + resolved, "credentials in a URL built from the environment"}
	}
	for k, have := range c.URLs {
		if have == u {
			c.URLsFromEnv = append(c.URLsFromEnv, URLFromEnv{Index: k, Parts: parts})
			return nil
		}
	}
	return other
}
