package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
)

// newTestTrainerOn sets up (without running) a trainer of tinyConfig on
// synthetic data and backend b.
func newTestTrainerOn(t *testing.T, estimator string, b tensor.Backend) *trainer {
	t.Helper()
	cfg := tinyConfig(t, estimator)
	cfg.Iterations = 1000
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	hooks := tinyHooks(syntheticSplits(64, 8, 16, 4))
	hooks.Backend = b
	tr := &trainer{sess: hooks, log: ioDiscard{}}
	if err := tr.setup(cfg, opening{}); err != nil {
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
			qe := tinyConfig(t, tc.name).QE // the trainer keeps only its plan
			for range 2 * qe {              // plan every size, fill the draw pools
				iterate()
			}
			// AllocsPerRun runs once more before measuring: with QE = 2 an
			// even count still averages over as many fresh steps as
			// corrections.
			runs := 4 * qe
			// The count includes the loader's goroutines, which allocate
			// as they prefetch, whenever the scheduler runs them: that
			// noise only adds (6 to 16.5 beyond the passes in one
			// measurement), so the least of three measures the iteration.
			perIter := math.Inf(1)
			for range 3 {
				perIter = min(perIter, testing.AllocsPerRun(runs, iterate))
			}

			b, m := tr.b, tr.model
			n := 1 << tr.plan.Run.MaxLevel
			x := b.Alloc(2 * n * m.InputLen())
			dz := b.Alloc(2 * n * tr.plan.Run.ProjDim)
			pass := func(updateRunning bool) float64 {
				return testing.AllocsPerRun(runs, func() {
					z := m.Forward(x, 2*n, true, updateRunning)
					b.NTXent(n, tr.plan.Run.ProjDim, float32(tr.plan.Run.Temperature), false, z, dz)
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
	if !errors.Is(err, deviceErr) || errors.Is(err, contrastive.ErrNonFinite) {
		t.Fatalf("error %q: want the device failure, not a non-finite loss", err)
	}
	if want := fmt.Sprintf("level %d", tr.plan.Run.MaxLevel); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the %s it happened at", err, want)
	}
}

// A run with --halves separate counts every forward/backward pass as an
// evaluation: three for a query of H^l (l > l_min), one for h^(l_min).
func TestSeparateHalvesRunCountsPasses(t *testing.T) {
	cfg := tinyConfig(t, "rtmlmc")
	cfg.Iterations = 8
	cfg.Halves = contrastive.HalvesSeparate.String()
	if _, err := Train(context.Background(), cfg, tinyHooks(syntheticSplits(64, 16, 16, 4))); err != nil {
		t.Fatal(err)
	}
	lines, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	sawH := false
	for _, m := range lines {
		for _, l := range m.Levels {
			if l > cfg.MinLevel {
				want += 3
				sawH = true
			} else {
				want++
			}
		}
		if m.Evaluations != want {
			t.Fatalf("iteration %d (levels %v): %d evaluations, want %d", m.Iteration, m.Levels, m.Evaluations, want)
		}
	}
	if !sawH {
		t.Error("no query above the minimum level in 8 iterations: nothing tested")
	}
	var saved Settings
	if err := runfolder.ReadJSON(filepath.Join(cfg.Out, runfolder.ConfigFile), &saved); err != nil || saved.Halves != contrastive.HalvesSeparate.String() {
		t.Errorf("config.json: halves %q (%v), want %s", saved.Halves, err, contrastive.HalvesSeparate)
	}
}
