package httpcheck

import (
	"strings"
)

// wgetOption is how wget reads one option: its long name, and whether it
// takes a value.
type wgetOption struct {
	long   string
	valued bool
}

// wgetShort are GNU Wget's one-letter options the check knows.
var wgetShort = map[byte]wgetOption{
	'q': {"quiet", false}, 'v': {"verbose", false}, 'S': {"server-response", false}, '4': {"inet4-only", false},
	'6': {"inet6-only", false}, 'O': {"output-document", true}, 'o': {"output-file", true}, 'a': {"append-output", true},
	'T': {"timeout", true}, 't': {"tries", true}, 'U': {"user-agent", true}, 'w': {"wait", true}, 'Y': {"proxy", true},
	'n': {"n", true}, 'P': {"directory-prefix", true}, 'e': {"execute", true}, 'c': {"continue", false},
	'i': {"input-file", true}, 'r': {"recursive", false}, 'N': {"timestamping", false}, 'B': {"base", true}, 'F': {"force-html", false},
}

// wgetLong are GNU Wget's long options the check knows: true for those
// that take a value.
var wgetLong = map[string]bool{
	"quiet": false, "verbose": false, "no-verbose": false, "server-response": false, "spider": false,
	"no-check-certificate": false, "inet4-only": false, "inet6-only": false, "retry-connrefused": false,
	"auth-no-challenge": false, "no-proxy": false, "no-cache": false, "no-dns-cache": false, "show-progress": false,
	"no-hsts": false, "no-clobber": false, "content-on-error": false, "no-directories": false, "no-host-directories": false,
	"output-document": true, "output-file": true, "append-output": true, "timeout": true, "connect-timeout": true,
	"read-timeout": true, "dns-timeout": true, "tries": true, "waitretry": true, "wait": true, "header": true,
	"user-agent": true, "referer": true, "post-data": true, "body-data": true, "method": true, "user": true,
	"password": true, "http-user": true, "http-password": true, "max-redirect": true, "ca-certificate": true,
	"progress": true, "directory-prefix": true, "prefer-family": true, "retry-on-http-error": true, "proxy": true,
}

// busyboxKnown are the options BusyBox's wget has; it fails on any other,
// so the original check never succeeds with one.
var busyboxKnown = map[string]bool{
	"quiet": true, "server-response": true, "output-document": true, "output-file": true, "directory-prefix": true,
	"proxy": true, "user-agent": true, "timeout": true, "tries": true, "header": true, "post-data": true, "spider": true,
	"no-check-certificate": true, "no-cache": true, "no-verbose": true, "no-clobber": true, "no-host-directories": true,
	"n": true, "continue": true, "post-file": true, "passive-ftp": true, "no-parent": true,
}

// wgetRefused are options a generated check does not carry, with what
// they do.
var wgetRefused = map[string]string{
	"execute": "runs a wgetrc command", "input-file": "reads URLs from a file", "recursive": "follows links recursively",
	"timestamping": "makes the request conditional", "continue": "resumes a download with a range request",
	"post-file": "sends a file's contents", "body-file": "sends a file's contents", "certificate": "authenticates with a client certificate",
	"private-key": "authenticates with a client certificate", "ca-directory": "trusts a directory of CA certificates",
	"load-cookies": "sends cookies from a file", "save-cookies": "writes cookies to a file", "ask-password": "asks for a password at a prompt",
	"bind-address": "binds to a local address", "base": "resolves relative links", "force-html": "reads the input as HTML",
	"delete-after": "writes the answer to a file and deletes it", "page-requisites": "fetches a page's requisites",
	"mirror": "mirrors a site", "span-hosts": "follows links to other hosts", "default-page": "names files after the URL",
}

