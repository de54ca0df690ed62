package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/tensor"
)

// TestBatchNormTrainHandComputed checks one channel of x = {1, 2, 3, 4}
// (N=2, HW=2) and a second of x = {0, 0, 6, -2}, with statistics worked out
// by hand: mean 2.5, biased variance 1.25, unbiased 5/3; mean 1, biased
// variance 9, unbiased 12.
func TestBatchNormTrainHandComputed(t *testing.T) {
	s := tensor.BNShape{N: 2, C: 2, HW: 2, Eps: 1e-5, Momentum: 0.1}
	// (N,C,HW): image 0 = [ch0: 1 2][ch1: 0 0], image 1 = [ch0: 3 4][ch1: 6 -2]
	x := []float32{1, 2, 0, 0, 3, 4, 6, -2}
	gamma, beta := []float32{2, 0.5}, []float32{-1, 3}
	for _, tb := range testBackends() {
		t.Run(tb.name, func(t *testing.T) {
			b := tb.b
			y, mean, invStd := filled(b, 8, 7), filled(b, 2, 7), filled(b, 2, 7)
			runMean, runVar := upload(b, []float32{0.5, -1}), upload(b, []float32{2, 1})
			b.BatchNormForwardTrain(s, upload(b, x), upload(b, gamma), upload(b, beta), y, mean, invStd, runMean, runVar)

			inv0, inv1 := 1/math.Sqrt(1.25+1e-5), 1/math.Sqrt(9+1e-5)
			assertClose(t, "mean", download(b, mean), []float64{2.5, 1}, 1e-7)
			assertClose(t, "invStd", download(b, invStd), []float64{inv0, inv1}, 1e-6)
			norm := func(v, mu, inv, g, be float64) float64 { return g*(v-mu)*inv + be }
			wantY := []float64{
				norm(1, 2.5, inv0, 2, -1), norm(2, 2.5, inv0, 2, -1), norm(0, 1, inv1, 0.5, 3), norm(0, 1, inv1, 0.5, 3),
				norm(3, 2.5, inv0, 2, -1), norm(4, 2.5, inv0, 2, -1), norm(6, 1, inv1, 0.5, 3), norm(-2, 1, inv1, 0.5, 3),
			}
			assertClose(t, "y", download(b, y), wantY, 1e-6)
			// running = 0.9 running + 0.1 batch, with the unbiased variance.
			assertClose(t, "running mean", download(b, runMean), []float64{0.9*0.5 + 0.1*2.5, 0.9*-1 + 0.1*1}, 1e-7)
			assertClose(t, "running var", download(b, runVar), []float64{0.9*2 + 0.1*5.0/3, 0.9*1 + 0.1*12}, 1e-6)

			// Without running buffers the statistics are the same and nothing else moves.
			y2 := filled(b, 8, 7)
			b.BatchNormForwardTrain(s, upload(b, x), upload(b, gamma), upload(b, beta), y2, mean, invStd, nil, nil)
			assertClose(t, "y without running stats", download(b, y2), wantY, 1e-6)
		})
	}
}

func TestBatchNormEvalUsesRunningStatistics(t *testing.T) {
	s := tensor.BNShape{N: 3, C: 2, HW: 4, Eps: 1e-5, Momentum: 0.1}
	rng := rand.New(rand.NewPCG(3, 3))
	x := randSlice(rng, s.N*s.C*s.HW)
	gamma, beta := []float32{1.5, -0.5}, []float32{0.25, 2}
	rm, rv := []float32{0.3, -0.2}, []float32{0.8, 2.5}
	want := make([]float64, len(x))
	for i, v := range x {
		c := (i / s.HW) % s.C
		want[i] = float64(gamma[c])*(float64(v)-float64(rm[c]))/math.Sqrt(float64(rv[c])+1e-5) + float64(beta[c])
	}
	for _, tb := range testBackends() {
		t.Run(tb.name, func(t *testing.T) {
			b := tb.b
			y := filled(b, len(x), 7)
			b.BatchNormForwardEval(s, upload(b, x), upload(b, gamma), upload(b, beta), upload(b, rm), upload(b, rv), y)
			assertClose(t, "y", download(b, y), want, 1e-6)
		})
	}
}

// bnRef is training-mode batch norm in float64: the objective's forward.
func bnRef(s tensor.BNShape, x, gamma, beta []float64) []float64 {
	y := make([]float64, len(x))
	M := float64(s.N * s.HW)
	for c := 0; c < s.C; c++ {
		var sum, ss float64
		for n := 0; n < s.N; n++ {
			for j := 0; j < s.HW; j++ {
				sum += x[(n*s.C+c)*s.HW+j]
			}
		}
		mu := sum / M
		for n := 0; n < s.N; n++ {
			for j := 0; j < s.HW; j++ {
				d := x[(n*s.C+c)*s.HW+j] - mu
				ss += d * d
			}
		}
		inv := 1 / math.Sqrt(ss/M+float64(s.Eps))
		for n := 0; n < s.N; n++ {
			for j := 0; j < s.HW; j++ {
				i := (n*s.C+c)*s.HW + j
				y[i] = gamma[c]*(x[i]-mu)*inv + beta[c]
			}
		}
	}
	return y
}

