package gatecontrol

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/egress"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// TestLimitsAreCaps is the attack of issue 10, item 5: a request that asks
// for more memory, pids, CPUs, disk, output or time than the server's caps
// is refused and audited; one that asks for less gets what it asked; one
// that asks for nothing gets the caps.
func TestLimitsAreCaps(t *testing.T) {
	t.Parallel()
	caps := sandbox.Limits{MemoryBytes: 1 << 30, CPUs: 2, PIDs: 256, OutputBytes: 1 << 20, DiskBytes: 10 << 30}
	h := newHarness(t, func(c *Config) { c.MaxLimits = caps; c.MaxTimeout = time.Hour; c.DefaultTimeout = time.Minute })
	tests := []struct {
		name    string
		limits  sandbox.Limits
		timeout time.Duration
		over    string // "" when it runs
		want    sandbox.Limits
		wantT   time.Duration
	}{
		{name: "nothing asked", want: caps, wantT: time.Minute},
		{
			name:   "less than every cap",
			limits: sandbox.Limits{MemoryBytes: 1 << 20, CPUs: 0.5, PIDs: 10, OutputBytes: 100, DiskBytes: 1 << 30}, timeout: time.Second,
			want: sandbox.Limits{MemoryBytes: 1 << 20, CPUs: 0.5, PIDs: 10, OutputBytes: 100, DiskBytes: 1 << 30}, wantT: time.Second,
		},
		{name: "exactly the caps", limits: caps, timeout: time.Hour, want: caps, wantT: time.Hour},
		{name: "8 GiB of memory and 100000 pids", limits: sandbox.Limits{MemoryBytes: 8 << 30, PIDs: 100_000}, over: "memory_bytes 8589934592 is over the cap 1073741824; pids 100000 is over the cap 256"},
		{name: "more CPUs", limits: sandbox.Limits{CPUs: 2.5}, over: "cpus 2.5 is over the cap 2"},
		{name: "more disk", limits: sandbox.Limits{DiskBytes: 10<<30 + 1}, over: "disk_bytes 10737418241 is over the cap 10737418240"},
		{name: "more output", limits: sandbox.Limits{OutputBytes: 1<<20 + 1}, over: "output_bytes"},
		{name: "a longer timeout", timeout: time.Hour + time.Second, over: "timeout 1h0m1s is over the cap 1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: h.ws}, Command: []string{"true"}, Limits: tt.limits, Timeout: tt.timeout}
			body, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			before, ran := len(h.records()), len(h.fake.Spawns())
			r := h.spawn(t.Context(), body)
			recs := h.records()[before:]
			if tt.over == "" {
				if r.status != http.StatusOK {
					t.Fatalf("status %d %s", r.status, r.body)
				}
				got := h.fake.Spawns()[ran]
				if diff := cmp.Diff(tt.want, got.Limits); diff != "" {
					t.Errorf("backend limits (-want +got):\n%s", diff)
				}
				if got.Timeout != tt.wantT {
					t.Errorf("backend timeout %v, want %v", got.Timeout, tt.wantT)
				}
				return
			}
			if r.status != http.StatusBadRequest || r.err.Code != CodeLimitExceedsCap {
				t.Fatalf("status %d %s (%s), want 400 %s", r.status, r.err.Code, r.err.Message, CodeLimitExceedsCap)
			}
			if n := len(h.fake.Spawns()); n != ran {
				t.Errorf("the backend ran %d spawns over the caps", n-ran)
			}
			if diff := cmp.Diff([]string{"spawn.requested", "spawn.rejected"}, events(recs)); diff != "" {
				t.Fatalf("records (-want +got):\n%s", diff)
			}
			rej := recs[1]
			want := tt.over
			if rej.KeyID != h.key.ID || rej.Role != "probe" || !strings.Contains(rej.Reason, string(CodeLimitExceedsCap)) || !strings.Contains(rej.Reason, want) {
				t.Errorf("rejected record: %+v, want a reason with %q and %q", rej, CodeLimitExceedsCap, want)
			}
		})
	}
}

func TestCapLimitsError(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{MaxLimits: withDefaultCaps(sandbox.Limits{}), MaxTimeout: time.Minute, DefaultTimeout: time.Second}}
	_, err := s.capLimits(sandbox.SpawnRequest{Limits: sandbox.Limits{PIDs: 1 << 20}})
	if !errors.Is(err, errLimitExceedsCap) || !errors.Is(err, sandbox.ErrInvalidRequest) {
		t.Errorf("capLimits = %v, want errLimitExceedsCap and sandbox.ErrInvalidRequest", err)
	}
	if status, resp := errorResponse(err); status != http.StatusBadRequest || resp.Code != CodeLimitExceedsCap {
		t.Errorf("errorResponse = %d %s, want 400 %s", status, resp.Code, CodeLimitExceedsCap)
	}
}

func TestConfigValidateCaps(t *testing.T) {
	t.Parallel()
	for name, l := range map[string]sandbox.Limits{
		"negative memory": {MemoryBytes: -1},
		"negative disk":   {DiskBytes: -1},
		"negative cpus":   {CPUs: -1},
	} {
		c := Config{KeyFile: "k", AuditLog: "a", Socket: "s", Backend: sandbox.Client(nil), BackendName: "x", MaxLimits: l}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "caps") {
			t.Errorf("%s: Validate = %v, want an error about the caps", name, err)
		}
	}
}

// TestEgressIsCapped: a build's egress is held to the server's
// --egress-allow and --egress-allow-private, as its limits are.
func TestEgressIsCapped(t *testing.T) {
	t.Parallel()
	build := func(e sandbox.Egress) sandbox.SpawnRequest {
		return sandbox.SpawnRequest{Role: sandbox.RoleProbe, Build: &sandbox.BuildSpec{Dockerfile: "Dockerfile", Targets: []string{""}, Egress: e}}
	}
	npmOnly, err := egress.ParseCap([]string{"registry.npmjs.org"}, false)
	if err != nil {
		t.Fatal(err)
	}
	anyHost, err := egress.ParseCap([]string{"*"}, false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cap  egress.Cap
		e    sandbox.Egress
		over string // "" when admitted
	}{
		{name: "offline under no cap", e: sandbox.Egress{}},
		{name: "online under no cap", e: sandbox.Egress{Allow: []string{"registry.npmjs.org"}}, over: "egress to registry.npmjs.org is over the cap none"},
		{name: "the npm registry under npm only", cap: npmOnly, e: sandbox.Egress{Allow: []string{"registry.npmjs.org"}}},
		{name: "another host under npm only", cap: npmOnly, e: sandbox.Egress{Allow: []string{"registry.npmjs.org", "evil.example"}}, over: "egress to evil.example is over the cap registry.npmjs.org"},
		{name: "any host under *", cap: anyHost, e: sandbox.Egress{Allow: []string{"evil.example:8443"}, BaseMirrors: true}},
		{name: "private under *", cap: anyHost, e: sandbox.Egress{Allow: []string{"x.example"}, Private: true}, over: "--egress-allow-private"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{cfg: Config{EgressCap: tc.cap, MaxTimeout: time.Hour, DefaultTimeout: time.Minute, MaxLimits: withDefaultCaps(sandbox.Limits{})}}
			_, err := s.capLimits(build(tc.e))
			switch {
			case tc.over == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.over != "" && (err == nil || !errors.Is(err, errLimitExceedsCap) || !strings.Contains(err.Error(), tc.over)):
				t.Fatalf("err %v; want limit_exceeds_cap naming %q", err, tc.over)
			}
		})
	}
}
