package ref_test

import (
	"math"
	"testing"

	"github.com/simclr-go/simclr/internal/ref"
	"github.com/simclr-go/simclr/tensor"
)

// Three gradients applied in turn to a 2-element tensor starting at w0.
var (
	w0    = [2]float64{1, -2}
	grads = [3][2]float64{{0.5, 0.1}, {-0.3, 0.2}, {0.1, -0.4}}
)

func closeTo(t *testing.T, what string, got []float32, want [2]float64) {
	t.Helper()
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 2e-6*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %.8f, want %.8f", what, i, got[i], want[i])
		}
	}
}

func TestSGDStepMatchesPyTorchUnrolled(t *testing.T) {
	cases := []struct {
		name string
		cfg  tensor.SGDConfig
	}{
		{"momentum+wd", tensor.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01}},
		{"nesterov+wd", tensor.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01, Nesterov: true}},
		{"plain", tensor.SGDConfig{LR: 0.5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lr, m, wd := float64(tc.cfg.LR), float64(tc.cfg.Momentum), float64(tc.cfg.WeightDecay)
			// torch.optim.SGD, dampening 0, unrolled per element:
			// step 1: d1 = g1 + wd w0; buf1 = d1
			// step k: dk = gk + wd w(k-1); bufk = m buf(k-1) + dk
			// update: w(k) = w(k-1) - lr * (nesterov ? dk + m bufk : bufk)
			var want [4][2]float64
			var buf [4][2]float64
			want[0] = w0
			for i := 0; i < 2; i++ {
				d1 := grads[0][i] + wd*want[0][i]
				buf[1][i] = d1
				u1 := buf[1][i]
				if tc.cfg.Nesterov {
					u1 = d1 + m*buf[1][i]
				}
				want[1][i] = want[0][i] - lr*u1

				d2 := grads[1][i] + wd*want[1][i]
				buf[2][i] = m*buf[1][i] + d2
				u2 := buf[2][i]
				if tc.cfg.Nesterov {
					u2 = d2 + m*buf[2][i]
				}
				want[2][i] = want[1][i] - lr*u2

				d3 := grads[2][i] + wd*want[2][i]
				buf[3][i] = m*buf[2][i] + d3
				u3 := buf[3][i]
				if tc.cfg.Nesterov {
					u3 = d3 + m*buf[3][i]
				}
				want[3][i] = want[2][i] - lr*u3
			}
			w := []float32{float32(w0[0]), float32(w0[1])}
			v := make([]float32, 2)
			for k := 0; k < 3; k++ {
				g := []float32{float32(grads[k][0]), float32(grads[k][1])}
				ref.SGDStep(tc.cfg, w, g, v)
				closeTo(t, "w", w, want[k+1])
				closeTo(t, "v", v, buf[k+1])
			}
		})
	}
}

func TestLARSStepMatchesSimCLRUnrolled(t *testing.T) {
	norm := func(x [2]float64) float64 { return math.Hypot(x[0], x[1]) }
	cases := []struct {
		name string
		cfg  tensor.LARSConfig
	}{
		{"adapted", tensor.LARSConfig{LR: 0.3, Momentum: 0.9, WeightDecay: 1e-2, Eta: 1e-3, Adapt: true}},
		{"not adapted (BN, bias)", tensor.LARSConfig{LR: 0.3, Momentum: 0.9, WeightDecay: 1e-2, Eta: 1e-3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lr, m, wd, eta := float64(tc.cfg.LR), float64(tc.cfg.Momentum), float64(tc.cfg.WeightDecay), float64(tc.cfg.Eta)
			w, v := w0, [2]float64{}
			wf := []float32{float32(w0[0]), float32(w0[1])}
			vf := make([]float32, 2)
			for k := 0; k < 3; k++ {
				// SimCLR LARS: g = grad + wd w; trust = eta |w| / |g|;
				// v = m v + lr trust g; w = w - v. Not adapted: wd 0, trust 1.
				var g [2]float64
				trust := 1.0
				if tc.cfg.Adapt {
					g = [2]float64{grads[k][0] + wd*w[0], grads[k][1] + wd*w[1]}
					trust = eta * norm(w) / norm(g)
				} else {
					g = grads[k]
				}
				for i := range w {
					v[i] = m*v[i] + lr*trust*g[i]
					w[i] -= v[i]
				}
				ref.LARSStep(tc.cfg, wf, []float32{float32(grads[k][0]), float32(grads[k][1])}, vf)
				closeTo(t, "w", wf, w)
				closeTo(t, "v", vf, v)
			}
		})
	}
}

func TestLARSTrustIsOneForZeroNorms(t *testing.T) {
	cfg := tensor.LARSConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.1, Eta: 1e-3, Adapt: true}
	// w = 0 (a freshly zeroed tensor): trust 1, so v = lr * grad.
	w := []float32{0, 0}
	v := []float32{0, 0}
	ref.LARSStep(cfg, w, []float32{1, -2}, v)
	closeTo(t, "v", v, [2]float64{0.1, -0.2})
	closeTo(t, "w", w, [2]float64{-0.1, 0.2})
}

func TestStepPanicsOnLengthMismatch(t *testing.T) {
	for name, f := range map[string]func(){
		"sgd": func() {
			ref.SGDStep(tensor.SGDConfig{}, make([]float32, 3), make([]float32, 2), make([]float32, 3))
		},
		"lars": func() {
			ref.LARSStep(tensor.LARSConfig{}, make([]float32, 3), make([]float32, 3), make([]float32, 4))
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}
