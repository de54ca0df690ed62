package ref

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randomZ(rng *rand.Rand, rows, d int) []float32 {
	z := make([]float32, rows*d)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	return z
}

func TestNTXentHandComputed(t *testing.T) {
	// Two images, d = 2, tau = 0.5. Normalised rows:
	//   u0 = (0.6, 0.8), u1 = (1, 0), u2 = (0, 1), u3 = (-1, 1)/sqrt(2).
	// Cosines: s01 = 0.6, s02 = 0.8, s03 = 0.2/sqrt(2) = 0.1414214,
	//          s12 = 0, s13 = -0.7071068, s23 = 0.7071068.
	// l(0,1) = log(e^1.2 + e^1.6 + e^0.2828427) - 1.2          = 1.0617679
	// l(1,0) = log(e^1.2 + e^0   + e^-1.4142136) - 1.2         = 0.3180315
	// l(2,3) = log(e^1.6 + e^0   + e^1.4142136) - 1.4142136    = 0.8949779
	// l(3,2) = log(e^0.2828427 + e^-1.4142136 + e^1.4142136) - 1.4142136 = 0.3233121
	// L = (1.0617679 + 0.3180315 + 0.8949779 + 0.3233121) / 4 = 0.6495223
	z := []float32{3, 4, 1, 0, 0, 2, -1, 1}
	dz := make([]float32, len(z))
	value, full := NTXent(2, 2, 0.5, false, z, dz)
	const want = 0.6495223477234515
	if math.Abs(value-want) > 1e-6 || value != full {
		t.Fatalf("NTXent = (%.9f, %.9f), want (%.9f, same)", value, full, want)
	}
	// With two images each half holds one image, whose loss is 0, so the
	// multilevel value equals the full loss.
	ml, mlFull := NTXent(2, 2, 0.5, true, z, dz)
	if math.Abs(ml-want) > 1e-6 || math.Abs(mlFull-want) > 1e-6 {
		t.Fatalf("multilevel NTXent = (%.9f, %.9f), want (%.9f, %.9f)", ml, mlFull, want, want)
	}
	// A single image has loss 0 and zero gradient.
	one := make([]float32, 4)
	v, _ := NTXent(1, 2, 0.5, false, z[:4], one)
	if math.Abs(v) > 1e-12 {
		t.Fatalf("one image: loss %g, want 0", v)
	}
	for i, g := range one {
		if math.Abs(float64(g)) > 1e-7 {
			t.Fatalf("one image: dz[%d] = %g, want 0", i, g)
		}
	}
}

func TestNTXentGradientFiniteDifferences(t *testing.T) {
	cases := []struct {
		name       string
		n, d       int
		tau        float64
		multilevel bool
	}{
		{"plain n=2 d=3", 2, 3, 0.5, false},
		{"plain n=5 d=7", 5, 7, 0.2, false},
		{"multilevel n=4 d=6", 4, 6, 0.5, true},
		{"multilevel n=8 d=5", 8, 5, 0.1, true},
		{"multilevel large parallel n=40 d=200", 40, 200, 0.5, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.d)))
			z := randomZ(rng, 2*tc.n, tc.d)
			dz := make([]float32, len(z))
			value, _ := NTXent(tc.n, tc.d, tc.tau, tc.multilevel, z, dz)
			z64 := make([]float64, len(z))
			for i, v := range z {
				z64[i] = float64(v)
			}
			if ref := NTXentLoss64(tc.n, tc.d, tc.tau, tc.multilevel, z64); math.Abs(value-ref) > 1e-9*math.Max(1, math.Abs(ref)) {
				t.Fatalf("value %.12f, float64 reference %.12f", value, ref)
			}
			// Central differences on a sample of coordinates (all of them
			// for small cases). Tolerance: dz is float32 (rel 1e-6) and the
			// O(h^2) truncation error is ~1e-10; allow 1e-5 abs + 1e-4 rel.
			const h = 1e-5
			step := 1
			if len(z) > 200 {
				step = len(z) / 41
			}
			for i := 0; i < len(z); i += step {
				orig := z64[i]
				z64[i] = orig + h
				up := NTXentLoss64(tc.n, tc.d, tc.tau, tc.multilevel, z64)
				z64[i] = orig - h
				down := NTXentLoss64(tc.n, tc.d, tc.tau, tc.multilevel, z64)
				z64[i] = orig
				fd := (up - down) / (2 * h)
				if got := float64(dz[i]); math.Abs(got-fd) > 1e-5+1e-4*math.Abs(fd) {
					t.Errorf("dz[%d] = %.8g, finite difference %.8g", i, got, fd)
				}
			}
		})
	}
}

