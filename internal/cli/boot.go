package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
)

// bootFlags say how long traced builds and boots run: a build step at
// most --step-timeout; a boot until the service has answered and settled,
// or has exited, and at most --boot-for.
type bootFlags struct {
	max, settle, step time.Duration
}

// register adds --boot-for and --settle; what names the boot ("the traced
// boot", "each gate boot").
func (f *bootFlags) register(fl *pflag.FlagSet, what string) {
	fl.DurationVar(&f.max, "boot-for", shelltrace.DefaultBootFor, "the longest "+what+" runs the image: it ends sooner once the service has answered every request and its HEALTHCHECK and then settled, or has exited")
	fl.DurationVar(&f.settle, "settle", sandbox.DefaultSettle, "how long "+what+" must go without an exec, after the service answered, before it ends; a shell that starts later than that is not seen")
	fl.DurationVar(&f.step, "step-timeout", sandbox.DefaultStepTimeout, "the longest one build step may run; a step past it is stopped, and the trace reports a timeout with what it saw up to then")
}

// validate checks the flags.
func (f *bootFlags) validate() error {
	if f.max <= 0 || f.settle <= 0 || f.step <= 0 {
		return usageErr("--boot-for, --settle and --step-timeout must be positive")
	}
	if f.settle >= f.max {
		return usageErr("--settle %s must be shorter than --boot-for %s", f.settle, f.max)
	}
	return nil
}
