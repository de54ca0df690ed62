package nn_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

// runningNormCase is a RunningNorm over n rows of c features with running
// statistics that are not the identity's, and a random input.
func runningNormCase(t *testing.T, n, c int, seed uint64) (*cpu.Backend, *nn.RunningNorm, []float32, tensor.Buffer, *rand.Rand) {
	t.Helper()
	b := cpu.New()
	p := nn.NewParams()
	rn := nn.NewRunningNorm(p, "head.0", c, 0.5)
	p.Allocate(b)
	p.Initialize(1)
	rn.Bind(b)
	t.Cleanup(func() { rn.Free(b); p.Free() })
	rng := rand.New(rand.NewPCG(seed, 7))
	mean, variance := make([]float32, c), make([]float32, c)
	for j := range mean {
		mean[j] = float32(rng.NormFloat64())
		variance[j] = 0.2 + 2*float32(rng.Float64())
	}
	b.Upload(rn.RunningMean.Value, mean)
	b.Upload(rn.RunningVar.Value, variance)
	host := make([]float32, n*c)
	for i := range host {
		host[i] = 3 + 2*float32(rng.NormFloat64())
	}
	x := b.Alloc(n * c)
	b.Upload(x, host)
	return b, rn, host, x, rng
}

// The forward pass is (x - running_mean) / sqrt(running_var + eps) in both
// modes, whatever the batch, and an updating pass changes its own output
// in nothing; Commit then moves the statistics by momentum towards the
// batch's mean and unbiased variance, as PyTorch's BatchNorm1d does.
func TestRunningNormForwardAndCommit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		n, c         int
		train, apply bool
	}{
		{"eval", 6, 5, false, false},
		{"train", 6, 5, true, false},
		{"train, updating", 6, 5, true, true},
		{"one row", 1, 3, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, rn, host, x, _ := runningNormCase(t, tc.n, tc.c, 3)
			mean := slices.Clone(cpu.Data(rn.RunningMean.Value))
			variance := slices.Clone(cpu.Data(rn.RunningVar.Value))
			s := rn.Shape(tc.n)
			y := b.Alloc(tc.n * tc.c)
			saved := nn.BNSaved{Mean: b.Alloc(rn.SavedLen(tc.n)), InvStd: b.Alloc(rn.SavedLen(tc.n))}
			if tc.train {
				rn.ForwardTrain(b, s, x, y, saved, tc.apply)
			} else {
				rn.ForwardEval(b, s, x, y)
			}
			for i, v := range cpu.Data(y) {
				j := i % tc.c
				want := (float64(host[i]) - float64(mean[j])) / math.Sqrt(float64(variance[j])+1e-5)
				if math.Abs(float64(v)-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("y[%d] = %g, want %g", i, v, want)
				}
			}
			if !slices.Equal(cpu.Data(rn.RunningMean.Value), mean) || !slices.Equal(cpu.Data(rn.RunningVar.Value), variance) {
				t.Fatal("the running statistics changed before Commit")
			}
			rn.Commit(b)
			for j := 0; j < tc.c; j++ {
				wantMean, wantVar := float64(mean[j]), float64(variance[j])
				if tc.apply {
					var sum, sq float64
					for i := 0; i < tc.n; i++ {
						sum += float64(host[i*tc.c+j])
					}
					mu := sum / float64(tc.n)
					for i := 0; i < tc.n; i++ {
						d := float64(host[i*tc.c+j]) - mu
						sq += d * d
					}
					wantMean = 0.5*wantMean + 0.5*mu
					wantVar = 0.5*wantVar + 0.5*sq/float64(tc.n-1)
				}
				gotMean, gotVar := float64(cpu.Data(rn.RunningMean.Value)[j]), float64(cpu.Data(rn.RunningVar.Value)[j])
				if math.Abs(gotMean-wantMean) > 1e-5*(1+math.Abs(wantMean)) || math.Abs(gotVar-wantVar) > 1e-5*(1+wantVar) {
					t.Errorf("feature %d after Commit: mean %g variance %g, want %g and %g", j, gotMean, gotVar, wantMean, wantVar)
				}
			}
		})
	}
}

