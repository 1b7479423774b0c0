package httpcheck

import (
	"net"
	"strconv"
	"strings"
)

// curlFlags are curl's options that take no value and that the check
// carries or that change nothing about what it checks (output, progress).
var curlFlags = map[string]string{
	"-f": "--fail", "--fail": "", "--fail-with-body": "", "--fail-early": "",
	"-s": "--silent", "--silent": "", "-S": "--show-error", "--show-error": "", "-v": "--verbose", "--verbose": "",
	"-q": "--disable", "--disable": "", "-#": "--progress-bar", "--progress-bar": "", "--no-progress-meter": "",
	"-i": "--include", "--include": "", "-N": "--no-buffer", "--no-buffer": "", "--no-keepalive": "",
	"--tcp-nodelay": "", "--no-sessionid": "", "--compressed": "", "-L": "--location", "--location": "",
	"--location-trusted": "", "-k": "--insecure", "--insecure": "", "-I": "--head", "--head": "", "-G": "--get", "--get": "",
	"-4": "--ipv4", "--ipv4": "", "-6": "--ipv6", "--ipv6": "", "-g": "--globoff", "--globoff": "",
	"--retry-connrefused": "", "--retry-all-errors": "", "--basic": "", "--http1.1": "", "-l": "--list-only",
}

// curlValued are curl's options that take a value.
var curlValued = map[string]string{
	"-o": "--output", "--output": "", "-D": "--dump-header", "--dump-header": "", "-w": "--write-out", "--write-out": "",
	"-m": "--max-time", "--max-time": "", "--connect-timeout": "", "--max-redirs": "", "-X": "--request", "--request": "",
	"-H": "--header", "--header": "", "-A": "--user-agent", "--user-agent": "", "-e": "--referer", "--referer": "",
	"-d": "--data", "--data": "", "--data-ascii": "", "--data-raw": "", "--data-binary": "", "--data-urlencode": "", "--json": "",
	"-u": "--user", "--user": "", "--cacert": "", "--unix-socket": "", "--resolve": "", "--retry": "", "--retry-delay": "",
	"--retry-max-time": "", "--url": "", "--noproxy": "", "--stderr": "",
}

// curlRefused are options curl has that a generated check does not
// carry, with what they do.
var curlRefused = map[string]string{
	"-x": "sends the request through a proxy", "--proxy": "sends the request through a proxy",
	"--socks4": "sends the request through a proxy", "--socks5": "sends the request through a proxy",
	"--socks5-hostname": "sends the request through a proxy", "--preproxy": "sends the request through a proxy",
	"-K": "reads more options from a file", "--config": "reads more options from a file",
	"-n": "reads credentials from .netrc", "--netrc": "reads credentials from .netrc", "--netrc-file": "reads credentials from a file",
	"-F": "sends a multipart form", "--form": "sends a multipart form",
	"-b": "sends cookies and keeps those the server sets", "--cookie": "sends cookies and keeps those the server sets",
	"-c": "writes the server's cookies to a file", "--cookie-jar": "writes the server's cookies to a file",
	"-E": "authenticates with a client certificate", "--cert": "authenticates with a client certificate", "--key": "authenticates with a client certificate",
	"--capath": "trusts a directory of CA certificates", "--digest": "uses Digest authentication", "--ntlm": "uses NTLM authentication",
	"--negotiate": "uses Negotiate authentication", "--anyauth": "picks an authentication method from the server's answer",
	"--connect-to": "connects to another host and port", "--abstract-unix-socket": "connects to an abstract Unix socket",
	"-0": "speaks HTTP/1.0", "--http1.0": "speaks HTTP/1.0", "--http2": "speaks HTTP/2", "--http2-prior-knowledge": "speaks HTTP/2",
	"--http3": "speaks HTTP/3", "-O": "saves the answer to a file named after the URL", "--remote-name": "saves the answer to a file named after the URL",
	"-T": "uploads a file", "--upload-file": "uploads a file", "-C": "resumes a transfer", "--continue-at": "resumes a transfer",
	"-r": "requests a byte range", "--range": "requests a byte range", "-z": "makes the request conditional", "--time-cond": "makes the request conditional",
	"-Z": "runs the transfers in parallel", "--parallel": "runs the transfers in parallel", "-:": "gives each URL its own options", "--next": "gives each URL its own options",
	"--post301": "keeps POST on a 301 redirect", "--post302": "keeps POST on a 302 redirect", "--post303": "keeps POST on a 303 redirect",
	"--path-as-is": "sends the path without normalising it", "--interface": "binds to a local interface", "--local-port": "binds to a local port",
	"--dns-servers": "uses other DNS servers", "--doh-url": "resolves names over DNS-over-HTTPS", "-j": "starts a new cookie session", "--junk-session-cookies": "starts a new cookie session",
}

