//go:build !race

package runsc

const raceEnabled = false
