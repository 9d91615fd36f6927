//go:build !race

package pods

const raceEnabled = false
