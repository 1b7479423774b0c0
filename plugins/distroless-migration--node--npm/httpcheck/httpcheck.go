// Package httpcheck reads a curl or wget health check's command line into
// what it checks: the requests it makes (URLs, method, headers, body,
// credentials, TLS verification, where it connects) and the rule by which
// its exit status follows from the answers (which statuses fail, which
// redirects it follows, its timeouts and retries), so that a generated
// Node script can check the same thing. An option it cannot carry is
// refused with an UnsupportedError that names it, never dropped. The
// package only parses; it runs nothing.
package httpcheck

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Tools, as Check.Tool names them. GNU Wget and BusyBox's wget differ in
// which statuses succeed and in what --spider sends.
const (
	Curl        = "curl"
	Wget        = "wget"
	BusyboxWget = "busybox-wget"
)

// Check is what a curl or wget health check checks. Every option applies
// to each URL.
type Check struct {
	// Tool is Curl, Wget or BusyboxWget; it decides which statuses
	// succeed: curl any answer (below 400 with FailOnError), GNU Wget a
	// 2xx, BusyBox a 200 to 204 or an unfollowed 300-303, 307 or 308.
	Tool string `json:"tool"`
	// URLs are requested in order; each is absolute (http or https).
	URLs []string `json:"urls"`
	// Method is the request method.
	Method string `json:"method"`
	// Headers are the tool's defaults and then the command line's, in
	// order; a header replaces an earlier one of the same name, and one
	// with Remove set removes it.
	Headers []Header `json:"headers,omitempty"`
	// Body is the request body, if any, and ContentType the type the
	// tool gives it unless a header sets one. A redirect that turns the
	// request into a GET drops both.
	Body        *string `json:"body,omitempty"`
	ContentType string  `json:"content_type,omitempty"`
	// Auth is HTTP Basic authentication.
	Auth *Auth `json:"auth,omitempty"`
	// Insecure skips TLS certificate verification (curl -k, wget
	// --no-check-certificate); CAFile replaces the trusted CAs.
	Insecure bool   `json:"insecure,omitempty"`
	CAFile   string `json:"ca_file,omitempty"`
	// UnixSocket connects to a Unix socket instead of the URL's host.
	UnixSocket string `json:"unix_socket,omitempty"`
	// Resolve pins host:port to addresses (curl --resolve).
	Resolve []Resolve `json:"resolve,omitempty"`
	// Family is 4 or 6 to use only that IP version, 0 for either.
	Family int `json:"family,omitempty"`
	// FailOnError makes curl fail on a status of 400 or more (-f).
	FailOnError bool `json:"fail_on_error,omitempty"`
	// Follow follows redirects, at most MaxRedirects of them (-1: no
	// limit). KeepMethod keeps the method and body on a redirect (curl
	// -X); otherwise a POST becomes a GET after 301, 302 and 303, and any
	// method but HEAD after 303. TrustedAuth sends credentials to another
	// host after a redirect (curl --location-trusted).
	Follow       bool `json:"follow,omitempty"`
	MaxRedirects int  `json:"max_redirects"`
	KeepMethod   bool `json:"keep_method,omitempty"`
	TrustedAuth  bool `json:"trusted_auth,omitempty"`
	// MaxTimeMS bounds each URL's transfer, redirects included (curl
	// -m); ConnectTimeoutMS each connection; IdleTimeoutMS each wait for
	// data (wget -T). Zero is no limit: Docker's own --timeout still
	// applies to the whole check.
	MaxTimeMS        int `json:"max_time_ms,omitempty"`
	ConnectTimeoutMS int `json:"connect_timeout_ms,omitempty"`
	IdleTimeoutMS    int `json:"idle_timeout_ms,omitempty"`
	// Retry says when a failed request is tried again. HeadFallback is
	// GNU Wget's --spider: a 500 or 501 to its HEAD is tried again (as a
	// retry) with GET.
	Retry        Retry `json:"retry"`
	HeadFallback bool  `json:"head_fallback,omitempty"`
	// LastDecides makes the last URL's outcome the check's, as curl does
	// with several URLs; otherwise every URL must succeed. StopOnFailure
	// requests no more URLs after one fails (curl --fail-early, BusyBox).
	LastDecides   bool `json:"last_decides,omitempty"`
	StopOnFailure bool `json:"stop_on_failure,omitempty"`
	// AlwaysSucceeds is set when the check line exits 0 whatever the
	// command does ("|| exit 0"): the requests are still made.
	AlwaysSucceeds bool `json:"always_succeeds,omitempty"`
	// Filter is set when the line pipes the tool's output into grep (Pipe):
	// the line's status is then the filter's.
	Filter *Filter `json:"filter,omitempty"`
	// URLsFromEnv are the URLs the line builds from the environment
	// (FromEnv).
	URLsFromEnv []URLFromEnv `json:"urls_from_env,omitempty"`

	out output // what the tool prints on standard output
}

