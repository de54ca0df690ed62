package mlmc_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// uniformMethod is a method written outside the package, as a user would:
// RT-MLMC with the uniform law q_l = 1/K on the K levels
// MinLevel..MaxLevel, unbiased for grad F^L. It is the whole of what adding
// a method takes, beside the one registration line below.
type uniformMethod struct{}

func (uniformMethod) Name() string { return "uniformrt" }

func (uniformMethod) Check(cfg mlmc.Config, oracleMax int) error {
	return mlmc.CheckLevelRange(cfg, oracleMax)
}

func (uniformMethod) Bind(cfg mlmc.Config, _ int) mlmc.Allocation { return uniformQueries{cfg} }

type uniformQueries struct{ cfg mlmc.Config }

func (p uniformQueries) levels() int { return p.cfg.MaxLevel - p.cfg.MinLevel + 1 }

func (p uniformQueries) Queries(plan []mlmc.Query, r *rand.Rand) ([]mlmc.Query, int) {
	l := p.cfg.MinLevel + r.IntN(p.levels())
	return append(plan, mlmc.Query{Level: l, Correction: l > p.cfg.MinLevel, Weight: float64(p.levels())}), 0
}

func (p uniformQueries) Expected() []mlmc.LevelQueries {
	var q []mlmc.LevelQueries
	for l := p.cfg.MinLevel; l <= p.cfg.MaxLevel; l++ {
		q = append(q, mlmc.LevelQueries{Level: l, Queries: 1 / float64(p.levels()), Correction: l > p.cfg.MinLevel})
	}
	return q
}

func (uniformQueries) Notes() []string { return nil }

// The registration line.
var uniformRT, errUniformRT = mlmc.Register(uniformMethod{})

// A method registered from outside the package runs through New, its VR
// version too, with the mean of its estimates grad F^L and its cost per
// iteration ExpectedCost's, within 5 standard errors (a correct method
// fails a check with probability below 1e-6); and the other target, grad F,
// is rejected, so the check has power.
func TestRegisteredMethodRunsThroughTheEstimator(t *testing.T) {
	if errUniformRT != nil {
		t.Fatal(errUniformRT)
	}
	if !slices.Contains(mlmc.Names(), "vr-uniformrt") {
		t.Fatalf("Names() = %v, want it to list vr-uniformrt", mlmc.Names())
	}
	if _, err := mlmc.Register(uniformMethod{}); err == nil {
		t.Error("a second method named uniformrt was registered")
	}
	for _, name := range []string{"uniformrt", "vr-uniformrt"} {
		t.Run(name, func(t *testing.T) {
			k, err := mlmc.ParseKind(name)
			if err != nil || k.Method != uniformRT || k.String() != name {
				t.Fatalf("ParseKind(%q) = %v, %v; want the registered method", name, k, err)
			}
			const dim, iters = 2, 20000
			cfg := mlmc.Config{MinLevel: 1, MaxLevel: 2, B: 2, C: 1, D1: 2, QE: 1, Seed: 9}
			o := mlmc.NewSynthetic(dim, 1, 2, 1, 4)
			o.Ma = 4
			copy(o.X, []float64{0.5, -0.5})
			e, err := mlmc.New(k, cfg, mlmc.Float64Ops{Dim: dim}, o)
			if err != nil {
				t.Fatal(err)
			}
			wantSamples, _, err := mlmc.ExpectedCost(k, cfg, mlmc.Unbounded)
			if err != nil {
				t.Fatal(err)
			}
			var sum, sum2 [dim]float64
			var cost, cost2 float64
			out := make([]float64, dim)
			for it := range iters {
				step, err := e.Estimate(it, out)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range out {
					sum[i] += v
					sum2[i] += v * v
				}
				c := float64(step.Samples)
				cost, cost2 = cost+c, cost2+c*c
			}
			within := func(s, s2, want float64) (float64, bool) {
				mean := s / iters
				se := math.Sqrt(math.Max(s2/iters-mean*mean, 0) / (iters - 1))
				return mean, math.Abs(mean-want) <= 5*se
			}
			gradL, gradF := make([]float64, dim), make([]float64, dim)
			o.Grad(cfg.MaxLevel, o.X, gradL)
			o.Grad(-1, o.X, gradF)
			rejected := false
			for i := range dim {
				if mean, ok := within(sum[i], sum2[i], gradL[i]); !ok {
					t.Errorf("coordinate %d: mean %.4f, want grad F^L = %.4f", i, mean, gradL[i])
				}
				_, ok := within(sum[i], sum2[i], gradF[i])
				rejected = rejected || !ok
			}
			if !rejected {
				t.Errorf("the mean is also consistent with grad F = %v: the test has no power", gradF)
			}
			if mean, ok := within(cost, cost2, wantSamples); !ok {
				t.Errorf("samples per iteration %.3f, ExpectedCost %.3f", mean, wantSamples)
			}
		})
	}
}

// Register refuses names that ParseKind could not give back.
func TestRegisterRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "vr-x", "Upper", "two words", "lsgd"} {
		if _, err := mlmc.Register(named(name)); err == nil {
			t.Errorf("Register accepted the name %q", name)
		}
	}
}

type named string

func (n named) Name() string                              { return string(n) }
func (named) Check(mlmc.Config, int) error                { return nil }
func (named) Bind(cfg mlmc.Config, _ int) mlmc.Allocation { return uniformQueries{cfg} }

// The traits that programs comparing methods read (display name, no top
// level, single level, random levels) come from each method's table entry;
// a registered method without them gets its Name and the defaults, and
// Methods lists it after the paper's five.
func TestMethodTraits(t *testing.T) {
	if errUniformRT != nil {
		t.Fatal(errUniformRT)
	}
	for _, tc := range []struct {
		m                           mlmc.Method
		display                     string
		unbounded, single, drawsLev bool
	}{
		{mlmc.LSGD, "L-SGD", false, true, false},
		{mlmc.VMLMC, "V-MLMC", false, false, false},
		{mlmc.RTMLMC, "RT-MLMC", false, false, true},
		{mlmc.RUMLMC, "RU-MLMC", true, false, true},
		{mlmc.RRMLMC, "RR-MLMC", true, false, true},
		{uniformRT, "uniformrt", false, false, false},
		{mlmc.Method(-1), "Method(-1)", false, false, false},
	} {
		got := []any{tc.m.DisplayName(), tc.m.Unbounded(), tc.m.SingleLevel(), tc.m.DrawsLevels()}
		want := []any{tc.display, tc.unbounded, tc.single, tc.drawsLev}
		if !slices.Equal(got, want) {
			t.Errorf("%v: (DisplayName, Unbounded, SingleLevel, DrawsLevels) = %v, want %v", tc.m, got, want)
		}
	}
	ms := mlmc.Methods()
	if len(ms) < 6 || !slices.Equal(ms[:5], []mlmc.Method{mlmc.LSGD, mlmc.VMLMC, mlmc.RTMLMC, mlmc.RUMLMC, mlmc.RRMLMC}) || !slices.Contains(ms, uniformRT) {
		t.Errorf("Methods() = %v, want the paper's five first, then uniformrt", ms)
	}
}
