//go:build !race

package blas

// raceEnabled: the race detector makes sync.Pool drop items on purpose.
const raceEnabled = false
