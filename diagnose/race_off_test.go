//go:build !race

package diagnose

// scaleLimit is TestScale1000Ranks' bound on reading and rendering 1,024
// ranks: what a user waits at most (measured 0.4–1.2 s on the shared 2-core
// test machine).
const scaleLimit = 5e9
