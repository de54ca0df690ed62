// Package cudainstall reads what an installation records about a CUDA
// library without loading it (an NVIDIA Python wheel's metadata, Debian's
// package file lists): the CUDA backend asks it of cuDNN and the
// collectives of NCCL, so that every library of a process comes from one
// CUDA major.
package cudainstall

import (
	"path/filepath"
	"strconv"
	"strings"
)

// WheelMajor is the CUDA major of the library at path when path lies in a
// wheel's site-packages/nvidia/NAME/lib folder and exactly one
// nvidia_NAME_cuMAJOR-*.dist-info sits beside the nvidia/ folder; it
// returns the major and "its wheel DIST-INFO", or 0 and "" otherwise (no
// wheel, or the metadata of several majors, which cannot tell them apart).
func WheelMajor(path, name string) (int, string) {
	dir := filepath.Dir(path)
	if filepath.Base(dir) != "lib" || filepath.Base(filepath.Dir(dir)) != name || filepath.Base(filepath.Dir(filepath.Dir(dir))) != "nvidia" {
		return 0, ""
	}
	site := filepath.Dir(filepath.Dir(filepath.Dir(dir)))
	prefix := "nvidia_" + name + "_cu"
	m, _ := filepath.Glob(filepath.Join(site, prefix+"*-*.dist-info"))
	majors := map[int]string{}
	for _, d := range m {
		dist := filepath.Base(d)
		v, _, _ := strings.Cut(strings.TrimPrefix(dist, prefix), "-")
		if n, err := strconv.Atoi(v); err == nil {
			majors[n] = dist
		}
	}
	if len(majors) != 1 {
		return 0, ""
	}
	for n, dist := range majors {
		return n, "its wheel " + dist
	}
	return 0, ""
}
