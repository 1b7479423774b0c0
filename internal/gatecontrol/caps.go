package gatecontrol

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/codegenie/codegenie/internal/egress"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// Defaults for the zero fields of Config.MaxLimits.
const (
	DefaultMaxMemoryBytes = 1 << 30
	DefaultMaxCPUs        = 1.0
	DefaultMaxPIDs        = 256
	DefaultMaxOutputBytes = 1 << 20
	DefaultMaxDiskBytes   = 10 << 30
)

// errLimitExceedsCap is a request that asks for more of a resource than
// the server's cap. It matches sandbox.ErrInvalidRequest too.
var errLimitExceedsCap = fmt.Errorf("%w: %s", sandbox.ErrInvalidRequest, CodeLimitExceedsCap)

// withDefaultCaps fills the zero fields of l with the package defaults.
func withDefaultCaps(l sandbox.Limits) sandbox.Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultMaxMemoryBytes
	}
	if l.CPUs == 0 {
		l.CPUs = DefaultMaxCPUs
	}
	if l.PIDs == 0 {
		l.PIDs = DefaultMaxPIDs
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = DefaultMaxOutputBytes
	}
	if l.DiskBytes == 0 {
		l.DiskBytes = DefaultMaxDiskBytes
	}
	return l
}

func validCaps(l sandbox.Limits) error {
	if l.MemoryBytes < 0 || l.PIDs < 0 || l.OutputBytes < 0 || l.DiskBytes < 0 || !(l.CPUs >= 0) || math.IsInf(l.CPUs, 0) {
		return fmt.Errorf("invalid limit caps %+v: every cap must be a non-negative, finite number", l)
	}
	return nil
}

// capLimits returns req with the limits and timeout it runs with: each
// zero limit takes the server's cap, a zero timeout the default timeout.
// A request that asks for more than a cap is refused with an error that
// matches errLimitExceedsCap and names every limit over its cap.
func (s *Server) capLimits(req sandbox.SpawnRequest) (sandbox.SpawnRequest, error) {
	caps, asked := s.cfg.MaxLimits, req.Limits
	var over []string
	check := func(name string, asked, limit int64) int64 {
		if asked > limit {
			over = append(over, fmt.Sprintf("%s %d is over the cap %d", name, asked, limit))
		}
		if asked == 0 {
			return limit
		}
		return asked
	}
	req.Limits.MemoryBytes = check("memory_bytes", asked.MemoryBytes, caps.MemoryBytes)
	req.Limits.PIDs = check("pids", asked.PIDs, caps.PIDs)
	req.Limits.OutputBytes = check("output_bytes", asked.OutputBytes, caps.OutputBytes)
	req.Limits.DiskBytes = check("disk_bytes", asked.DiskBytes, caps.DiskBytes)
	switch {
	case asked.CPUs > caps.CPUs:
		over = append(over, fmt.Sprintf("cpus %g is over the cap %g", asked.CPUs, caps.CPUs))
	case asked.CPUs == 0:
		req.Limits.CPUs = caps.CPUs
	}
	switch {
	case req.Timeout > s.cfg.MaxTimeout:
		over = append(over, fmt.Sprintf("timeout %v is over the cap %v", req.Timeout, s.cfg.MaxTimeout))
	case req.Timeout == 0:
		req.Timeout = s.cfg.DefaultTimeout
	}
	over = append(over, s.capEgress(req)...)
	if len(over) > 0 {
		return sandbox.SpawnRequest{}, fmt.Errorf("%w: %s", errLimitExceedsCap, strings.Join(over, "; "))
	}
	return req, nil
}

// capEgress says what of a build's egress the server's cap refuses.
func (s *Server) capEgress(req sandbox.SpawnRequest) []string {
	if req.Build == nil {
		return nil
	}
	e, c := req.Build.Egress, s.cfg.EgressCap
	var over []string
	var want []egress.Rule
	for _, a := range append(slices.Clone(e.Allow), e.Boot...) {
		r, err := egress.ParseRule(a)
		if err != nil {
			over = append(over, fmt.Sprintf("egress rule %q: %v", a, err))
			continue
		}
		want = append(want, r)
	}
	if _, refused := c.Filter(want); len(refused) > 0 {
		names := make([]string, len(refused))
		for i, r := range refused {
			names[i] = r.String()
		}
		over = append(over, fmt.Sprintf("egress to %s is over the cap %s (gate-control serve --egress-allow)", strings.Join(names, ", "), c))
	}
	if e.BaseMirrors && !c.Any && len(c.Rules) == 0 {
		over = append(over, "egress to the base images' mirrors is over the cap none (gate-control serve --egress-allow)")
	}
	if e.Private && !c.Private {
		over = append(over, "egress to private addresses is over the cap (gate-control serve --egress-allow-private)")
	}
	return over
}

// capsString is the caps for the log.
func capsString(l sandbox.Limits, timeout time.Duration) string {
	return fmt.Sprintf("memory_bytes=%d cpus=%g pids=%d output_bytes=%d disk_bytes=%d timeout=%v",
		l.MemoryBytes, l.CPUs, l.PIDs, l.OutputBytes, l.DiskBytes, timeout)
}
