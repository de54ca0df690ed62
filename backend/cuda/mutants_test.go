package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/simclr-go/simclr/backend/cuda/cudaemu"
	"github.com/simclr-go/simclr/tensor"
)

// useEmulator points t at the CUDA emulator. Where a real driver opens it
// skips, unless SIMCLR_CUDA_EMULATOR=1 (as the parity tests, which run on
// the emulator only then): the emulated libcuda.so.1 is loaded with
// RTLD_GLOBAL and would then stand in for the real one under the real
// cuBLAS and cuDNN of later tests.
func useEmulator(t *testing.T) {
	t.Helper()
	if os.Getenv("SIMCLR_CUDA_EMULATOR") != "1" {
		if p, ok := realDriverOpens(); ok {
			t.Skipf("a real driver opens (%s): the emulator's own tests run with SIMCLR_CUDA_EMULATOR=1", p)
		}
	}
	cudaemu.Use(t)
}

// dotCheck compares Dot on the backend with a float64 sum on the host, for
// a length that needs many blocks and several partial sums per thread of
// the second pass.
func dotCheck(b *Backend) error {
	r := rand.New(rand.NewPCG(3, 4))
	n := 300_001
	x, y := make([]float32, n), make([]float32, n)
	var want float64
	for i := range x {
		x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		want += float64(x[i]) * float64(y[i])
	}
	xb, yb := b.Alloc(n), b.Alloc(n)
	defer b.Free(xb)
	defer b.Free(yb)
	b.Upload(xb, x)
	b.Upload(yb, y)
	got := b.Dot(xb, yb)
	if err := b.Sync(); err != nil {
		return err
	}
	if d := math.Abs(got - want); !(d <= 1e-9*math.Sqrt(float64(n))) {
		return fmt.Errorf("Dot = %.12g, host %.12g", got, want)
	}
	return nil
}

// groupNormCheck compares GroupNormForward's output and saved statistics
// with a float64 computation on the host: two block sums in a row in
// k_gn_fwd share one __shared__ array, and every thread uses their totals.
func groupNormCheck(b *Backend) error {
	s := tensor.GNShape{N: 2, C: 8, HW: 300, G: 4, Eps: 1e-5}
	r := rand.New(rand.NewPCG(5, 6))
	n := s.N * s.C * s.HW
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(3 + 2*r.NormFloat64())
	}
	ones, zeros := make([]float32, s.C), make([]float32, s.C)
	for i := range ones {
		ones[i] = 1
	}
	xb, yb, gb, bb := b.Alloc(n), b.Alloc(n), b.Alloc(s.C), b.Alloc(s.C)
	mb, ib := b.Alloc(s.N*s.G), b.Alloc(s.N*s.G)
	for _, buf := range []tensor.Buffer{xb, yb, gb, bb, mb, ib} {
		defer b.Free(buf)
	}
	b.Upload(xb, x)
	b.Upload(gb, ones)
	b.Upload(bb, zeros)
	b.GroupNormForward(s, xb, gb, bb, yb, mb, ib)
	y, mean, inv := make([]float32, n), make([]float32, s.N*s.G), make([]float32, s.N*s.G)
	b.Download(y, yb)
	b.Download(mean, mb)
	b.Download(inv, ib)
	if err := b.Sync(); err != nil {
		return err
	}
	m := s.C / s.G * s.HW
	for ng := range mean {
		var sum, sq float64
		for _, v := range x[ng*m : (ng+1)*m] {
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
		mu := sum / float64(m)
		want := 1 / math.Sqrt(sq/float64(m)-mu*mu+float64(s.Eps))
		if math.Abs(float64(mean[ng])-mu) > 1e-5*math.Abs(mu) || math.Abs(float64(inv[ng])-want) > 1e-5*want {
			return fmt.Errorf("group %d: mean %g invstd %g, host %g %g", ng, mean[ng], inv[ng], mu, want)
		}
		for i := ng * m; i < (ng+1)*m; i++ {
			if yh := (float64(x[i]) - mu) * want; math.Abs(float64(y[i])-yh) > 1e-5*(1+math.Abs(yh)) {
				return fmt.Errorf("y[%d] = %g, host %g", i, y[i], yh)
			}
		}
	}
	return nil
}

