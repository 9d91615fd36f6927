//go:build race

package diagnose

// scaleLimit is TestScale1000Ranks' bound on reading and rendering 1,024
// ranks. The race detector slows this code 5–10×: the 5 s a user waits at
// most is checked without it (go test -short skips the test, go test
// without -race checks 5 s); under -race only a gross regression fails.
const scaleLimit = 60e9
