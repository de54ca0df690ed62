package cuda

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// openReal opens the backend on a real GPU when one is usable (unless
// SIMCLR_CUDA_EMULATOR=1), else on the emulator, so that the compiled test
// binary checks the kernels on the device it runs on.
func openReal(t *testing.T, precision string) *Backend {
	t.Helper()
	if os.Getenv("SIMCLR_CUDA_EMULATOR") != "1" {
		if b, err := Open(Options{Precision: precision, CacheDir: "-"}); err == nil {
			t.Cleanup(func() { b.Close() })
			return b
		} else {
			t.Logf("no usable GPU (%v): running on the CUDA emulator", err)
		}
	}
	useEmulator(t)
	b, err := Open(Options{Precision: precision})
	if err != nil {
		t.Fatalf("open the CUDA backend on the emulator: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// roundBF16 is the reference rounding of the bf16 kernels: to the nearest
// value with 8 significant bits (7 stored), ties to even, NaN kept a NaN.
// It goes through float64 arithmetic rather than the kernels' bit trick:
// the spacing of bf16 numbers at x is 2^(e-7) for x in [2^e, 2^(e+1)).
func roundBF16(x float32) uint16 {
	bits := math.Float32bits(x)
	if x != x {
		return uint16(bits>>16) | 0x40
	}
	if math.IsInf(float64(x), 0) || x == 0 {
		return uint16(bits >> 16)
	}
	v := math.Abs(float64(x))
	_, e := math.Frexp(v) // v = f 2^e, f in [0.5, 1)
	e--                   // v in [2^e, 2^(e+1))
	if e < -126 {
		e = -126 // subnormals share the smallest normal's spacing
	}
	ulp := math.Ldexp(1, e-7)
	r := math.RoundToEven(v/ulp) * ulp
	if r > math.MaxFloat32 || r >= math.Ldexp(1, 128) {
		r = math.Inf(1)
	}
	out := uint16(math.Float32bits(float32(r)) >> 16)
	if math.Signbit(float64(x)) {
		out |= 0x8000
	}
	return out
}

func widenBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// TestBF16Kernels checks the three conversion kernels bit for bit against
// roundBF16 and the layouts: k_to_bf16 on special values (ties to even in
// both directions, the largest float rounding to infinity, subnormals,
// NaN, signed zeros) and random ones; k_nchw_to_nhwc_bf16 on random
// arrays; and k_nhwc_bf16_to_nchw back, which must give each rounded value
// at its NCHW place exactly (widening is exact).
func TestBF16Kernels(t *testing.T) {
	b := openReal(t, "fp32") // the kernels exist at every precision
	special := []float32{
		0, float32(math.Copysign(0, -1)), 1, -1,
		math.Float32frombits(0x3f808000),  // 1 + 2^-8: a tie, rounds down to even 1
		math.Float32frombits(0x3f818000),  // 1 + 3 2^-8: a tie, rounds up to even
		math.Float32frombits(0x3f808001),  // just above a tie: rounds up
		math.Float32frombits(0x3f807fff),  // just below a tie: rounds down
		math.MaxFloat32, -math.MaxFloat32, // round past the largest bf16: infinity
		math.Float32frombits(0x7f7f7fff), // rounds down to the largest bf16
		math.SmallestNonzeroFloat32, math.Float32frombits(0x00018000),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0x7f800001), // a signalling NaN whose payload sits in the dropped half
		3.14159265, -2.71828, 1e-30, 6.5e4,
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 4000 {
		special = append(special, float32(r.NormFloat64()*math.Pow(10, float64(r.IntN(20)-10))))
	}
	for range 1000 { // random bit patterns: every exponent and mantissa
		special = append(special, math.Float32frombits(r.Uint32()))
	}
	n := len(special)
	x := b.Alloc(n)
	defer b.Free(x)
	b.Upload(x, special)
	got := make([]uint16, n)
	b.enter()
	p := b.toBF16("test bf16 copy", b.ptr(x), n)
	b.copyToHost(unsafe.Pointer(&got[0]), p, 2*n)
	b.leave()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, v := range special {
		want := roundBF16(v)
		if v != v {
			if widen := widenBF16(got[i]); widen == widen {
				t.Errorf("k_to_bf16(NaN %#08x) = %#04x, not a NaN", math.Float32bits(v), got[i])
			}
			continue
		}
		if got[i] != want {
			if bad++; bad <= 10 {
				t.Errorf("k_to_bf16(%g = %#08x) = %#04x, want %#04x", v, math.Float32bits(v), got[i], want)
			}
		}
	}

	for _, sh := range []struct{ n, c, hw int }{{1, 1, 1}, {2, 3, 5}, {3, 64, 16}, {2, 7, 49}, {2, 33, 65}, {1, 70, 9}, {2, 64, 64}} {
		size := sh.n * sh.c * sh.hw
		host := make([]float32, size)
		for i := range host {
			host[i] = float32(r.NormFloat64() * 3)
		}
		xb, yb := b.Alloc(size), b.Alloc(size)
		b.Upload(xb, host)
		nhwc := make([]uint16, size)
		b.enter()
		p := b.toBF16NHWC("test bf16 nhwc", b.ptr(xb), sh.n, sh.c, sh.hw)
		b.copyToHost(unsafe.Pointer(&nhwc[0]), p, 2*size)
		b.fromBF16NHWC(p, b.ptr(yb), sh.n, sh.c, sh.hw)
		b.leave()
		back := make([]float32, size)
		b.Download(back, yb)
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		for img := range sh.n {
			for ch := range sh.c {
				for q := range sh.hw {
					src := (img*sh.c+ch)*sh.hw + q
					dst := (img*sh.hw+q)*sh.c + ch
					want := roundBF16(host[src])
					if nhwc[dst] != want {
						t.Fatalf("%v: k_nchw_to_nhwc_bf16 at (n %d, c %d, p %d) = %#04x, want %#04x", sh, img, ch, q, nhwc[dst], want)
					}
					if back[src] != widenBF16(want) {
						t.Fatalf("%v: k_nhwc_bf16_to_nchw at (n %d, c %d, p %d) = %g, want %g", sh, img, ch, q, back[src], widenBF16(want))
					}
				}
			}
		}
		b.Free(xb)
		b.Free(yb)
	}
}

// TestBF16Refusals: bf16 asked of a GPU before sm_80 or of a cuDNN without
// bf16 convolutions is one error naming what is missing, not an fp32 run.
func TestBF16Refusals(t *testing.T) {
	useEmulator(t)
	for _, tc := range []struct {
		env, val string
		want     []string
	}{
		{"SIMCLR_CUDA_EMU_CC", "75", []string{"compute capability 8.0", "sm_75"}},
		{"SIMCLR_CUDA_EMU_CUDNN_NO_BF16", "1", []string{"bf16 convolutions", "cuDNN", "CUDNN_STATUS_NOT_SUPPORTED"}},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.val)
			b, err := Open(Options{Precision: "bf16"})
			if err == nil {
				b.Close()
				t.Fatalf("Open(bf16) with %s=%s succeeded", tc.env, tc.val)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open(bf16) error %q does not name %q", err, w)
				}
			}
			// The same device and libraries serve fp32.
			b, err = Open(Options{Precision: "fp32"})
			if err != nil {
				t.Fatalf("Open(fp32) with %s=%s: %v", tc.env, tc.val, err)
			}
			b.Close()
		})
	}
}

// BenchmarkBF16Conversions times the layout changes of the bf16 precision
// on the largest activation of a ResNet-18 step at 512 images (1,024 views
// of 64 channels, 32x32): a convolution's step converts about six arrays
// of that size. It needs a GPU.
func BenchmarkBF16Conversions(bm *testing.B) {
	b, err := Open(Options{Precision: "bf16"})
	if err != nil {
		bm.Skipf("no usable GPU: %v", err)
	}
	defer b.Close()
	const n, c, hw = 1024, 64, 32 * 32
	x, y := b.Alloc(n*c*hw), b.Alloc(n*c*hw)
	for _, dir := range []string{"narrow", "widen"} {
		bm.Run(dir, func(bm *testing.B) {
			b.enter()
			p := b.scratchLocked("benchmark bf16 copy", n*c*hw*2)
			b.leave()
			for i := 0; i < bm.N; i++ {
				b.enter()
				if dir == "narrow" {
					b.narrowNHWC(b.ptr(x), p, n, c, hw)
				} else {
					b.fromBF16NHWC(p, b.ptr(y), n, c, hw)
				}
				b.leave()
			}
			if err := b.Sync(); err != nil {
				bm.Fatal(err)
			}
			bm.ReportMetric(float64(n*c*hw*6)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
