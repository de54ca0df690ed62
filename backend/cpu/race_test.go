//go:build race

package cpu

// raceEnabled: the race detector makes sync.Pool drop items on purpose,
// so the pooled SGEMM calls allocate again.
const raceEnabled = true
