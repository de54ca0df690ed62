//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPUTime is the user plus system CPU time of the whole process (all
// threads, OpenBLAS's included), or false where it cannot be read.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
