// Package testenv decides what a test does when something it needs from
// the machine is absent (OpenBLAS, NVRTC, a C compiler): on a developer's
// machine it skips, saying what is missing; under CI (the environment
// variable CI=true, which .ci/run's runners set) it fails, because .ci/run
// installs those things and a CI run that skipped them would be green
// without having tested the OpenBLAS path or compiled a CUDA kernel.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Strict reports whether missing prerequisites fail tests (CI=true).
func Strict() bool { return os.Getenv("CI") == "true" }

// Missing skips t, or fails it under CI=true, with the message
// fmt.Sprintf(format, args...) naming what is missing and how to get it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		t.Fatalf("%s; CI=true requires it (.ci/run installs it)", msg)
		return
	}
	t.Skip(msg)
}
