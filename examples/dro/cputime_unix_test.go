//go:build unix

package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime is the calling thread's CPU time so far (from the scheduler's
// count, to the nanosecond where the kernel keeps it): a benchmark that
// compares two parts of its own work, run on one goroutine locked to its
// thread, reads it rather than the wall clock, which other programs on
// the machine move.
func cpuTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		// A benchmark that read 0 here would report a share of nothing.
		panic("the thread's CPU clock: " + err.Error())
	}
	return time.Duration(ts.Nano())
}
