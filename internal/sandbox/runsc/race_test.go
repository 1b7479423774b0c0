//go:build race

package runsc

// raceEnabled: the test binary is race-instrumented, so the stand-in images
// are built and served by a helper process (see mirrors).
const raceEnabled = true
