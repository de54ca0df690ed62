//go:build !windows

package cuda

import "github.com/ebitengine/purego"

// The dynamic loader, through purego (no cgo). dl_windows.go has the
// stubs for the platform where purego has no dlopen.
const (
	rtldNow    = purego.RTLD_NOW
	rtldGlobal = purego.RTLD_GLOBAL
	rtldLocal  = purego.RTLD_LOCAL
)

func dlopen(path string, mode int) (uintptr, error) { return purego.Dlopen(path, mode) }
func dlsym(handle uintptr, name string) (uintptr, error) {
	return purego.Dlsym(handle, name)
}
