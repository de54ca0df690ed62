package optim_test

import (
	"math"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/optim"
)

func TestScheduleWarmupThenCosine(t *testing.T) {
	s := optim.Schedule{BaseLR: 0.8, WarmupSteps: 4, TotalSteps: 14}
	cases := []struct {
		step int
		want float64
	}{
		{0, 0.2}, {1, 0.4}, {3, 0.8}, // warm-up: 0.8 (step+1)/4
		{4, 0.8}, // cosine starts at BaseLR
		{9, 0.4}, // half-way: 0.8 (1 + cos(pi/2))/2
		{6, 0.8 * 0.5 * (1 + math.Cos(math.Pi*2/10))}, // 2 of 10 decay steps
		{14, 0}, {100, 0}, // decayed to 0
	}
	for _, tc := range cases {
		if got := s.LR(tc.step); math.Abs(float64(got)-tc.want) > 1e-6 {
			t.Errorf("LR(%d) = %.7f, want %.7f", tc.step, got, tc.want)
		}
	}
	floor := optim.Schedule{BaseLR: 1, TotalSteps: 10, FinalLR: 0.1}
	if got := floor.LR(5); math.Abs(float64(got)-0.55) > 1e-6 {
		t.Errorf("with FinalLR 0.1, LR(5) = %g, want 0.55", got)
	}
	if got := floor.LR(0); got != 1 {
		t.Errorf("no warm-up: LR(0) = %g, want BaseLR 1", got)
	}
}

// twoTensorParams is a weight (decayed) and a bias (not decayed) with known
// values and gradients.
func twoTensorParams(b *cpu.Backend) *nn.Params {
	p := nn.NewParams()
	p.Add("w", nn.Decayed, nn.Init{}, 2)
	p.Add("running", nn.State, nn.Init{}, 1)
	p.Add("b", nn.NotDecayed, nn.Init{}, 2)
	p.Allocate(b)
	b.Upload(p.Flat(), []float32{1, -2, 0.5, 3})
	return p
}

func TestOptimizerAppliesDecayOnlyToDecayedTensors(t *testing.T) {
	b := cpu.New()
	grads := [3][]float32{{0.5, 0.1, -1, 2}, {-0.3, 0.2, 0.4, 0.1}, {0.1, -0.4, 0.3, -0.2}}
	cases := []struct {
		name string
		cfg  optim.Config
	}{
		{"sgd", optim.Config{Kind: optim.SGD, Momentum: 0.9, WeightDecay: 0.05}},
		{"sgd nesterov", optim.Config{Kind: optim.SGD, Momentum: 0.9, WeightDecay: 0.05, Nesterov: true}},
		{"lars", optim.Config{Kind: optim.LARS, Momentum: 0.9, WeightDecay: 0.05, Eta: 0.01}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := twoTensorParams(b)
			o, err := optim.New(b, p, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			lr, m, wd := 0.1, float64(tc.cfg.Momentum), float64(tc.cfg.WeightDecay)
			// Float64 unrolled reference: tensor w = elements 0,1 (decayed),
			// tensor b = elements 2,3 (no decay, no LARS adaptation).
			w := []float64{1, -2, 0.5, 3}
			v := make([]float64, 4)
			for k := 0; k < 3; k++ {
				b.Upload(p.Grad(), grads[k])
				o.Step(float32(lr))
				for _, r := range [][2]int{{0, 2}, {2, 4}} {
					decayed := r[0] == 0
					g := make([]float64, 4)
					var ww, gg float64
					for i := r[0]; i < r[1]; i++ {
						g[i] = float64(grads[k][i])
						if decayed {
							g[i] += wd * w[i]
						}
						ww += w[i] * w[i]
						gg += g[i] * g[i]
					}
					for i := r[0]; i < r[1]; i++ {
						switch {
						case tc.cfg.Kind == optim.LARS:
							trust := 1.0
							if decayed {
								trust = float64(tc.cfg.Eta) * math.Sqrt(ww) / math.Sqrt(gg)
							}
							v[i] = m*v[i] + lr*trust*g[i]
							w[i] -= v[i]
						case tc.cfg.Nesterov:
							v[i] = m*v[i] + g[i]
							w[i] -= lr * (g[i] + m*v[i])
						default:
							v[i] = m*v[i] + g[i]
							w[i] -= lr * v[i]
						}
					}
				}
				gotW, gotV := cpu.Data(p.Flat()), cpu.Data(o.State())
				for i := range w {
					if math.Abs(float64(gotW[i])-w[i]) > 1e-6 || math.Abs(float64(gotV[i])-v[i]) > 1e-6 {
						t.Fatalf("step %d element %d: w %.7f v %.7f, want w %.7f v %.7f", k+1, i, gotW[i], gotV[i], w[i], v[i])
					}
				}
			}
		})
	}
}

func TestOptimizerRejectsUnknownKind(t *testing.T) {
	b := cpu.New()
	if _, err := optim.New(b, twoTensorParams(b), optim.Config{Kind: optim.Kind(7)}); err == nil {
		t.Fatal("optim.New accepted Kind(7)")
	}
}

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		want optim.Kind
		ok   bool
	}{{"sgd", optim.SGD, true}, {"lars", optim.LARS, true}, {"adam", 0, false}, {"SGD", 0, false}, {"", 0, false}} {
		got, err := optim.ParseKind(tc.name)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseKind(%q) = %v, %v; want %v (ok %v)", tc.name, got, err, tc.want, tc.ok)
		}
		if tc.ok && got.String() != tc.name {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.name)
		}
	}
}