// parseWget reads wget's arguments, for GNU Wget or BusyBox's wget.
func parseWget(args []string, tool string) (*Check, error) {
	busybox := tool == BusyboxWget
	c := &Check{Tool: tool, Method: "GET", Follow: true, MaxRedirects: 20}
	if busybox {
		c.MaxRedirects, c.StopOnFailure = 15, true
	} else {
		// GNU Wget tries 20 times, retrying timeouts and network errors
		// but not a refused connection or an HTTP error, and waits 1 s
		// more each time up to --waitretry (10 s).
		c.Retry = Retry{Count: 19, MaxDelayMS: 10000, Network: true, Statuses: []int{504}}
	}
	var (
		urls                               []string
		output                             = ""
		spider, authNoChallenge, hasMethod bool
		user, password, method, postData   string
		hasPost, hasBody                   bool
		bodyData                           string
		headers                            []Header
		userAgent, referer                 string
		hasUser, hasPassword               bool
	)
	type opt struct{ name, value string }
	var opts []opt
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			urls = append(urls, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, v, hasV := strings.Cut(a[2:], "=")
			valued, known := wgetLong[name]
			if why, refused := wgetRefused[name]; refused {
				return nil, &UnsupportedError{tool, "--" + name, why}
			}
			if !known {
				return nil, &UnsupportedError{tool, "--" + name, "an option codegenie does not know, so it cannot say what the check does with it"}
			}
			if valued && !hasV {
				if i+1 >= len(args) {
					return nil, &UnsupportedError{tool, "--" + name, "it has no value"}
				}
				i++
				v = args[i]
			} else if !valued && hasV {
				return nil, &UnsupportedError{tool, a, "it takes no value"}
			}
			opts = append(opts, opt{name, v})
		case strings.HasPrefix(a, "-") && a != "-":
			for j := 1; j < len(a); j++ {
				o, ok := wgetShort[a[j]]
				if !ok {
					return nil, &UnsupportedError{tool, "-" + a[j:j+1], "an option codegenie does not know, so it cannot say what the check does with it"}
				}
				if why, refused := wgetRefused[o.long]; refused {
					return nil, &UnsupportedError{tool, "-" + a[j:j+1], why}
				}
				if !o.valued {
					opts = append(opts, opt{o.long, ""})
					continue
				}
				v := a[j+1:]
				if v == "" {
					if i+1 >= len(args) {
						return nil, &UnsupportedError{tool, "-" + a[j:j+1], "it has no value"}
					}
					i++
					v = args[i]
				}
				opts = append(opts, opt{o.long, v})
				break
			}
		default:
			urls = append(urls, a)
		}
	}
	for _, o := range opts {
		if busybox && !busyboxKnown[o.name] {
			return nil, &UnsupportedError{tool, "--" + o.name, "BusyBox's wget does not have this option, so the check fails as it is"}
		}
		switch o.name {
		case "quiet", "verbose", "no-verbose", "server-response", "show-progress", "progress", "no-dns-cache",
			"no-hsts", "content-on-error", "no-clobber", "no-directories", "no-host-directories", "wait", "prefer-family",
			"dns-timeout", "passive-ftp", "no-parent":
			// Output, pacing or name lookup only.
		case "n":
			// -nv, -nc, -nd, -nH: no-verbose, no-clobber, no directories.
			if o.value != "v" && o.value != "c" && o.value != "d" && o.value != "H" {
				return nil, &UnsupportedError{tool, "-n" + o.value, "an option codegenie does not know, so it cannot say what the check does with it"}
			}
		case "spider":
			spider = true
		case "output-document":
			output = o.value
		case "output-file", "append-output":
			if o.value != "/dev/null" && o.value != "-" {
				return nil, &UnsupportedError{tool, "--" + o.name + " " + o.value, "it writes a log file, and whether that write succeeds is part of the check; write to /dev/null"}
			}
		case "directory-prefix":
			// Only where a saved answer goes.
		case "no-check-certificate":
			c.Insecure = true
		case "inet4-only":
			c.Family = 4
		case "inet6-only":
			c.Family = 6
		case "retry-connrefused":
			c.Retry.Refused = true
		case "auth-no-challenge":
			authNoChallenge = true
		case "no-proxy":
		case "proxy":
			if o.value != "off" {
				return nil, &UnsupportedError{tool, "-Y " + o.value, "sends the request through the proxy the environment names"}
			}
		case "no-cache":
			if !busybox {
				headers = append(headers, Header{Name: "Cache-Control", Value: "no-cache"}, Header{Name: "Pragma", Value: "no-cache"})
			}
		case "timeout", "read-timeout":
			ms, err := seconds(tool, "--"+o.name, o.value)
			if err != nil {
				return nil, err
			}
			c.IdleTimeoutMS = ms
			if o.name == "timeout" && !busybox {
				c.ConnectTimeoutMS = ms
			}
		case "connect-timeout":
			ms, err := seconds(tool, "--"+o.name, o.value)
			if err != nil {
				return nil, err
			}
			c.ConnectTimeoutMS = ms
		case "tries":
			if busybox {
				continue // BusyBox takes it and ignores it.
			}
			n := 0
			if o.value != "inf" {
				var err error
				if n, err = integer(tool, "--tries", o.value); err != nil {
					return nil, err
				}
			}
			if n == 0 {
				return nil, &UnsupportedError{tool, "--tries " + o.value, "it retries without end"}
			}
			c.Retry.Count = n - 1
		case "waitretry":
			ms, err := seconds(tool, "--waitretry", o.value)
			if err != nil {
				return nil, err
			}
			c.Retry.MaxDelayMS = ms
		case "retry-on-http-error":
			c.Retry.Statuses = []int{504}
			for _, s := range strings.Split(o.value, ",") {
				n, err := integer(tool, "--retry-on-http-error", strings.TrimSpace(s))
				if err != nil {
					return nil, err
				}
				c.Retry.Statuses = append(c.Retry.Statuses, n)
			}
		case "header":
			if o.value == "" {
				headers = nil // GNU Wget: --header= clears the headers given before
				continue
			}
			h, err := header(tool, "--header", o.value, false)
			if err != nil {
				return nil, err
			}
			headers = append(headers, h)
		case "user-agent":
			userAgent = o.value
		case "referer":
			referer = o.value
		case "post-data":
			postData, hasPost = o.value, true
		case "body-data":
			bodyData, hasBody = o.value, true
		case "method":
			method, hasMethod = strings.ToUpper(o.value), true
		case "user", "http-user":
			user, hasUser = o.value, true
		case "password", "http-password":
			password, hasPassword = o.value, true
		case "max-redirect":
			n, err := integer(tool, "--max-redirect", o.value)
			if err != nil {
				return nil, err
			}
			c.MaxRedirects = n
		case "ca-certificate":
			c.CAFile = o.value
		}
	}
	if output == "" && !spider {
		return nil, &UnsupportedError{tool, "without -O or --spider", "wget saves the answer to a file in the working directory, and whether that write succeeds is part of the check; add -O /dev/null"}
	}
	c.out.bodyGone = output != "-"
	if output != "" && output != "-" && output != "/dev/null" {
		return nil, &UnsupportedError{tool, "-O " + output, "it writes the answer to a file, and whether that write succeeds is part of the check; write to /dev/null"}
	}
	// GNU Wget waits for a 401 before it sends credentials from the URL
	// or --user, unless --auth-no-challenge; BusyBox sends those in the
	// URL at once.
	if err := c.setURLs(tool, urls, !busybox && !authNoChallenge); err != nil {
		return nil, err
	}
	if hasUser || hasPassword {
		if c.Auth != nil {
			return nil, &UnsupportedError{tool, "--user", "credentials both in the URL and in --user"}
		}
		c.Auth = &Auth{User: user, Password: password, Challenge: !authNoChallenge}
	}
	switch {
	case hasPost && hasBody:
		return nil, &UnsupportedError{tool, "--body-data", "--body-data with --post-data"}
	case hasPost && hasMethod:
		return nil, &UnsupportedError{tool, "--method", "--method with --post-data"}
	case hasPost:
		c.Method, c.Body, c.ContentType = "POST", &postData, "application/x-www-form-urlencoded"
	case hasMethod:
		if !validMethod(method) {
			return nil, &UnsupportedError{tool, "--method " + method, "it is not a request method"}
		}
		c.Method = method
		if hasBody {
			c.Body, c.ContentType = &bodyData, "application/x-www-form-urlencoded"
		}
	case hasBody:
		return nil, &UnsupportedError{tool, "--body-data", "--body-data without --method"}
	case spider && !busybox:
		// GNU Wget's spider asks with HEAD, and asks again with GET when
		// HEAD gets a 500 or 501; BusyBox's asks with GET.
		c.Method, c.HeadFallback = "HEAD", true
	}
	if busybox {
		c.Headers = append(c.Headers, Header{Name: "User-Agent", Value: "Wget"})
	} else {
		c.Headers = append(c.Headers, Header{Name: "User-Agent", Value: "Wget"}, Header{Name: "Accept", Value: "*/*"},
			Header{Name: "Accept-Encoding", Value: "identity"})
	}
	if userAgent != "" {
		c.Headers = append(c.Headers, Header{Name: "User-Agent", Value: userAgent})
	}
	if referer != "" {
		c.Headers = append(c.Headers, Header{Name: "Referer", Value: referer})
	}
	c.Headers = append(c.Headers, headers...)
	return c, nil
}
