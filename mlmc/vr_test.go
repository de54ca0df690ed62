package mlmc

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// A fresh VR step (t mod QE == 0) is the mean of D1 independent base
// estimates: mean grad F^L, variance Var(v)/D1, cost D1 E[C].
func TestVRFreshStepIsMeanOfD1Estimates(t *testing.T) {
	const n = 10000
	for ci, name := range []string{"vr-lsgd", "vr-vmlmc", "vr-rtmlmc", "vr-rumlmc", "vr-rrmlmc"} {
		t.Run(name, func(t *testing.T) {
			o := NewSynthetic(3, 1, 2, 1, uint64(200+ci))
			o.Ma = 2
			copy(o.X, []float64{0.5, -0.5, 0})
			cfg := Config{MinLevel: 1, MaxLevel: 3, B: 2, C: 1, D1: 3, QE: 1, Seed: uint64(ci)}
			e, err := New(mustKind(name), cfg, Float64Ops{Dim: 3}, o)
			if err != nil {
				t.Fatal(err)
			}
			ex := exactMoments(o, mustKind(name).Method, e.cfg, lawOf(e))
			st := runEstimator(t, e, ex.mean, n)
			for i := range ex.mean {
				if !within(st.mean[i], ex.mean[i], st.se[i]) {
					t.Errorf("coordinate %d: mean %.4f, want %.4f (se %.4f)", i, st.mean[i], ex.mean[i], st.se[i])
				}
			}
			if want := ex.vari / 3; !within(st.dev2, want, st.dev2SE) {
				t.Errorf("variance %.4f, want Var(v)/D1 = %.4f (se %.4f)", st.dev2, want, st.dev2SE)
			}
			if want := 3 * ex.cost; !within(st.cost, want, st.costSE) {
				t.Errorf("cost %.3f, want D1 E[C] = %.3f (se %.3f)", st.cost, want, st.costSE)
			}
		})
	}
}

// Given m_{t-1}, a VR correction step has mean
// m_{t-1} + E v(x_t) - E v(x_{t-1}), evaluates every draw twice and counts
// its samples once. The synthetic oracle's noise depends on x, so the
// correction is random.
func TestVRCorrectionHasExpectedMean(t *testing.T) {
	const n = 20000
	x0 := []float64{0.5, -0.5, 0}
	x1 := []float64{0.2, 0.1, 0.4}
	for ci, name := range []string{"vr-lsgd", "vr-vmlmc", "vr-rtmlmc", "vr-rumlmc", "vr-rrmlmc"} {
		t.Run(name, func(t *testing.T) {
			o := NewSynthetic(3, 1, 2, 1, uint64(300+ci))
			o.Ma = 2
			cfg := Config{MinLevel: 1, MaxLevel: 3, B: 2, C: 1, D2: 2, QE: 1000, Seed: uint64(ci)}
			e, err := New(mustKind(name), cfg, Float64Ops{Dim: 3}, o)
			if err != nil {
				t.Fatal(err)
			}
			copy(o.X, x0)
			m0 := make([]float64, 3)
			if _, err := e.Estimate(0, m0); err != nil {
				t.Fatal(err)
			}
			copy(o.XPrev, x0)
			copy(o.X, x1)
			// E v(x1) - E v(x0) = grad F^L(x1) - grad F^L(x0) for every
			// estimator here (the bias does not depend on x).
			want := make([]float64, 3)
			for i := range want {
				want[i] = m0[i] + x1[i] - x0[i]
			}
			state, ok := e.VRState()
			if !ok {
				t.Fatal("VRState: not a VR estimator")
			}
			out := make([]float64, 3)
			sum, sum2 := make([]float64, 3), make([]float64, 3)
			for range n {
				copy(state, m0) // the same m_{t-1} for every trial
				step, err := e.Estimate(1, out)
				if err != nil {
					t.Fatal(err)
				}
				if step.Fresh {
					t.Fatal("step 1 with QE = 1000 reported fresh")
				}
				if step.Evals != 2*int64(len(step.Levels)) {
					t.Fatalf("evaluations %d for %d draws, want two per draw", step.Evals, len(step.Levels))
				}
				var cost int64
				for _, l := range step.Levels {
					cost += o.Cost(l)
				}
				if step.Samples != cost {
					t.Fatalf("samples %d, want each draw counted once: %d", step.Samples, cost)
				}
				if !slices.Equal(out, state) {
					t.Fatal("the VR state is not the estimate just returned")
				}
				for i, v := range out {
					sum[i] += v
					sum2[i] += v * v
				}
			}
			randomSeen := false
			for i := range want {
				mean := sum[i] / n
				se := math.Sqrt((sum2[i]/n - mean*mean) / (n - 1))
				randomSeen = randomSeen || se > 0
				if !within(mean, want[i], se) {
					t.Errorf("coordinate %d: mean %.4f, want %.4f (se %.4f)", i, mean, want[i], se)
				}
			}
			if !randomSeen {
				t.Error("the correction is deterministic: the test would not see a wrong weight on the noise")
			}
		})
	}
}

