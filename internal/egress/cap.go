package egress

import (
	"fmt"
	"strings"
)

// Cap is what gate-control lets any request's egress ask for (`serve
// --egress-allow`, `--egress-allow-private`), the way --memory caps
// memory: a request that asks for more is refused.
type Cap struct {
	// Any allows every public destination ("*").
	Any bool
	// Rules are the destinations allowed when Any is false.
	Rules []Rule
	// Private lets requests reach loopback, private, link-local and
	// metadata addresses (Policy.AllowPrivate).
	Private bool
}

// ParseCap reads --egress-allow values: "*" for any public destination,
// "none" for no egress at all, else HOST[:PORT] rules.
func ParseCap(values []string, private bool) (Cap, error) {
	c := Cap{Private: private}
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			switch f = strings.TrimSpace(f); f {
			case "":
			case "*":
				c.Any = true
			case "none":
			default:
				r, err := ParseRule(f)
				if err != nil {
					return Cap{}, fmt.Errorf("--egress-allow %q: %w", f, err)
				}
				c.Rules = append(c.Rules, r)
			}
		}
	}
	return c, nil
}

// Filter splits want into the rules the cap allows and those it refuses.
func (c Cap) Filter(want []Rule) (ok, refused []Rule) {
	if c.Any {
		return want, nil
	}
	return Capped(want, c.Rules)
}

// String is the cap as the log shows it.
func (c Cap) String() string {
	var parts []string
	if c.Any {
		parts = append(parts, "*")
	}
	for _, r := range c.Rules {
		parts = append(parts, r.String())
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	if c.Private {
		parts = append(parts, "private")
	}
	return strings.Join(parts, ",")
}
