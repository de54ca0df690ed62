//go:build !unix

package loader

// processCPUSeconds is not measured here.
func processCPUSeconds() float64 { return 0 }
