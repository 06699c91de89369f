//go:build race

package testutil

// RaceEnabled reports whether the binary was built with -race, which slows
// everything down and makes sync.Pool drop items at random.
const RaceEnabled = true
