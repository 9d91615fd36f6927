//go:build !race

package main

const (
	ingestGuardBytes = 24 << 20
	ingestGuardLimit = 40.0 // measured 6–13
)
