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
	"path/filepath"
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
		t.Fatalf("%s (CI=true: a failure, not a skip)", msg)
		return
	}
	t.Skip(msg)
}

// DataEnv names the environment variable that points the tests at their
// data fixtures (the layout of the shared data folder: cifar10/,
// cifar100/, svhn/). scripts/test.sh sets it to a cache it fills through
// scripts/fetch_data.sh in a clone that has no ../shared/data beside it.
const DataEnv = "SIMCLR_TEST_DATA"

// DataDir returns the test-data folder: $SIMCLR_TEST_DATA when set, else
// shared/data beside the repository root (the folder holding go.mod above
// the working directory). A missing folder skips the test, or fails it
// under CI=true.
func DataDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(DataEnv); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			t.Fatalf("%s=%s: %v", DataEnv, d, err)
		}
		if _, err := os.Stat(abs); err != nil {
			Missing(t, "test data missing: %s=%s: %v (scripts/test.sh fills it)", DataEnv, d, err)
		}
		return abs
	}
	d := filepath.Join(filepath.Dir(ModuleRoot(t)), "shared", "data")
	if _, err := os.Stat(d); err != nil {
		Missing(t, "test data missing: no %s beside the checkout and %s unset (scripts/test.sh fetches the fixtures into a cache)", d, DataEnv)
	}
	return d
}

// ModuleRoot returns the repository root: the folder holding go.mod above
// the working directory (a test's package folder).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatalf("no go.mod above %s: cannot locate the repository root", wd)
		}
	}
}

// DataFile returns the path of rel under DataDir, skipping the test (or
// failing it under CI=true) when the file is absent.
func DataFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(DataDir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		Missing(t, "test data file missing: %v (scripts/test.sh fetches the fixtures it can)", err)
	}
	return p
}