// Backward against float64 finite differences of L = sum g * y(x) along
// random directions, with the running statistics of the forward pass held
// fixed (they are constants of the function). A backward that kept batch
// norm's batch terms would be off by the mean of g.
func TestRunningNormGradientMatchesFiniteDifferences(t *testing.T) {
	for _, tc := range []struct {
		n, c int
		seed uint64
	}{{4, 3, 1}, {16, 8, 2}} {
		b, rn, host, x, rng := runningNormCase(t, tc.n, tc.c, tc.seed)
		mean := cpu.Data(rn.RunningMean.Value)
		variance := cpu.Data(rn.RunningVar.Value)
		g := make([]float32, tc.n*tc.c)
		for i := range g {
			g[i] = float32(rng.NormFloat64())
		}
		loss := func(x []float64) float64 { // float64 transcription of the forward
			var l float64
			for i, v := range x {
				j := i % tc.c
				l += float64(g[i]) * (v - float64(mean[j])) / math.Sqrt(float64(variance[j])+1e-5)
			}
			return l
		}
		s := rn.Shape(tc.n)
		y := b.Alloc(tc.n * tc.c)
		saved := nn.BNSaved{Mean: b.Alloc(rn.SavedLen(tc.n)), InvStd: b.Alloc(rn.SavedLen(tc.n))}
		rn.ForwardTrain(b, s, x, y, saved, true) // the update must not enter the gradient
		dy, dx := b.Alloc(len(g)), b.Alloc(len(g))
		b.Upload(dy, g)
		rn.Backward(b, s, dy, dx, saved)
		for d := 0; d < 4; d++ {
			u := make([]float64, len(host))
			var predicted float64
			for i := range u {
				u[i] = rng.NormFloat64()
				predicted += float64(cpu.Data(dx)[i]) * u[i]
			}
			const h = 1e-3
			plus, minus := make([]float64, len(host)), make([]float64, len(host))
			for i, v := range host {
				plus[i], minus[i] = float64(v)+h*u[i], float64(v)-h*u[i]
			}
			fd := (loss(plus) - loss(minus)) / (2 * h)
			if math.Abs(fd-predicted) > 1e-5*(1+math.Abs(fd)) {
				t.Errorf("%d x %d, direction %d: <dx,u> = %.8g, finite differences %.8g", tc.n, tc.c, d, predicted, fd)
			}
		}
	}
}

// After a Commit, UsePrevious gives back the function of the iteration
// before (the statistics the commit replaced); without a Commit yet, the
// previous statistics are the running ones.
func TestRunningNormUsePrevious(t *testing.T) {
	b, rn, _, x, _ := runningNormCase(t, 6, 4, 5)
	s := rn.Shape(6)
	y := b.Alloc(24)
	saved := nn.BNSaved{Mean: b.Alloc(rn.SavedLen(6)), InvStd: b.Alloc(rn.SavedLen(6))}
	out := func(prev bool) []float32 {
		rn.UsePrevious(prev)
		defer rn.UsePrevious(false)
		rn.ForwardTrain(b, s, x, y, saved, false)
		return slices.Clone(cpu.Data(y))
	}
	before := out(false)
	if got := out(true); !slices.Equal(got, before) {
		t.Fatalf("previous statistics before any Commit: %v, want the running ones' %v", got, before)
	}
	rn.ForwardTrain(b, s, x, y, saved, true)
	rn.Commit(b)
	after := out(false)
	if slices.Equal(after, before) {
		t.Fatal("Commit after an updating pass left the function unchanged")
	}
	if got := out(true); !slices.Equal(got, before) {
		t.Fatalf("previous statistics after Commit: %v, want the function before it %v", got, before)
	}
	rn.Commit(b) // an iteration without updating passes
	if got := out(true); !slices.Equal(got, after) {
		t.Fatalf("previous statistics after a Commit without updates: %v, want %v", got, after)
	}
}
