package cuda

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// TestNVRTCCompilesKernels compiles kernelSource with the NVRTC found on
// this machine (no GPU needed: NVRTC is a compiler), for a CUBIN and for
// PTX, and checks every kernel of kernelSigs is in the PTX with its
// parameter count. Skipped where no NVRTC is installed (on Debian:
// apt-get install libnvrtc11.2 from non-free; or pip nvidia-cuda-nvrtc-cu12).
func TestNVRTCCompilesKernels(t *testing.T) {
	lib, err := openLibrary(defaultSearchEnv().search(), specNvrtc, "")
	if err != nil {
		testenv.Missing(t, "no NVRTC here (Debian: apt-get install libnvrtc11.2 from non-free): %v", err)
	}
	// As loadLibraries does: NVRTC opens its builtins by soname.
	if err := preloadSiblings(filepath.Dir(lib.path), nvrtcBuiltins(lib.path)); err != nil {
		t.Fatal(err)
	}
	var n nvrtcAPI
	if err := n.load(lib); err != nil {
		t.Fatal(err)
	}
	major, minor := n.versionNumbers()
	t.Logf("NVRTC %d.%d at %s", major, minor, lib.path)
	arch := "sm_80"
	c, err := n.compile(kernelSource, "--gpu-architecture="+arch, true)
	if err != nil {
		t.Fatalf("compile for %s: %v", arch, err)
	}
	if c.kind != "cubin" || len(c.image) < 1000 || string(c.image[1:4]) != "ELF" {
		t.Fatalf("CUBIN: kind %s, %d bytes, starts %q", c.kind, len(c.image), c.image[:min(4, len(c.image))])
	}
	if testing.Short() {
		return
	}
	// compute_80: NVRTC 13 no longer knows Volta (compute_70).
	p, err := n.compile(kernelSource, "--gpu-architecture=compute_80", false)
	if err != nil {
		t.Fatalf("compile to PTX: %v", err)
	}
	ptx := string(p.image)
	for name, sig := range kernelSigs {
		i := strings.Index(ptx, ".entry "+name+"(")
		if i < 0 {
			t.Errorf("PTX lacks kernel %s", name)
			continue
		}
		end := strings.Index(ptx[i:], ")")
		var kinds []byte
		for _, decl := range strings.Split(ptx[i:i+end], ".param ")[1:] {
			switch {
			case strings.HasPrefix(decl, ".u64"):
				kinds = append(kinds, 'p')
			case strings.HasPrefix(decl, ".u32"), strings.HasPrefix(decl, ".s32"):
				kinds = append(kinds, 'i')
			case strings.HasPrefix(decl, ".f32"):
				kinds = append(kinds, 'f')
			case strings.HasPrefix(decl, ".f64"):
				kinds = append(kinds, 'd')
			default:
				kinds = append(kinds, '?')
			}
		}
		if string(kinds) != sig {
			t.Errorf("PTX kernel %s has parameters %q, kernelSigs %q", name, kinds, sig)
		}
	}
	// A kernel that does not compile must give NVRTC's log in the error.
	_, err = n.compile(kernelSource+"\nextern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }\n", "--gpu-architecture="+arch, true)
	if err == nil || !strings.Contains(err.Error(), "undefined_name") {
		t.Fatalf("broken source: error %v does not carry the compiler log", err)
	}
}
