//go:build race

package main

const (
	ingestGuardBytes = 4 << 20
	ingestGuardLimit = 120.0 // measured 14–21
)