// Header is one request header.
type Header struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Remove bool   `json:"remove,omitempty"`
}

// Auth is HTTP Basic authentication. Challenge waits for the server's 401
// with a Basic challenge before sending it, as wget does; curl sends it
// at once.
type Auth struct {
	User      string `json:"user"`
	Password  string `json:"password"`
	Challenge bool   `json:"challenge,omitempty"`
}

// Resolve pins Host:Port to Addrs.
type Resolve struct {
	Host  string   `json:"host"`
	Port  int      `json:"port"`
	Addrs []string `json:"addrs"`
}

// Retry says when a request is tried again, and after how long.
type Retry struct {
	// Count is how many more times a request is tried.
	Count int `json:"count"`
	// DelayMS is the wait before each retry; zero means the tool's
	// back-off: curl waits 1 s and doubles it (or what a Retry-After
	// header says), wget waits 1 s more each time up to MaxDelayMS.
	DelayMS    int `json:"delay_ms,omitempty"`
	MaxDelayMS int `json:"max_delay_ms,omitempty"`
	// MaxTimeMS stops retrying once this long has passed (curl
	// --retry-max-time).
	MaxTimeMS int `json:"max_time_ms,omitempty"`
	// Statuses are the answers that are retried (curl's transient 408,
	// 429, 500, 502, 503 and 504; GNU Wget's 504); a timeout always is.
	// Network retries a connection reset or a transfer cut short (wget);
	// Refused retries a refused connection; AllErrors retries any failure.
	Statuses  []int `json:"statuses,omitempty"`
	Network   bool  `json:"network,omitempty"`
	Refused   bool  `json:"refused,omitempty"`
	AllErrors bool  `json:"all_errors,omitempty"`
}

// ErrUnsupported is matched by every UnsupportedError.
var ErrUnsupported = errors.New("the check cannot be carried into a generated Node check")

// UnsupportedError is a command line the package cannot carry: Option
// names the option (or "URL"), Why says what it does that a generated
// check would not.
type UnsupportedError struct {
	Tool   string
	Option string
	Why    string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Tool, e.Option, e.Why)
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Options say which tool a bare "wget" is.
type Options struct {
	// BusyboxWget is set when the image's wget is BusyBox's (an Alpine
	// or BusyBox base with no wget package installed).
	BusyboxWget bool
}

// IsClient reports a curl or wget command.
func IsClient(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	b := path.Base(argv[0])
	return b == "curl" || b == "wget"
}

// Parse reads a curl or wget command line.
func Parse(argv []string, o Options) (*Check, error) {
	if !IsClient(argv) {
		return nil, fmt.Errorf("%q is not curl or wget", argv)
	}
	for _, a := range argv {
		if !utf8.ValidString(a) || strings.ContainsRune(a, 0) {
			return nil, &UnsupportedError{path.Base(argv[0]), "argument " + strconv.Quote(a), "it is not text a generated script can hold as it is"}
		}
	}
	if path.Base(argv[0]) == "curl" {
		return parseCurl(argv[1:])
	}
	if o.BusyboxWget {
		return parseWget(argv[1:], BusyboxWget)
	}
	return parseWget(argv[1:], Wget)
}

