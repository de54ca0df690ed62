//go:build windows

package cuda

import "errors"

// purego has no dlopen on Windows, and the CUDA backend loads the Linux
// libraries' sonames, so every load fails there with this error: the
// program builds, reports CUDA as unavailable and trains on the CPU.
var errNoLoader = errors.New("the CUDA backend loads its libraries on Linux only; this Windows build uses the CPU")

const (
	rtldNow    = 0
	rtldGlobal = 0
	rtldLocal  = 0
)

func dlopen(string, int) (uintptr, error)    { return 0, errNoLoader }
func dlsym(uintptr, string) (uintptr, error) { return 0, errNoLoader }