// TestBatchNormBackwardFiniteDifferences checks dx, dgamma and dbeta of
// sum(y * r) against float64 central differences (step 1e-5, truncation
// error ~1e-10) of the float64 reference; the tolerance covers float32
// rounding of the kernel.
func TestBatchNormBackwardFiniteDifferences(t *testing.T) {
	shapes := []tensor.BNShape{
		{N: 4, C: 3, HW: 5, Eps: 1e-5, Momentum: 0.1},
		{N: 6, C: 5, HW: 1, Eps: 1e-5, Momentum: 0.1}, // BatchNorm1d
		{N: 1, C: 2, HW: 9, Eps: 1e-5, Momentum: 0.1}, // one image
		{N: 2, C: 64, HW: 300, Eps: 1e-5, Momentum: 0.1},
	}
	for _, tb := range testBackends() {
		for si, s := range shapes {
			t.Run(fmt.Sprintf("%s/%+v", tb.name, s), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(si), 4))
				n := s.N * s.C * s.HW
				x, r := randSlice(rng, n), randSlice(rng, n)
				gamma, beta := randSlice(rng, s.C), randSlice(rng, s.C)
				for i := range x {
					x[i] = 3*x[i] + 0.5 // a mean away from 0 and variance away from 1
				}
				x64, g64, b64, r64 := to64(x), to64(gamma), to64(beta), to64(r)
				objective := func() float64 { return dot64s(bnRef(s, x64, g64, b64), r64) }
				// Finite differences for large shapes would take long: check a
				// spread subset of x there.
				b := tb.b
				xb, gb := upload(b, x), upload(b, gamma)
				y, mean, invStd := b.Alloc(n), b.Alloc(s.C), b.Alloc(s.C)
				b.BatchNormForwardTrain(s, xb, gb, upload(b, beta), y, mean, invStd, nil, nil)
				dx, dgamma, dbeta := filled(b, n, 7), filled(b, s.C, 7), filled(b, s.C, 7)
				b.BatchNormBackward(s, xb, upload(b, r), gb, mean, invStd, dx, dgamma, dbeta)

				assertClose(t, "dgamma", download(b, dgamma), centralDiff(g64, 1e-5, objective), 1e-5)
				assertClose(t, "dbeta", download(b, dbeta), centralDiff(b64, 1e-5, objective), 1e-5)
				got := download(b, dx)
				stride := max(1, n/200)
				var gotSub []float32
				var wantSub []float64
				for i := 0; i < n; i += stride {
					gotSub = append(gotSub, got[i])
					wantSub = append(wantSub, centralDiff(x64[i:i+1], 1e-5, objective)[0])
				}
				assertClose(t, "dx", gotSub, wantSub, 1e-4)

				// dx may alias dy.
				dy := upload(b, r)
				b.BatchNormBackward(s, xb, dy, gb, mean, invStd, dy, dgamma, dbeta)
				assertClose(t, "dx aliasing dy", download(b, dy), to64(got), 1e-7)
			})
		}
	}
}

// TestBatchNormAddReLUIsTheSeparateKernels: the fused forward equals
// BatchNormForwardTrain, Add and ReLUForward run one after the other, bit
// for bit, with and without a residual, on shapes split over the workers
// and not, and it updates the statistics and running statistics alike.
func TestBatchNormAddReLUIsTheSeparateKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range []tensor.BNShape{
		{N: 2, C: 3, HW: 5, Eps: 1e-5, Momentum: 0.1},
		{N: 4, C: 64, HW: 256, Eps: 1e-5, Momentum: 0.1}, // split over the workers
	} {
		n := s.N * s.C * s.HW
		x, res := randSlice(rng, n), randSlice(rng, n)
		gamma, beta := randSlice(rng, s.C), randSlice(rng, s.C)
		for _, tb := range testBackends() {
			for _, withResidual := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/C=%d/residual=%v", tb.name, s.C, withResidual), func(t *testing.T) {
					b := tb.b
					xb, gb, bb, rb := upload(b, x), upload(b, gamma), upload(b, beta), upload(b, res)
					want, wantMean, wantInv := b.Alloc(n), b.Alloc(s.C), b.Alloc(s.C)
					wantRM, wantRV := filled(b, s.C, 0.5), filled(b, s.C, 2)
					b.BatchNormForwardTrain(s, xb, gb, bb, want, wantMean, wantInv, wantRM, wantRV)
					var residual tensor.Buffer
					if withResidual {
						residual = rb
						b.Add(want, want, rb)
					}
					b.ReLUForward(want, want)

					got, mean, inv := filled(b, n, 7), b.Alloc(s.C), b.Alloc(s.C)
					rm, rv := filled(b, s.C, 0.5), filled(b, s.C, 2)
					b.BatchNormAddReLUForwardTrain(s, xb, gb, bb, residual, got, mean, inv, rm, rv)
					for _, c := range []struct {
						what      string
						got, want tensor.Buffer
					}{{"y", got, want}, {"mean", mean, wantMean}, {"invStd", inv, wantInv}, {"running mean", rm, wantRM}, {"running var", rv, wantRV}} {
						g, w := download(b, c.got), download(b, c.want)
						for i := range w {
							if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
								t.Fatalf("%s[%d] = %v fused, %v separate", c.what, i, g[i], w[i])
							}
						}
					}
					if y := download(b, got); !slicesHaveZeroAndPositive(y) {
						t.Fatalf("the ReLU output has no zeros or no positives: the test would not see a missing ReLU")
					}
				})
			}
		}
	}
}

