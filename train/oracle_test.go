package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/tensor"
)

// newTestTrainer sets up (without running) a trainer of tinyConfig on
// synthetic data.
func newTestTrainer(t *testing.T, estimator string) *trainer {
	t.Helper()
	return newTestTrainerOn(t, estimator, cpu.New())
}

// newTestTrainerOn is newTestTrainer on backend b.
func newTestTrainerOn(t *testing.T, estimator string, b tensor.Backend) *trainer {
	t.Helper()
	cfg := tinyConfig(t, estimator)
	cfg.Iterations = 1000
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	hooks := tinyHooks(syntheticSplits(64, 8, 16, 4))
	hooks.Backend = b
	tr := &trainer{cfg: cfg, hooks: hooks, log: ioDiscard{}}
	if err := tr.setup(session{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.close)
	return tr
}

// TestSteadyStateIterationAllocatesAlmostNothing bounds what a training
// iteration allocates on the Go heap (all goroutines counted) once every
// size has been planned, beyond the network passes themselves: the
// estimator, the oracle (draws, views, input and loss buffers, the swap to
// x_{t-1} and back), the loader and the optimizer step must together stay
// under 15 allocations per iteration (measured 6 for lsgd and 9.5 for
// vr-lsgd: the closures of the Axpy, Copy and AllFinite kernels and the
// Step's level list), nothing that grows with the batch.
// The backend's kernel calls allocate on their own, a few closures each
// (about 200 per forward and backward with the pure-Go GEMM on one thread,
// more through OpenBLAS's purego binding); they are measured on the same
// network and subtracted. vr-lsgd alternates fresh steps (one pass) and VR
// corrections (a pass at x_t and one at x_{t-1}).
func TestSteadyStateIterationAllocatesAlmostNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// network passes per iteration at x_t (updating the running
		// statistics) and at x_{t-1} (not updating them, which skips a
		// kernel call per batch norm)
		current, previous float64
	}{{"lsgd", 1, 0}, {"vr-lsgd", 1, 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			// One thread and the pure-Go GEMM: a kernel call then allocates
			// the same whatever the batch size.
			tr := newTestTrainerOn(t, tc.name, cpu.NewWith(blas.PureGo(1), 1))
			iterate := func() {
				if _, err := tr.iterate(0.01); err != nil {
					t.Fatal(err)
				}
				tr.iter++
			}
			for range 2 * tr.cfg.QE { // plan every size, fill the draw pools
				iterate()
			}
			// AllocsPerRun runs once more before measuring: with QE = 2 an
			// even count still averages over as many fresh steps as
			// corrections.
			runs := 4 * tr.cfg.QE
			// The count includes the loader's goroutines, which allocate
			// as they prefetch, whenever the scheduler runs them: that
			// noise only adds (6 to 16.5 beyond the passes in one
			// measurement), so the least of three measures the iteration.
			perIter := math.Inf(1)
			for range 3 {
				perIter = min(perIter, testing.AllocsPerRun(runs, iterate))
			}

			b, m := tr.b, tr.model
			n := 1 << tr.cfg.MaxLevel
			x := b.Alloc(2 * n * m.InputLen())
			dz := b.Alloc(2 * n * tr.cfg.ProjDim)
			pass := func(updateRunning bool) float64 {
				return testing.AllocsPerRun(runs, func() {
					z := m.Forward(x, 2*n, true, updateRunning)
					b.NTXent(n, tr.cfg.ProjDim, float32(tr.cfg.Temperature), false, z, dz)
					m.Backward(dz)
				})
			}
			perPass := tc.current*pass(true) + tc.previous*pass(false)
			overhead := perIter - perPass
			t.Logf("%s: %.0f allocations per iteration, %.1f in its network passes, %.1f beyond them",
				tc.name, perIter, perPass, overhead)
			if overhead >= 15 {
				t.Errorf("%s: an iteration allocates %.1f times on the Go heap beyond its network passes, want < 15",
					tc.name, overhead)
			}
		})
	}
}

// host copies a backend buffer.
func host(b interface {
	Download([]float32, tensor.Buffer)
}, buf tensor.Buffer) []float32 {
	out := make([]float32, buf.Len())
	b.Download(out, buf)
	return out
}

