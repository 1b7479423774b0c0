package egress

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Rule
		str  string
	}{
		{"registry.npmjs.org", Rule{"registry.npmjs.org", 0}, "registry.npmjs.org"},
		{"  Registry.NPMJS.org.  ", Rule{"registry.npmjs.org", 0}, "registry.npmjs.org"},
		{"npm.corp:8443", Rule{"npm.corp", 8443}, "npm.corp:8443"},
		{"*.example.com", Rule{"*.example.com", 0}, "*.example.com"},
		{"*.Example.com:443", Rule{"*.example.com", 443}, "*.example.com:443"},
		{"203.0.113.80", Rule{"203.0.113.80", 0}, "203.0.113.80"},
		{"203.0.113.80:8080", Rule{"203.0.113.80", 8080}, "203.0.113.80:8080"},
		{"[::1]:80", Rule{"::1", 80}, "[::1]:80"},
		{"[2001:DB8::1]", Rule{"2001:db8::1", 0}, "[2001:db8::1]"},
		{"2001:db8::1", Rule{"2001:db8::1", 0}, "[2001:db8::1]"},
		{"[::ffff:203.0.113.9]:443", Rule{"203.0.113.9", 443}, "203.0.113.9:443"},
		{"under_score.test", Rule{"under_score.test", 0}, "under_score.test"},
		{"localhost", Rule{"localhost", 0}, "localhost"},
	} {
		got, err := ParseRule(tc.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseRule(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.str {
			t.Errorf("ParseRule(%q).String() = %q, want %q", tc.in, got.String(), tc.str)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "empty egress rule"},
		{"https://registry.npmjs.org/", "without a scheme"},
		{"registry.npmjs.org/path", "without a scheme"},
		{"user@host", "without a scheme"},
		{"host:", "empty port"},
		{"host:0", "from 1 to 65535"},
		{"host:65536", "from 1 to 65535"},
		{"host:-1", "from 1 to 65535"},
		{"host:http", "from 1 to 65535"},
		{"[::1", "missing ]"},
		{"[::1]x", "unexpected"},
		{"[203.0.113.1]:80", "not an IPv6 address"},
		{"[fe80::1%eth0]:80", "zone"},
		{"fe80::1%eth0", "zone"},
		{"*.203.0.113.1", "wildcards take host names"},
		{"a.*.com", "character"},
		{"*", "character"},
		{"-a.com", "starts or ends"},
		{"a..com", "empty label"},
		{"a b.com", "character"},
		{strings.Repeat("a", 64) + ".com", "longer than 63"},
		{strings.Repeat("a.", 127) + "com", "longer than 253"},
		{"1:2:3", "not a valid IPv6"},
	} {
		_, err := ParseRule(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRule(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestRuleAllows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule, host string
		port       int
		want       bool
	}{
		{"registry.npmjs.org", "registry.npmjs.org", 443, true},
		{"registry.npmjs.org", "REGISTRY.npmjs.org.", 80, true},
		{"registry.npmjs.org", "registry.npmjs.org", 8080, false},
		{"registry.npmjs.org", "x.registry.npmjs.org", 443, false},
		{"registry.npmjs.org:8443", "registry.npmjs.org", 443, false},
		{"registry.npmjs.org:8443", "registry.npmjs.org", 8443, true},
		{"*.example.com", "a.example.com", 443, true},
		{"*.example.com", "a.b.example.com", 443, true},
		{"*.example.com", "example.com", 443, false},
		{"*.example.com", "badexample.com", 443, false},
		{"203.0.113.80", "203.0.113.80", 443, true},
		{"203.0.113.80", "::ffff:203.0.113.80", 443, true},
		{"203.0.113.80", "203.0.113.81", 443, false},
		{"[2001:db8::1]:80", "2001:DB8:0::1", 80, true},
		{"registry.npmjs.org", "203.0.113.80", 443, false},
		{"203.0.113.80", "registry.npmjs.org", 443, false},
		{"*.example.com", "*.example.com", 443, false}, // a destination is never a wildcard
	} {
		if got := mustRule(t, tc.rule).Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("%s allows %s:%d = %v, want %v", tc.rule, tc.host, tc.port, got, tc.want)
		}
	}
}

func TestCapped(t *testing.T) {
	t.Parallel()
	rules := func(ss ...string) []Rule {
		var out []Rule
		for _, s := range ss {
			out = append(out, mustRule(t, s))
		}
		return out
	}
	for _, tc := range []struct {
		name              string
		want, cap         []Rule
		wantOK, wantRefus []Rule
	}{
		{"empty cap refuses all", rules("registry.npmjs.org"), nil, nil, rules("registry.npmjs.org")},
		{"exact", rules("registry.npmjs.org", "evil.test"), rules("registry.npmjs.org"), rules("registry.npmjs.org"), rules("evil.test")},
		{"wildcard covers names below it", rules("a.npm.corp", "x.y.npm.corp:443", "npm.corp"), rules("*.npm.corp"),
			rules("a.npm.corp", "x.y.npm.corp:443"), rules("npm.corp")},
		{"wildcard covers narrower wildcards", rules("*.npm.corp", "*.a.npm.corp", "*.corp"), rules("*.npm.corp"),
			rules("*.npm.corp", "*.a.npm.corp"), rules("*.corp")},
		{"a name does not cover a wildcard", rules("*.npm.corp"), rules("a.npm.corp", "b.npm.corp"), nil, rules("*.npm.corp")},
		{"port 0 covers 80 and 443 only", rules("h.test:443", "h.test:80", "h.test:8443", "h.test"), rules("h.test"),
			rules("h.test:443", "h.test:80", "h.test"), rules("h.test:8443")},
		{"port 0 split when the cap has one port", rules("h.test"), rules("h.test:443"), rules("h.test:443"), rules("h.test:80")},
		{"port 0 from two cap rules", rules("h.test"), rules("h.test:443", "*.test:80"), rules("h.test"), nil},
		{"IP literal", rules("203.0.113.80:443", "203.0.113.81"), rules("203.0.113.80"), rules("203.0.113.80:443"), rules("203.0.113.81")},
		{"a name does not cover its address", rules("203.0.113.80"), rules("registry.npmjs.org"), nil, rules("203.0.113.80")},
		{"duplicates once", rules("h.test", "H.test"), rules("h.test"), rules("h.test"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ok, refused := Capped(tc.want, tc.cap)
			if diff := cmp.Diff(tc.wantOK, ok); diff != "" {
				t.Errorf("ok (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRefus, refused); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefusedClass(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"203.0.113.80":           "", // this machine's registry address: a documentation range, reachable
		"198.51.100.7":           "",
		"2001:db8::1":            "",
		"2606:4700::1111":        "",
		"127.0.0.1":              "loopback",
		"127.255.0.9":            "loopback",
		"::1":                    "loopback",
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:10.0.0.1":        "private",
		"10.1.2.3":               "private",
		"172.31.255.255":         "private",
		"172.32.0.1":             "",
		"192.168.0.1":            "private",
		"100.64.0.1":             "shared (CGNAT)",
		"100.128.0.1":            "",
		"169.254.169.254":        "link-local (metadata)",
		"fe80::1":                "link-local",
		"fd00::1":                "private (ULA)",
		"fc00::1":                "private (ULA)",
		"0.0.0.0":                "unspecified",
		"::":                     "unspecified",
		"224.0.0.251":            "multicast",
		"ff02::fb":               "multicast",
		"255.255.255.255":        "reserved",
		"64:ff9b::a9fe:a9fe":     "link-local (metadata) (embedded in IPv6)",
		"64:ff9b::cb00:7150":     "",
		"2002:7f00:1::1":         "loopback (embedded in 6to4)",
		"::a9fe:a9fe":            "link-local (metadata) (embedded in IPv6)",
		"fec0::1":                "site-local",
		"2001:db8::1%eth0":       "zoned",
		"::ffff:169.254.169.254": "link-local (metadata)",
	} {
		if got := refusedClass(netip.MustParseAddr(addr)); got != want {
			t.Errorf("refusedClass(%s) = %q, want %q", addr, got, want)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"registry.npmjs.org", "npm.corp:8443", "[::1]:80", "*.example.com", "203.0.113.80:443", "::1", "[::ffff:1.2.3.4]", "a..b", "h:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		again, err := ParseRule(r.String())
		if err != nil {
			t.Fatalf("ParseRule(%q) = %+v, whose String %q does not parse: %v", s, r, r.String(), err)
		}
		if again != r {
			t.Fatalf("ParseRule(%q) = %+v, String %q parses to %+v", s, r, r.String(), again)
		}
		if r.Port < 0 || r.Port > 65535 || r.Host == "" || r.Host != strings.ToLower(r.Host) {
			t.Fatalf("ParseRule(%q) = %+v", s, r)
		}
		if !strings.HasPrefix(r.Host, "*.") {
			// A rule allows its own destination.
			for _, p := range r.ports() {
				if !r.Allows(r.Host, p) {
					t.Fatalf("%+v does not allow %s:%d", r, r.Host, p)
				}
			}
		}
		if ok, refused := Capped([]Rule{r}, []Rule{r}); len(ok) != 1 || len(refused) != 0 {
			t.Fatalf("%+v does not cap itself: %v %v", r, ok, refused)
		}
	})
}