func TestVRCorrectionNeedsState(t *testing.T) {
	o := NewSynthetic(2, 1, 1, 1, 1)
	e, err := New(mustKind("vr-rtmlmc"), Config{MinLevel: 1, MaxLevel: 3, QE: 5}, Float64Ops{Dim: 2}, o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Estimate(3, make([]float64, 2))
	if err == nil || !strings.Contains(err.Error(), "VR state") {
		t.Fatalf("Estimate(3) without state: error %v, want one about the VR state", err)
	}
}

// A restored estimator (generator, counts, VR flag, VR vector) and a
// restored oracle continue bit for bit as the original.
func TestMarshalResumesExactly(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			cfg := Config{MinLevel: 1, MaxLevel: 4, QE: 3, D1: 2, D2: 2, Seed: 7}
			o1 := NewSynthetic(2, 1, 1.5, 1, 9)
			e1, err := New(mustKind(name), cfg, Float64Ops{Dim: 2}, o1)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float64, 2)
			step := func(e *Estimator[[]float64], o *Synthetic, it int) (Step, []float64) {
				copy(o.XPrev, o.X)
				o.X[0], o.X[1] = 0.1*float64(it), -0.05*float64(it) // a fixed parameter path
				s, err := e.Estimate(it, out)
				if err != nil {
					t.Fatal(err)
				}
				return s, slices.Clone(out)
			}
			draws := 0
			for it := range 4 {
				s, _ := step(e1, o1, it)
				draws += len(s.Levels)
			}
			saved, err := e1.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var savedVR []float64
			if v, ok := e1.VRState(); ok {
				savedVR = slices.Clone(v)
			}
			savedX := slices.Clone(o1.X)

			o2 := NewSynthetic(2, 1, 1.5, 1, 9)
			for range draws { // bring the oracle's own stream to the same point
				o2.Draw(0)
			}
			copy(o2.X, savedX)
			e2, err := New(mustKind(name), cfg, Float64Ops{Dim: 2}, o2)
			if err != nil {
				t.Fatal(err)
			}
			if err := e2.UnmarshalBinary(saved); err != nil {
				t.Fatal(err)
			}
			if v, ok := e2.VRState(); ok {
				copy(v, savedVR)
			}
			if e2.Totals() != e1.Totals() {
				t.Fatalf("restored totals %+v, want %+v", e2.Totals(), e1.Totals())
			}
			for it := 4; it < 10; it++ {
				s1, v1 := step(e1, o1, it)
				s2, v2 := step(e2, o2, it)
				if !slices.Equal(s1.Levels, s2.Levels) || !slices.Equal(v1, v2) {
					t.Fatalf("iteration %d: restored run gives levels %v estimate %v, original %v %v",
						it, s2.Levels, v2, s1.Levels, v1)
				}
			}
		})
	}
}

func TestUnmarshalRejectsBadState(t *testing.T) {
	o := NewSynthetic(2, 1, 1, 1, 1)
	mk := func(name string) *Estimator[[]float64] {
		e, err := New(mustKind(name), Config{MinLevel: 1, MaxLevel: 3}, Float64Ops{Dim: 2}, o)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	good, err := mk("rtmlmc").MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		into string
		data []byte
		want string
	}{
		{"empty", "rtmlmc", nil, "unknown state version"},
		{"version", "rtmlmc", append([]byte{9}, good[1:]...), "unknown state version"},
		{"truncated", "rtmlmc", good[:5], "truncated"},
		{"other estimator", "lsgd", good, `the saved state is of estimator "rtmlmc"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := mk(tc.into).UnmarshalBinary(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	o := NewSynthetic(2, 1, 1, 1, 1)
	e, _ := New(mustKind("vr-rrmlmc"), Config{MinLevel: 1}, Float64Ops{Dim: 2}, o)
	good, _ := e.MarshalBinary()
	f.Add(good)
	f.Add([]byte{1, 200, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, _ := New(mustKind("vr-rrmlmc"), Config{MinLevel: 1}, Float64Ops{Dim: 2}, o)
		_ = e.UnmarshalBinary(data) // must return an error or succeed, never panic
	})
}
