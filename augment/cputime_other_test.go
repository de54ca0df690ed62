//go:build !unix

package augment

// processCPUSeconds is not measured here.
func processCPUSeconds() float64 { return 0 }
