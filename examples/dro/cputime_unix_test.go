//go:build unix && !netbsd && !aix

package main

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// readClocks reads the calling thread's and the process's CPU time so far
// (from the scheduler's count, to the nanosecond where the kernel keeps
// it): a benchmark that compares two parts of its own work, run on one
// goroutine locked to its thread, reads them rather than the wall clock,
// which other programs on the machine move.
func readClocks(tb testing.TB) cpuClocks {
	var th, pr unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &th); err != nil {
		// A benchmark that read 0 here would report a share of nothing.
		tb.Fatalf("the thread's CPU clock: %v (run the benchmark where CLOCK_THREAD_CPUTIME_ID is kept)", err)
	}
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &pr); err != nil {
		tb.Fatalf("the process's CPU clock: %v (run the benchmark where CLOCK_PROCESS_CPUTIME_ID is kept)", err)
	}
	return cpuClocks{time.Duration(th.Nano()), time.Duration(pr.Nano())}
}