// absURL makes a command-line URL absolute (a URL without a scheme is
// http, as both tools read it) and refuses what a Node check cannot
// request. Credentials in the URL move to Auth.
func absURL(tool, raw string) (string, *Auth, error) {
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", nil, &UnsupportedError{tool, "URL " + raw, "it is not a URL codegenie can read"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", nil, &UnsupportedError{tool, "URL " + raw, "its scheme is not http or https"}
	}
	var a *Auth
	if u.User != nil {
		pw, _ := u.User.Password()
		a = &Auth{User: u.User.Username(), Password: pw}
		u.User = nil
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), a, nil
}

// seconds reads a tool's seconds value (it may have a fraction) as
// milliseconds.
func seconds(tool, opt, v string) (int, error) {
	var f float64
	if _, err := fmt.Sscanf(v, "%g", &f); err != nil || f < 0 || f > 86400 || strings.TrimSpace(v) != v {
		return 0, &UnsupportedError{tool, opt + " " + v, "its value is not a number of seconds"}
	}
	return int(f * 1000), nil
}

func integer(tool, opt, v string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || fmt.Sprint(n) != v {
		return 0, &UnsupportedError{tool, opt + " " + v, "its value is not a whole number"}
	}
	return n, nil
}

// header reads "Name: value"; an empty value after the colon removes the
// header (curl) and "Name;" sends it empty (curl).
func header(tool, opt, h string, curl bool) (Header, error) {
	if curl {
		if name, ok := strings.CutSuffix(h, ";"); ok && !strings.ContainsAny(name, ": ") && name != "" {
			return Header{Name: name}, nil
		}
	}
	name, value, ok := strings.Cut(h, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
		return Header{}, &UnsupportedError{tool, opt + " " + h, "it is not a Name: value header"}
	}
	value = strings.TrimSpace(value)
	if value == "" && curl {
		return Header{Name: name, Remove: true}, nil
	}
	return Header{Name: name, Value: value}, nil
}

// setURLs makes raw the check's URLs. Credentials in a URL become Auth
// (challenge says whether the tool waits for a 401 first), when there is
// one URL and no other credentials.
func (c *Check) setURLs(tool string, raw []string, challenge bool) error {
	if len(raw) == 0 {
		return &UnsupportedError{tool, "URL", "the command names no URL"}
	}
	for _, r := range raw {
		u, a, err := absURL(tool, r)
		if err != nil {
			return err
		}
		if a != nil {
			if len(raw) > 1 || c.Auth != nil {
				return &UnsupportedError{tool, "URL " + r, "credentials in one of several URLs, or beside other credentials"}
			}
			a.Challenge = challenge
			c.Auth = a
		}
		c.URLs = append(c.URLs, u)
	}
	return nil
}

// Rule says, in words, which answers pass the check.
func (c *Check) Rule() string {
	var r string
	switch c.Tool {
	case Curl:
		r = "passes on any answer"
		if c.FailOnError {
			r = "fails on a status of 400 or more"
		}
		if c.Follow {
			r = "follows redirects and " + r
		}
	case Wget:
		r = "follows redirects and passes on a 2xx answer"
	default:
		r = "follows redirects and passes on a 200 to 204 answer or a redirect without a Location"
	}
	if f := c.Filter; f != nil {
		var read string
		switch {
		case f.Reads == ReadsStatus:
			read = "the status code"
		case c.Tool != Curl:
			read = "the body of an answer that passes (" + r + ")"
		case c.FailOnError && !f.BodyOnError:
			read = "the body of an answer below 400"
		default:
			read = "the body of any answer"
		}
		r = "pipes " + read + " into " + f.Command + ": the check passes when a line of it matches"
	}
	if len(c.URLsFromEnv) > 0 {
		r += " (the URL is built at run time from the container's environment, as the shell built it)"
	}
	if c.AlwaysSucceeds {
		r += ", yet the line exits 0 whatever the answer"
	}
	return r
}