func TestNTXentMultilevelIsDifferenceOfThreeLosses(t *testing.T) {
	for _, n := range []int{2, 4, 6, 16, 128} {
		const d, tau = 32, 0.5
		rng := rand.New(rand.NewPCG(7, uint64(n)))
		z := randomZ(rng, 2*n, d)
		dz := make([]float32, len(z))
		value, full := NTXent(n, d, tau, true, z, dz)

		dzB := make([]float32, len(z))
		lB, _ := NTXent(n, d, tau, false, z, dzB)
		half := n * d // rows [0, n) are B1, [n, 2n) are B2
		dz1 := make([]float32, half)
		l1, _ := NTXent(n/2, d, tau, false, z[:half], dz1)
		dz2 := make([]float32, half)
		l2, _ := NTXent(n/2, d, tau, false, z[half:], dz2)

		if want := lB - (l1+l2)/2; math.Abs(value-want) > 1e-12 || math.Abs(full-lB) > 1e-12 {
			t.Errorf("n=%d: multilevel (%.12f, %.12f), separate calls give (%.12f, %.12f)", n, value, full, want, lB)
		}
		for i := range dz {
			var part float32
			if i < half {
				part = dz1[i]
			} else {
				part = dz2[i-half]
			}
			want := dzB[i] - part/2
			if math.Abs(float64(dz[i]-want)) > 1e-6 {
				t.Fatalf("n=%d: dz[%d] = %g, dz_B - dz_half/2 = %g", n, i, dz[i], want)
			}
		}
	}
}

func TestNTXentRandomEmbeddingsNearLog2NMinus1(t *testing.T) {
	// For independent random directions in high dimension every cosine is
	// ~N(0, 1/d); with tau = 0.5 and d = 4096 the logits have sd 0.031, so
	// each l(i,j) = log(2N-1) + O(0.031) and the mean over 2N = 64 rows is
	// within ~0.01 of log(2N-1) with overwhelming probability (>10 sd).
	for _, n := range []int{8, 32} {
		const d, tau = 4096, 0.5
		rng := rand.New(rand.NewPCG(11, uint64(n)))
		z := randomZ(rng, 2*n, d)
		value, _ := NTXent(n, d, tau, false, z, make([]float32, len(z)))
		if want := math.Log(float64(2*n - 1)); math.Abs(value-want) > 0.02 {
			t.Errorf("n=%d: loss %.5f, want log(2N-1) = %.5f within 0.02", n, value, want)
		}
	}
}

func TestNTXentInvariantToRowScaling(t *testing.T) {
	const n, d, tau = 6, 10, 0.3
	rng := rand.New(rand.NewPCG(3, 4))
	z := randomZ(rng, 2*n, d)
	dz := make([]float32, len(z))
	value, _ := NTXent(n, d, tau, true, z, dz)

	scale := []float32{0.5, 2, 4, 0.25, 8, 1, 3, 0.125, 1.5, 16, 0.75, 5}
	zs := make([]float32, len(z))
	for i := range zs {
		zs[i] = z[i] * scale[i/d]
	}
	dzs := make([]float32, len(z))
	scaled, _ := NTXent(n, d, tau, true, zs, dzs)
	if math.Abs(scaled-value) > 1e-6 {
		t.Fatalf("loss %.9f after scaling rows, %.9f before", scaled, value)
	}
	// The loss depends on z_i only through z_i/|z_i|, so dz_i scales by 1/c.
	for i := range dz {
		want := dz[i] / scale[i/d]
		if math.Abs(float64(dzs[i]-want)) > 1e-5*math.Max(1, math.Abs(float64(want))) {
			t.Fatalf("dz[%d] after scaling row by %g: %g, want %g", i, scale[i/d], dzs[i], want)
		}
	}
}

func TestNTXentPanicsOnBadShapes(t *testing.T) {
	cases := []struct {
		name       string
		n, d       int
		zLen       int
		multilevel bool
		tau        float64
	}{
		{"short z", 2, 3, 11, false, 0.5},
		{"odd multilevel", 3, 2, 12, true, 0.5},
		{"zero tau", 2, 2, 8, false, 0},
		{"no images", 0, 2, 0, false, 0.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			NTXent(tc.n, tc.d, tc.tau, tc.multilevel, make([]float32, tc.zLen), make([]float32, tc.zLen))
		})
	}
}

func BenchmarkNTXent512Images(b *testing.B) {
	const n, d = 512, 128
	rng := rand.New(rand.NewPCG(1, 2))
	z := randomZ(rng, 2*n, d)
	dz := make([]float32, len(z))
	for b.Loop() {
		NTXent(n, d, 0.5, true, z, dz)
	}
}

// A reused Workspace must give exactly what a fresh one gives, whatever
// sizes and modes came before (its gradient matrix accumulates, so stale
// entries would show).
func TestWorkspaceReuseMatchesFresh(t *testing.T) {
	var ws NTXentWorkspace
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		n, d       int
		multilevel bool
	}{{8, 5, true}, {2, 5, false}, {8, 5, false}, {16, 3, true}, {4, 3, true}} {
		z := make([]float32, 2*tc.n*tc.d)
		for i := range z {
			z[i] = float32(rng.NormFloat64())
		}
		want, got := make([]float32, len(z)), make([]float32, len(z))
		v1, f1 := NTXent(tc.n, tc.d, 0.5, tc.multilevel, z, want)
		v2, f2 := ws.NTXent(tc.n, tc.d, 0.5, tc.multilevel, z, got)
		if v1 != v2 || f1 != f2 {
			t.Errorf("%+v: reused workspace gives loss (%v, %v), fresh (%v, %v)", tc, v2, f2, v1, f1)
		}
		for i := range want {
			if want[i] != got[i] {
				t.Fatalf("%+v: dz[%d] = %v with a reused workspace, %v fresh", tc, i, got[i], want[i])
			}
		}
	}
}
