package shellcmd

import (
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
		{"curl -f localhost | grep ok", nil},
		{"curl -f localhost && curl -f localhost/b", nil},
		{"curl -f localhost; exit 0", nil},
		{"curl -f localhost || exit 1 || exit 0", nil},
		{"curl -f localhost || echo down", nil},
		{"curl -f $URL", nil},
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
