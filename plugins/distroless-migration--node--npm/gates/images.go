package gates

import (
	"strings"

	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// images are the facts of the original and the rewritten image, from the
// gate spawns that built them; a side that was not built, or whose facts
// the sandbox did not report, is unknown (nil), with the reason.
func images(ev *Evidence) *report.ImageChange {
	c := &report.ImageChange{}
	c.After, c.AfterUnknown = facts(ev.Migrated, ev.MigratedErr)
	switch {
	case ev.Original == nil && ev.OriginalErr != nil:
		c.BeforeUnknown = ev.OriginalErr.Error()
	case ev.Original == nil:
		c.BeforeUnknown = "the original image did not run"
	default:
		c.Before, c.BeforeUnknown = facts(*ev.Original, ev.OriginalErr)
	}
	return c
}

// facts are a gate spawn's image facts, or why there are none.
func facts(res sandbox.Result, err error) (*sandbox.ImageFacts, string) {
	if ok, why := builtResult(res, err); !ok {
		// The failing phase and its exit; its output is in the gates.
		why, _, _ = strings.Cut(why, ": ")
		return nil, "the image was not built here: " + why
	}
	if res.ImageFacts == nil {
		return nil, "the sandbox reported no facts of the image"
	}
	return res.ImageFacts, ""
}
