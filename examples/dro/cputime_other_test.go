//go:build !unix || netbsd || aix

package main

import "time"

var clockStart = time.Now()

// readClocks falls back to the wall clock, for both, where the CPU clocks
// are not at hand.
func readClocks() cpuClocks {
	d := time.Since(clockStart)
	return cpuClocks{d, d}
}
