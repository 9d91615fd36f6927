//go:build !race

package podresources

const raceEnabled = false