// transient are the statuses curl --retry retries.
var transient = []int{408, 429, 500, 502, 503, 504}

// parseCurl reads curl's arguments.
func parseCurl(args []string) (*Check, error) {
	const tool = Curl
	c := &Check{Tool: Curl, Method: "GET", LastDecides: true, MaxRedirects: 50}
	var (
		urls                             []string
		data, jsonData                   []string
		hasData, hasJSON, get, head      bool
		method, userAgent, referer, user string
		headers                          []Header
		retryDelay                       = -1
		globoff, hasUserAgent            bool
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			urls = append(urls, a)
			continue
		}
		// Short options may be grouped (-fsSL) and may carry their value
		// (-m5, -XPOST).
		var opts []string
		var vals []string
		if strings.HasPrefix(a, "--") {
			opts = []string{a}
		} else {
			for j := 1; j < len(a); j++ {
				o := "-" + a[j:j+1]
				if _, ok := curlValued[o]; ok && j+1 < len(a) {
					opts, vals = append(opts, o), append(vals, a[j+1:])
					break
				}
				opts = append(opts, o)
			}
		}
		for k, o := range opts {
			name := o
			if long := curlFlags[o]; long != "" {
				name = long
			} else if long := curlValued[o]; long != "" {
				name = long
			}
			if why, ok := curlRefused[name]; ok {
				return nil, &UnsupportedError{tool, o, why}
			}
			if why, ok := curlRefused[o]; ok {
				return nil, &UnsupportedError{tool, o, why}
			}
			_, flag := curlFlags[o]
			_, valued := curlValued[o]
			if !flag && !valued {
				return nil, &UnsupportedError{tool, o, "an option codegenie does not know, so it cannot say what the check does with it"}
			}
			if flag {
				switch name {
				case "--include":
					c.out.other = true
				case "--fail", "--fail-with-body":
					c.FailOnError = true
					c.out.bodyOnError = name == "--fail-with-body"
				case "--fail-early":
					c.StopOnFailure = true
				case "--location":
					c.Follow = true
				case "--location-trusted":
					c.Follow, c.TrustedAuth = true, true
				case "--insecure":
					c.Insecure = true
				case "--head":
					head = true
					c.out.other = true // the headers go to standard output
				case "--get":
					get = true
				case "--ipv4":
					c.Family = 4
				case "--ipv6":
					c.Family = 6
				case "--retry-connrefused":
					c.Retry.Refused = true
				case "--retry-all-errors":
					c.Retry.AllErrors = true
				case "--compressed":
					headers = append(headers, Header{Name: "Accept-Encoding", Value: "deflate, gzip, br, zstd"})
				case "--globoff":
					globoff = true
				case "--list-only":
					// FTP only: nothing for HTTP.
				}
				continue
			}
			var v string
			switch {
			case k < len(vals):
				v = vals[k]
			case i+1 < len(args):
				i++
				v = args[i]
			default:
				return nil, &UnsupportedError{tool, o, "it has no value"}
			}
			switch name {
			case "--output", "--dump-header", "--stderr":
				if v != "/dev/null" && v != "-" {
					return nil, &UnsupportedError{tool, o + " " + v, "it writes to a file, and whether that write succeeds is part of the check; write to /dev/null"}
				}
				switch {
				case name == "--output":
					c.out.bodyGone = v == "/dev/null"
				case name == "--dump-header" && v == "-":
					c.out.other = true // the headers go to standard output
				}
			case "--write-out":
				w := v
				c.out.writeOut = &w
			case "--noproxy":
				// A Node check uses no proxy.
			case "--max-time":
				ms, err := seconds(tool, o, v)
				if err != nil {
					return nil, err
				}
				c.MaxTimeMS = ms
			case "--connect-timeout":
				ms, err := seconds(tool, o, v)
				if err != nil {
					return nil, err
				}
				c.ConnectTimeoutMS = ms
			case "--max-redirs":
				n, err := integer(tool, o, v)
				if err != nil {
					return nil, err
				}
				c.MaxRedirects = max(n, -1)
			case "--request":
				method = v
			case "--header":
				if strings.HasPrefix(v, "@") {
					return nil, &UnsupportedError{tool, o + " " + v, "it reads headers from a file"}
				}
				h, err := header(tool, o, v, true)
				if err != nil {
					return nil, err
				}
				headers = append(headers, h)
			case "--user-agent":
				userAgent, hasUserAgent = v, true
			case "--referer":
				if strings.Contains(v, ";auto") {
					return nil, &UnsupportedError{tool, o + " " + v, "it sets the referer on redirects"}
				}
				referer = v
			case "--data", "--data-ascii", "--data-binary", "--data-raw", "--data-urlencode":
				if name != "--data-raw" && strings.HasPrefix(v, "@") || name == "--data-urlencode" && strings.Contains(strings.SplitN(v, "=", 2)[0], "@") {
					return nil, &UnsupportedError{tool, o + " " + v, "it reads the body from a file"}
				}
				if name == "--data-urlencode" {
					v = urlencodeData(v)
				}
				data, hasData = append(data, v), true
			case "--json":
				if strings.HasPrefix(v, "@") {
					return nil, &UnsupportedError{tool, o + " " + v, "it reads the body from a file"}
				}
				jsonData, hasJSON = append(jsonData, v), true
			case "--user":
				if !strings.Contains(v, ":") {
					return nil, &UnsupportedError{tool, o + " " + v, "it asks for a password at a prompt"}
				}
				user = v
			case "--cacert":
				c.CAFile = v
			case "--unix-socket":
				c.UnixSocket = v
			case "--resolve":
				r, err := resolve(tool, o, v)
				if err != nil {
					return nil, err
				}
				c.Resolve = append(c.Resolve, r)
			case "--retry":
				n, err := integer(tool, o, v)
				if err != nil {
					return nil, err
				}
				c.Retry.Count = max(n, 0)
			case "--retry-delay":
				ms, err := seconds(tool, o, v)
				if err != nil {
					return nil, err
				}
				retryDelay = ms
			case "--retry-max-time":
				ms, err := seconds(tool, o, v)
				if err != nil {
					return nil, err
				}
				c.Retry.MaxTimeMS = ms
			case "--url":
				urls = append(urls, v)
			}
		}
	}
	for _, u := range urls {
		if !globoff && strings.ContainsAny(u, "[]{}") {
			return nil, &UnsupportedError{tool, "URL " + u, "curl expands [] and {} in a URL into several URLs; add -g"}
		}
	}
	if err := c.setURLs(tool, urls, false); err != nil {
		return nil, err
	}
	if c.Retry.Count > 0 {
		c.Retry.Statuses = transient
		if retryDelay > 0 {
			c.Retry.DelayMS = retryDelay
		}
	}
	if user != "" {
		if c.Auth != nil {
			return nil, &UnsupportedError{tool, "-u", "credentials both in the URL and in -u"}
		}
		name, pw, _ := strings.Cut(user, ":")
		c.Auth = &Auth{User: name, Password: pw}
	}
	if hasData && hasJSON {
		return nil, &UnsupportedError{tool, "--json", "--json with -d"}
	}
	var body *string
	ctype := ""
	switch {
	case hasJSON:
		s := strings.Join(jsonData, "")
		body, ctype = &s, "application/json"
	case hasData:
		s := strings.Join(data, "&")
		body, ctype = &s, "application/x-www-form-urlencoded"
	}
	if get && body != nil {
		for i, u := range c.URLs {
			sep := "?"
			if strings.Contains(u, "?") {
				sep = "&"
			}
			c.URLs[i] = u + sep + *body
		}
		body = nil
	}
	switch {
	case head && body != nil:
		return nil, &UnsupportedError{tool, "-I", "-I with a body"}
	case head:
		c.Method = "HEAD"
	case body != nil:
		c.Method = "POST"
	}
	if method != "" {
		if method == "HEAD" && !head {
			return nil, &UnsupportedError{tool, "-X HEAD", "curl then waits for a body the server does not send; use -I"}
		}
		if !validMethod(method) {
			return nil, &UnsupportedError{tool, "-X " + method, "it is not a request method"}
		}
		c.Method, c.KeepMethod = method, true
	}
	c.Body = body
	if body != nil {
		c.ContentType = ctype
	}
	c.Headers = append(c.Headers, Header{Name: "User-Agent", Value: "curl"}, Header{Name: "Accept", Value: "*/*"})
	if hasJSON {
		c.Headers = append(c.Headers, Header{Name: "Accept", Value: "application/json"})
	}
	if userAgent != "" {
		c.Headers = append(c.Headers, Header{Name: "User-Agent", Value: userAgent})
	} else if hasUserAgent {
		c.Headers = append(c.Headers, Header{Name: "User-Agent", Remove: true})
	}
	if referer != "" {
		c.Headers = append(c.Headers, Header{Name: "Referer", Value: referer})
	}
	c.Headers = append(c.Headers, headers...)
	return c, nil
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, r := range m {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9') && !strings.ContainsRune("!#$%&'*+-.^_`|~", r) {
			return false
		}
	}
	return true
}

// resolve reads curl's --resolve host:port:addr[,addr...].
func resolve(tool, opt, v string) (Resolve, error) {
	bad := &UnsupportedError{tool, opt + " " + v, "it is not host:port:address"}
	if strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+") {
		return Resolve{}, &UnsupportedError{tool, opt + " " + v, "it removes or times out an entry"}
	}
	host, rest, ok := strings.Cut(v, ":")
	if !ok {
		return Resolve{}, bad
	}
	portS, addrs, ok := strings.Cut(rest, ":")
	port, err := strconv.Atoi(portS)
	if !ok || err != nil || port <= 0 || port > 65535 || host == "" {
		return Resolve{}, bad
	}
	r := Resolve{Host: host, Port: port}
	for _, a := range strings.Split(addrs, ",") {
		a = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		if net.ParseIP(a) == nil {
			return Resolve{}, bad
		}
		r.Addrs = append(r.Addrs, a)
	}
	return r, nil
}

// urlencodeData is curl's --data-urlencode: "content", "=content" and
// "name=content" send content percent-encoded.
func urlencodeData(v string) string {
	name, content, ok := strings.Cut(v, "=")
	if !ok {
		return escape(v)
	}
	if name == "" {
		return escape(content)
	}
	return name + "=" + escape(content)
}

// escape is curl's --data-urlencode encoding: letters, digits and -._~
// stay, a space becomes +, and any other byte %xx, in lower-case hex as
// curl 7.88 writes it (upper case decodes the same).
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0:
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteString("%" + strconv.FormatInt(int64(c)|0x100, 16)[1:])
		}
	}
	return b.String()
}
