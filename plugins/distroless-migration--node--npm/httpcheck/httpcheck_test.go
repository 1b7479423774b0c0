package httpcheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

func str(s string) *string { return &s }

var (
	curlDefaults = []Header{{Name: "User-Agent", Value: "curl"}, {Name: "Accept", Value: "*/*"}}
	wgetDefaults = []Header{{Name: "User-Agent", Value: "Wget"}, {Name: "Accept", Value: "*/*"}, {Name: "Accept-Encoding", Value: "identity"}}
	wgetRetry    = Retry{Count: 19, MaxDelayMS: 10000, Network: true, Statuses: []int{504}}
)

// TestParse: each option reaches the check, or the command line is
// refused naming it.
func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line    string
		busybox bool
		want    *Check
		refused string // the option a refusal names
	}{
		{line: "curl localhost:3000/health", want: &Check{Tool: Curl, URLs: []string{"http://localhost:3000/health"}, Method: "GET",
			Headers: curlDefaults, MaxRedirects: 50, LastDecides: true}},
		{line: "curl -fsS http://localhost:3000/health", want: &Check{Tool: Curl, URLs: []string{"http://localhost:3000/health"}, Method: "GET",
			Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -fsSL --max-redirs 3 -m 2.5 --connect-timeout 1 localhost/health", want: &Check{Tool: Curl, URLs: []string{"http://localhost/health"},
			Method: "GET", Headers: curlDefaults, MaxRedirects: 3, LastDecides: true, FailOnError: true, Follow: true, MaxTimeMS: 2500, ConnectTimeoutMS: 1000}},
		{line: "curl -k https://localhost/health", want: &Check{Tool: Curl, URLs: []string{"https://localhost/health"}, Method: "GET",
			Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, Insecure: true}},
		{line: "curl -f --cacert /app/ca.pem https://api.local/health", want: &Check{Tool: Curl, URLs: []string{"https://api.local/health"}, Method: "GET",
			Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true, CAFile: "/app/ca.pem"}},
		{line: "curl -f -H 'X-Probe: 1' -H 'Accept:' -H 'X-Empty;' localhost", want: &Check{Tool: Curl, URLs: []string{"http://localhost"}, Method: "GET",
			Headers:      append(curlDefaults[:2:2], Header{Name: "X-Probe", Value: "1"}, Header{Name: "Accept", Remove: true}, Header{Name: "X-Empty"}),
			MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -f -XDELETE localhost", want: &Check{Tool: Curl, URLs: []string{"http://localhost"}, Method: "DELETE", KeepMethod: true,
			Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -f -d a=1 -d b=2 localhost", want: &Check{Tool: Curl, URLs: []string{"http://localhost"}, Method: "POST", Body: str("a=1&b=2"),
			ContentType: "application/x-www-form-urlencoded", Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -f -u admin:s3cret localhost", want: &Check{Tool: Curl, URLs: []string{"http://localhost"}, Method: "GET",
			Auth: &Auth{User: "admin", Password: "s3cret"}, Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -f http://admin:s3cret@localhost/health", want: &Check{Tool: Curl, URLs: []string{"http://localhost/health"}, Method: "GET",
			Auth: &Auth{User: "admin", Password: "s3cret"}, Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -f --unix-socket /run/app.sock http://localhost/health", want: &Check{Tool: Curl, URLs: []string{"http://localhost/health"},
			Method: "GET", UnixSocket: "/run/app.sock", Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -f --resolve api.local:8443:127.0.0.1 https://api.local:8443/health", want: &Check{Tool: Curl, URLs: []string{"https://api.local:8443/health"},
			Method: "GET", Resolve: []Resolve{{Host: "api.local", Port: 8443, Addrs: []string{"127.0.0.1"}}}, Headers: curlDefaults, MaxRedirects: 50,
			LastDecides: true, FailOnError: true}},
		{line: "curl -f localhost/a localhost/b", want: &Check{Tool: Curl, URLs: []string{"http://localhost/a", "http://localhost/b"}, Method: "GET",
			Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -f --retry 3 --retry-delay 2 --retry-connrefused localhost", want: &Check{Tool: Curl, URLs: []string{"http://localhost"}, Method: "GET",
			Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true,
			Retry: Retry{Count: 3, DelayMS: 2000, Refused: true, Statuses: []int{408, 429, 500, 502, 503, 504}}}},
		{line: "curl -fI -4 localhost", want: &Check{Tool: Curl, URLs: []string{"http://localhost"}, Method: "HEAD", Family: 4,
			Headers: curlDefaults, MaxRedirects: 50, LastDecides: true, FailOnError: true}},
		{line: "curl -f -x http://proxy:3128 localhost", refused: "-x"},
		{line: "curl -f --proxy http://proxy:3128 localhost", refused: "--proxy"},
		{line: "curl -f -b sid=1 localhost", refused: "-b"},
		{line: "curl -f -F a=1 localhost", refused: "-F"},
		{line: "curl -f -d @body.json localhost", refused: "-d"},
		{line: "curl -f -u admin localhost", refused: "-u"},
		{line: "curl -f -o /tmp/out localhost", refused: "-o"},
		{line: "curl -f -O localhost/health", refused: "-O"},
		{line: "curl -f -X HEAD localhost", refused: "-X HEAD"},
		{line: "curl -f --digest -u a:b localhost", refused: "--digest"},
		{line: "curl -f --max-time=5 localhost", refused: "--max-time=5"},
		{line: "curl -f 'localhost/[1-3]'", refused: "URL"},
		{line: "curl -f ftp://localhost/x", refused: "URL"},
		{line: "curl -f --frobnicate localhost", refused: "--frobnicate"},
		{line: "curl -f", refused: "URL"},

		{line: "wget -q --spider http://localhost:3000/health", want: &Check{Tool: Wget, URLs: []string{"http://localhost:3000/health"}, Method: "HEAD",
			HeadFallback: true, Follow: true, MaxRedirects: 20, Headers: wgetDefaults, Retry: wgetRetry}},
		{line: "wget -qO- --tries=1 -T 3 localhost/health", want: &Check{Tool: Wget, URLs: []string{"http://localhost/health"}, Method: "GET",
			Follow: true, MaxRedirects: 20, Headers: wgetDefaults, IdleTimeoutMS: 3000, ConnectTimeoutMS: 3000,
			Retry: Retry{MaxDelayMS: 10000, Network: true, Statuses: []int{504}}}},
		{line: "wget -O /dev/null --no-check-certificate --header='X-A: 1' --post-data=a=1 https://localhost/health", want: &Check{Tool: Wget,
			URLs: []string{"https://localhost/health"}, Method: "POST", Body: str("a=1"), ContentType: "application/x-www-form-urlencoded",
			Insecure: true, Follow: true, MaxRedirects: 20, Headers: append(wgetDefaults[:3:3], Header{Name: "X-A", Value: "1"}), Retry: wgetRetry}},
		{line: "wget -qO- --user=u --password=p localhost", want: &Check{Tool: Wget, URLs: []string{"http://localhost"}, Method: "GET",
			Auth: &Auth{User: "u", Password: "p", Challenge: true}, Follow: true, MaxRedirects: 20, Headers: wgetDefaults, Retry: wgetRetry}},
		{line: "wget -q localhost/health", refused: "without -O"},
		{line: "wget -qO /tmp/health localhost/health", refused: "-O"},
		{line: "wget -qO- -e use_proxy=on localhost", refused: "-e"},
		{line: "wget -qO- --load-cookies c.txt localhost", refused: "--load-cookies"},
		{line: "wget -qO- --no-check-cert localhost", refused: "--no-check-cert"}, // an abbreviation

		{line: "wget -q --spider http://localhost:3000/health", busybox: true, want: &Check{Tool: BusyboxWget, URLs: []string{"http://localhost:3000/health"},
			Method: "GET", Follow: true, MaxRedirects: 15, StopOnFailure: true, Headers: []Header{{Name: "User-Agent", Value: "Wget"}}}},
		{line: "wget -qO- --user=u localhost", busybox: true, refused: "--user"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			t.Parallel()
			cl, why, ok := shellcmd.ParseCheckLine(tt.line)
			if !ok {
				t.Fatalf("%q: %s", tt.line, why)
			}
			got, err := Parse(cl.Argv, Options{BusyboxWget: tt.busybox})
			if tt.refused != "" {
				var ue *UnsupportedError
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Parse(%q) = %+v, %v; want an UnsupportedError naming %s", tt.line, got, err, tt.refused)
				}
				if !strings.HasPrefix(ue.Option, tt.refused) || ue.Why == "" {
					t.Fatalf("Parse(%q) refuses %q (%s); want it to name %s and say why", tt.line, ue.Option, ue.Why, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.line, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(Check{})); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"curl -fsSL localhost", "wget -qO- --header=X:1 localhost", "curl -XPOST -d a localhost", "wget -nv -T5 -t1 --spider x"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, line string, busybox bool) {
		argv := strings.Fields(line)
		c, err := Parse(argv, Options{BusyboxWget: busybox})
		if err != nil {
			if IsClient(argv) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Parse(%q): an error that is not UnsupportedError: %v", argv, err)
			}
			return
		}
		if len(c.URLs) == 0 || c.Method == "" {
			t.Fatalf("Parse(%q) = %+v: no URL or method", argv, c)
		}
		for _, u := range c.URLs {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				t.Fatalf("Parse(%q): URL %q", argv, u)
			}
		}
	})
}