func slicesHaveZeroAndPositive(y []float32) bool {
	var zero, positive bool
	for _, v := range y {
		zero = zero || v == 0
		positive = positive || v > 0
	}
	return zero && positive
}

// TestBatchNormPassesMatchTheGoLoops: the assembly passes (where the CPU
// has them; the ReLU's backward pass too) compute the Go loops' results
// bit for bit, so that batch norm
// gives the same numbers on every CPU: the sums with the loops' four
// float64 accumulators, the element-wise passes without fused
// multiply-adds. Lengths around the 4- and 8-element steps, values of both
// signs with zeros of both signs.
func TestBatchNormPassesMatchTheGoLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			switch i % 11 {
			case 3:
				v[i] = 0
			case 7:
				v[i] = float32(math.Copysign(0, -1))
			default:
				v[i] = float32(rng.NormFloat64() * 3)
			}
		}
		return v
	}
	bits := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 1001} {
		x, g, res := vals(n), vals(n), vals(n)
		// The Go loops, as they were before the assembly.
		var s, q, ds, dp [4]float64
		for i := 0; i+4 <= n; i += 4 {
			for l := range 4 {
				d := float64(x[i+l]) - 0.25
				s[l], q[l] = s[l]+d, q[l]+d*d
				ds[l] += float64(g[i+l])
				dp[l] += float64(g[i+l]) * float64(x[i+l]-0.5)
			}
		}
		for i := n &^ 3; i < n; i++ {
			d := float64(x[i]) - 0.25
			s[0], q[0] = s[0]+d, q[0]+d*d
			ds[0] += float64(g[i])
			dp[0] += float64(g[i]) * float64(x[i]-0.5)
		}
		sum, sq := sumAndSquares(x, 0.25)
		if !bits(sum, (s[0]+s[1])+(s[2]+s[3])) || !bits(sq, (q[0]+q[1])+(q[2]+q[3])) {
			t.Errorf("n=%d: sumAndSquares = %v, %v; the Go loop gives %v, %v", n, sum, sq, (s[0]+s[1])+(s[2]+s[3]), (q[0]+q[1])+(q[2]+q[3]))
		}
		sum, dot := sumAndDot(g, x, 0.5)
		if !bits(sum, (ds[0]+ds[1])+(ds[2]+ds[3])) || !bits(dot, (dp[0]+dp[1])+(dp[2]+dp[3])) {
			t.Errorf("n=%d: sumAndDot = %v, %v; the Go loop gives %v, %v", n, sum, dot, (ds[0]+ds[1])+(ds[2]+ds[3]), (dp[0]+dp[1])+(dp[2]+dp[3]))
		}
		const sc, sh, k, a, a0 = float32(1.7), float32(-0.3), float32(0.9), float32(-1.1), float32(0.05)
		relu := func(t float32) float32 { return math.Float32frombits(math.Float32bits(t) & positiveMask(t)) }
		for _, pass := range []struct {
			name string
			simd func(dst []float32) int
			want func(i int) float32
		}{
			{"affine", func(dst []float32) int { return bnAffineSIMD(x, dst, sc, sh) }, func(i int) float32 { return x[i]*sc + sh }},
			{"affine+ReLU", func(dst []float32) int { return bnAffineReLUSIMD(x, nil, dst, sc, sh) }, func(i int) float32 { return relu(x[i]*sc + sh) }},
			{"affine+add+ReLU", func(dst []float32) int { return bnAffineReLUSIMD(x, res, dst, sc, sh) }, func(i int) float32 { t := x[i]*sc + sh; t += res[i]; return relu(t) }},
			{"backward dx", func(dst []float32) int { return bnBackwardDxSIMD(g, x, dst, k, a, a0) }, func(i int) float32 { return k*g[i] + a*x[i] + a0 }},
			{"ReLU backward", func(dst []float32) int { return reluBackwardSIMD(x, g, dst) }, func(i int) float32 {
				return math.Float32frombits(math.Float32bits(g[i]) & positiveMask(x[i]))
			}},
		} {
			dst := make([]float32, n)
			done := pass.simd(dst)
			if done > n || done%8 != 0 || (hasAVX2() && done != n&^7) {
				t.Errorf("n=%d %s: the assembly did %d elements", n, pass.name, done)
			}
			for i := range done {
				if w := pass.want(i); math.Float32bits(dst[i]) != math.Float32bits(w) {
					t.Errorf("n=%d %s: element %d = %v, the Go loop gives %v", n, pass.name, i, dst[i], w)
					break
				}
			}
		}
	}
}