// TestOracleEvalAtPreviousReplaysTheDraw checks the SimCLR oracle against a
// direct forward, loss and backward of the network: Eval adds alpha*g into
// out; at x_{t-1} it uses the draw's own views, returns the gradient a
// network holding x_{t-1} gives on them, leaves the parameters at x_t and
// the batch-norm running statistics untouched; at x_t it updates them.
func TestOracleEvalAtPreviousReplaysTheDraw(t *testing.T) {
	for _, tc := range []struct {
		level int
		diff  bool
	}{{1, false}, {2, true}, {3, false}} {
		t.Run(fmt.Sprintf("level%d_diff%v", tc.level, tc.diff), func(t *testing.T) {
			tr := newTestTrainer(t, "vr-lsgd")
			b, params, o := tr.b, tr.model.Params(), tr.oracle
			rng := rand.New(rand.NewPCG(3, uint64(tc.level)))
			xt := host(b, params.Flat())
			xPrev := slices.Clone(xt)
			for i := range xPrev {
				xPrev[i] += 0.05 * float32(rng.NormFloat64())
			}
			b.Upload(tr.prev, xPrev)

			s, cost, err := o.Draw(tc.level)
			if err != nil {
				t.Fatal(err)
			}
			if cost != 1<<tc.level {
				t.Fatalf("cost %d, want %d images", cost, 1<<tc.level)
			}
			views := slices.Clone(s.(*draw).views)

			// The reference: the same views through the network at p.
			gradAt := func(p []float32) []float32 {
				saveP, saveS := host(b, params.Flat()), host(b, params.State())
				b.Upload(params.Flat(), p)
				n := 1 << tc.level
				x := b.Alloc(2 * n * tr.model.InputLen())
				b.Upload(x, views)
				dz := b.Alloc(2 * n * tr.cfg.ProjDim)
				z := tr.model.Forward(x, 2*n, true, false)
				b.NTXent(n, tr.cfg.ProjDim, float32(tr.cfg.Temperature), tc.diff, z, dz)
				tr.model.Backward(dz)
				g := host(b, params.Grad())
				b.Upload(params.Flat(), saveP)
				b.Upload(params.State(), saveS)
				return g
			}
			wantCur, wantPrev := gradAt(xt), gradAt(xPrev)

			base := make([]float32, params.Len())
			for i := range base {
				base[i] = float32(rng.NormFloat64())
			}
			out := b.Alloc(params.Len())
			check := func(at mlmc.Point, alpha float64, want []float32) {
				t.Helper()
				b.Upload(out, base)
				stateBefore := host(b, params.State())
				if err := o.Eval(s, at, tc.diff, alpha, out); err != nil {
					t.Fatal(err)
				}
				got := host(b, out)
				for i := range got {
					w := base[i] + float32(alpha)*want[i]
					if math.Abs(float64(got[i]-w)) > 1e-5*(1+math.Abs(float64(w))) {
						t.Fatalf("at %s: out[%d] = %g, want base + %g*g = %g", at, i, got[i], alpha, w)
					}
				}
				if !slices.Equal(host(b, params.Flat()), xt) {
					t.Fatalf("after an evaluation at %s the parameters are not x_t", at)
				}
				stateChanged := !slices.Equal(host(b, params.State()), stateBefore)
				if stateChanged != (at == mlmc.Current) {
					t.Fatalf("evaluation at %s: running statistics changed: %v, want %v", at, stateChanged, at == mlmc.Current)
				}
				if !slices.Equal(s.(*draw).views, views) {
					t.Fatalf("evaluation at %s changed the draw's views", at)
				}
			}
			check(mlmc.Current, 0.5, wantCur)
			check(mlmc.Previous, -0.25, wantPrev)
			check(mlmc.Current, 1, wantCur)
			o.Release(s)
		})
	}
}

// failingBackend is the CPU backend behaving as the CUDA backend does after a
// device failure (out of memory, say): kernels report NaN and Sync returns
// the failure.
type failingBackend struct {
	*cpu.Backend
	err error
}

func (f failingBackend) NTXent(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) tensor.LossResult {
	return tensor.LossResult{Loss: math.NaN(), Full: math.NaN()}
}

func (f failingBackend) Sync() error { return f.err }

// A device failure during a query must reach the user as that failure with
// the level it happened at, not as a NaN loss.
func TestOracleReportsDeviceFailureWithLevel(t *testing.T) {
	deviceErr := fmt.Errorf("cuda: allocate 1.5 GiB for activations: out of memory")
	tr := newTestTrainerOn(t, "lsgd", failingBackend{Backend: cpu.New(), err: deviceErr})
	_, err := tr.iterate(0.01)
	if err == nil {
		t.Fatal("iteration on a failed device succeeded")
	}
	if !errors.Is(err, deviceErr) || errors.Is(err, ErrNonFinite) {
		t.Fatalf("error %q: want the device failure, not a non-finite loss", err)
	}
	if want := fmt.Sprintf("level %d", tr.cfg.MaxLevel); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the %s it happened at", err, want)
	}
}
