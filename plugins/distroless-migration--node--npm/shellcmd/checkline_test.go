package shellcmd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseCheckLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want *CheckLine // nil: not a check line
	}{
		{"curl -f http://localhost/health", &CheckLine{Argv: []string{"curl", "-f", "http://localhost/health"}}},
		{"curl -fsS http://localhost/health || exit 1", &CheckLine{Argv: []string{"curl", "-fsS", "http://localhost/health"}}},
		{"curl -fsS http://localhost/health || exit", &CheckLine{Argv: []string{"curl", "-fsS", "http://localhost/health"}}},
		{"curl -f localhost || false", &CheckLine{Argv: []string{"curl", "-f", "localhost"}}},
		{"curl -f localhost || exit 0", &CheckLine{Argv: []string{"curl", "-f", "localhost"}, AlwaysSucceeds: true}},
		{"curl -f localhost || exit 256", &CheckLine{Argv: []string{"curl", "-f", "localhost"}, AlwaysSucceeds: true}},
		{"curl -f localhost || true", &CheckLine{Argv: []string{"curl", "-f", "localhost"}, AlwaysSucceeds: true}},
		{"curl -f localhost || :", &CheckLine{Argv: []string{"curl", "-f", "localhost"}, AlwaysSucceeds: true}},
		{"wget -qO- localhost >/dev/null 2>&1 || exit 1", &CheckLine{Argv: []string{"wget", "-qO-", "localhost"}}},
		{"exec curl -f localhost", &CheckLine{Argv: []string{"curl", "-f", "localhost"}}},
		{`curl -H "X-A: \"1\"" localhost`, &CheckLine{Argv: []string{"curl", "-H", `X-A: "1"`, "localhost"}}},
		{"http_proxy=http://p:3128 curl localhost", &CheckLine{Argv: []string{"curl", "localhost"}, Env: []string{"http_proxy=http://p:3128"}}},
		{"curl -f localhost | grep ok", &CheckLine{Argv: []string{"curl", "-f", "localhost"}, Grep: &Grep{Argv: []string{"grep", "ok"}, Regexp: "ok"}}},
		{"wget -qO- localhost 2>/dev/null | grep -qi 'status: ok' || exit 1", &CheckLine{Argv: []string{"wget", "-qO-", "localhost"},
			Grep: &Grep{Argv: []string{"grep", "-qi", "status: ok"}, Regexp: "status: ok", IgnoreCase: true}}},
		{"curl -f localhost | grep ok || exit 0", &CheckLine{Argv: []string{"curl", "-f", "localhost"}, AlwaysSucceeds: true, Grep: &Grep{Argv: []string{"grep", "ok"}, Regexp: "ok"}}},
		{`wget -qO- "http://localhost:${PORT:-3000}/_health" | grep -q "OK" || exit 1`, &CheckLine{Argv: []string{"wget", "-qO-", "http://localhost:3000/_health"},
			Grep:     &Grep{Argv: []string{"grep", "-q", "OK"}, Regexp: "OK"},
			EnvWords: []EnvWord{{Index: 2, Parts: []EnvPart{{Text: "http://localhost:"}, {Env: "PORT", Default: "3000", Colon: true}, {Text: "/_health"}}}}}},
		{"exec curl -f http://$HOST:$PORT/", &CheckLine{Argv: []string{"curl", "-f", "http://:/"},
			EnvWords: []EnvWord{{Index: 2, Parts: []EnvPart{{Text: "http://"}, {Env: "HOST"}, {Text: ":"}, {Env: "PORT"}, {Text: "/"}}}}}},
		{"curl -f http://localhost:${PORT-80}/", &CheckLine{Argv: []string{"curl", "-f", "http://localhost:80/"},
			EnvWords: []EnvWord{{Index: 2, Parts: []EnvPart{{Text: "http://localhost:"}, {Env: "PORT", Default: "80"}, {Text: "/"}}}}}},
		{`curl --silent http://localhost:9001/health | grep -E "pass|ok|up" > /dev/null || exit 1`, &CheckLine{Argv: []string{"curl", "--silent", "http://localhost:9001/health"},
			Grep: &Grep{Argv: []string{"grep", "-E", "pass|ok|up"}, Regexp: "pass|ok|up"}}},
		{"curl -s localhost | grep ok >/dev/null 2>&1", &CheckLine{Argv: []string{"curl", "-s", "localhost"}, Grep: &Grep{Argv: []string{"grep", "ok"}, Regexp: "ok"}}},
		{"curl -s localhost | grep ok > /tmp/seen", nil},
		{"curl -s localhost | grep -E 'ok|' || exit 1", nil},
		{"curl -s localhost | grep -E '(ok|up)' || exit 1", nil},
		{`curl -s localhost | grep -E 'ok\|up' || exit 1`, nil},
		{"curl -s localhost | grep 'ok|up' || exit 1", &CheckLine{Argv: []string{"curl", "-s", "localhost"}, Grep: &Grep{Argv: []string{"grep", "ok|up"}, Regexp: `ok\|up`}}},
		{"$CURL -f localhost", nil},
		{"curl -f http://localhost:${PORT:=80}/", nil},
		{"curl -f http://localhost:${#PORT}/", nil},
		{"curl -f http://localhost:${PORT:-$(cat /port)}/", nil},
		{"curl -f localhost | jq .ok", nil},
		{"curl -f localhost | grep ok | grep -v bad", nil},
		{"curl -f localhost | grep $WANT", nil},
		{"curl -f localhost |& grep ok", nil},
		{"curl -f localhost && curl -f localhost/b", nil},
		{"curl -f localhost; exit 0", nil},
		{"curl -f localhost || exit 1 || exit 0", nil},
		{"curl -f localhost || echo down", nil},
		{"curl -f $URL", &CheckLine{Argv: []string{"curl", "-f", ""}, EnvWords: []EnvWord{{Index: 2, Parts: []EnvPart{{Env: "URL"}}}}}},
		{"curl -f localhost > /tmp/out", nil},
		{"curl -f localhost &>/dev/null", nil}, // POSIX: a background job
		{"! curl -f localhost", nil},
		{"sh -c 'curl localhost'", nil},
		{"curl -f 'unterminated", nil},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			t.Parallel()
			got, why, ok := ParseCheckLine(tt.line)
			if tt.want == nil {
				if ok {
					t.Fatalf("ParseCheckLine(%q) = %+v, want not a check line", tt.line, got)
				}
				if why == "" {
					t.Fatal("no reason given")
				}
				return
			}
			if !ok {
				t.Fatalf("ParseCheckLine(%q): %s", tt.line, why)
			}
			if diff := cmp.Diff(*tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseCheckLine(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestParseGrep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv       []string
		re         string // "" when refused
		ignoreCase bool
		refusal    string // a word the refusal names
	}{
		{argv: []string{"grep", "-q", "ok"}, re: "ok"},
		{argv: []string{"grep", "-qi", "OK"}, re: "OK", ignoreCase: true},
		{argv: []string{"/bin/grep", "--quiet", "--ignore-case", "--", "-ok-"}, re: "-ok-", ignoreCase: true},
		{argv: []string{"grep", "-qe", "ok"}, re: "ok"},
		{argv: []string{"grep", "-q", "-e", "a.b"}, re: "a.b"},
		{argv: []string{"grep", "-qF", "a.b[1]"}, re: `a\.b\[1\]`},
		{argv: []string{"fgrep", "-q", "a*"}, re: `a\*`},
		{argv: []string{"grep", "-q", `"status":"ok"`}, re: `"status":"ok"`},
		{argv: []string{"grep", "-q", "^status.*ok$"}, re: "^status.*ok$"},
		{argv: []string{"grep", "-qx", "200"}, re: "^(?:200)$"},
		{argv: []string{"grep", "-q", `1\.0`}, re: `1\.0`},
		{argv: []string{"grep", "-q", "a+b"}, re: `a\+b`}, // BRE: + is literal
		{argv: []string{"grep", "-q", "état: prêt"}, re: "état: prêt"},
		{argv: []string{"grep", "-qE", "a+b"}, refusal: "+"},
		{argv: []string{"egrep", "-q", "up|ok"}, re: "up|ok"},
		{argv: []string{"grep", "-qxE", "^up|ok$"}, re: "^(?:^up|ok$)$"},
		{argv: []string{"grep", "-qE", "up|"}, refusal: "empty alternative"},
		{argv: []string{"grep", "-qE", "(up|ok)"}, refusal: "("},
		{argv: []string{"grep", "-qE", "up|o+k"}, refusal: "+"},
		{argv: []string{"grep", "-q", "o[k]"}, refusal: "["},
		{argv: []string{"grep", "-q", "ok*"}, refusal: "*"},
		{argv: []string{"grep", "-qv", "down"}, refusal: "-v"},
		{argv: []string{"grep", "-qw", "ok"}, refusal: "-w"},
		{argv: []string{"grep", "-q", "-e", "a", "-e", "b"}, refusal: "more than one"},
		{argv: []string{"grep", "-q", "ok", "/tmp/status"}, refusal: "/tmp/status"},
		{argv: []string{"grep", "-q"}, refusal: "no pattern"},
		{argv: []string{"grep", "-q", "a\nb"}, refusal: "newline"},
		{argv: []string{"grep", "-q", `a\d`}, refusal: `\`},
		{argv: []string{"jq", "-e", ".ok"}, refusal: "jq"},
	}
	for _, tt := range tests {
		g, why, ok := ParseGrep(tt.argv)
		switch {
		case tt.re == "" && ok:
			t.Errorf("ParseGrep(%q) = %+v; want a refusal naming %s", tt.argv, g, tt.refusal)
		case tt.re == "" && !strings.Contains(why, tt.refusal):
			t.Errorf("ParseGrep(%q) refuses with %q; want it to name %s", tt.argv, why, tt.refusal)
		case tt.re != "" && !ok:
			t.Errorf("ParseGrep(%q): %s", tt.argv, why)
		case tt.re != "" && (g.Regexp != tt.re || g.IgnoreCase != tt.ignoreCase):
			t.Errorf("ParseGrep(%q) = %q (ignore case %v); want %q (%v)", tt.argv, g.Regexp, g.IgnoreCase, tt.re, tt.ignoreCase)
		}
		if ok {
			if _, err := regexp.Compile(g.Regexp); err != nil {
				t.Errorf("ParseGrep(%q) gives %q, which Go's regexp refuses: %v", tt.argv, g.Regexp, err)
			}
		}
	}
}