// TestEmulatorCatchesKernelMutants shows that the emulator runs the kernels
// as written: each mutant below (an off-by-one in a reduction, a missing
// __syncthreads in the block reduction, one missing after it) compiled in
// place of the shipped source makes its check fail, while the shipped
// source passes it. The mutants exist only in this test.
func TestEmulatorCatchesKernelMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels once per mutant")
	}
	useEmulator(t)
	mutants := []struct {
		name     string
		old, new string
		check    func(*Backend) error
	}{
		{"shipped source", "", "", nil},
		{"off-by-one in k_sum_partials", "for (int i = threadIdx.x; i < m; i += BLOCK) acc += partial[i];",
			"for (int i = threadIdx.x; i < m - 1; i += BLOCK) acc += partial[i];", dotCheck},
		{"no __syncthreads between the steps of block_sum", "if (t < s) sh[t] += sh[t + s];\n        __syncthreads();",
			"if (t < s) sh[t] += sh[t + s];", dotCheck},
		{"no __syncthreads at the end of block_sum", "double r = sh[0];\n    __syncthreads();\n    return r;\n}\n\n__device__ double block_max",
			"double r = sh[0];\n    return r;\n}\n\n__device__ double block_max", groupNormCheck},
	}
	shipped := kernelSource
	t.Cleanup(func() { kernelSource = shipped })
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			kernelSource = shipped
			if m.old != "" {
				if c := strings.Count(shipped, m.old); c != 1 {
					t.Fatalf("the text to mutate occurs %d times in the kernel source, want once", c)
				}
				kernelSource = strings.Replace(shipped, m.old, m.new, 1)
			}
			b, err := Open(Options{Precision: "fp32", CacheDir: "-"})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if m.check == nil {
				for _, check := range []func(*Backend) error{dotCheck, groupNormCheck} {
					if err := check(b); err != nil {
						t.Errorf("the shipped kernels fail the check: %v", err)
					}
				}
				return
			}
			if err := m.check(b); err == nil {
				t.Errorf("the mutant passes the check: the emulator did not expose it")
			} else {
				t.Logf("caught: %v", err)
			}
		})
	}
}

// TestEmulatorIsStrict checks that the emulator refuses what a GPU would
// fault on, so that a test passing on it means something: a host pointer
// as a kernel argument, a copy past the end of device memory, a call with
// no current context, and a __syncthreads that part of a block never
// reaches.
func TestEmulatorIsStrict(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels twice")
	}
	useEmulator(t)
	open := func(t *testing.T) *Backend {
		b, err := Open(Options{Precision: "fp32", CacheDir: "-"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	wantErr := func(t *testing.T, err error, code int) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Code != code {
			t.Fatalf("error %v, want CUresult %d", err, code)
		}
		t.Logf("refused: %v", err)
	}
	t.Run("host pointer argument", func(t *testing.T) {
		b := open(t)
		host := make([]float32, 16)
		b.enter()
		b.launch("k_scale", 1, 1, uint64(uintptr(unsafe.Pointer(&host[0]))), float32(2), 16)
		b.leave()
		runtime.KeepAlive(host)
		wantErr(t, b.Sync(), 700) // CUDA_ERROR_ILLEGAL_ADDRESS
	})
	t.Run("copy past the end", func(t *testing.T) {
		b := open(t)
		x := b.Alloc(4).(*devBuf)
		past := &devBuf{ptr: b.arena.chunks[0].base + b.arena.chunks[0].size - 8, n: 4}
		b.Copy(past, x)
		wantErr(t, b.Sync(), 1) // CUDA_ERROR_INVALID_VALUE
	})
	t.Run("no current context", func(t *testing.T) {
		b := open(t)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		d := &b.libs.driver
		if err := d.check("cuCtxSetCurrent(NULL)", mustCall(d.cuCtxSetCurrent, 0)); err != nil {
			t.Fatal(err)
		}
		var free, total uint64
		r := mustCall(d.cuMemGetInfo, uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total)))
		wantErr(t, d.check("cuMemGetInfo", r), 201) // CUDA_ERROR_INVALID_CONTEXT
	})
	t.Run("divergent __syncthreads", func(t *testing.T) {
		shipped := kernelSource
		defer func() { kernelSource = shipped }()
		old := "if (t < s) sh[t] += sh[t + s];\n        __syncthreads();"
		if strings.Count(shipped, old) != 1 {
			t.Fatal("the text to mutate is not in the kernel source once")
		}
		kernelSource = strings.Replace(shipped, old, "if (t < s) { sh[t] += sh[t + s]; if (t == 0) return 0; __syncthreads(); }", 1)
		b := open(t)
		x := b.Alloc(1000)
		b.Dot(x, x)
		wantErr(t, b.Sync(), 719) // CUDA_ERROR_LAUNCH_FAILED
	})
}
