//go:build race

package pods

// raceEnabled: the race detector multiplies memory, so RSS bounds are not
// measured under it.
const raceEnabled = true
