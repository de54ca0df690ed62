package auto

import (
	"math"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestGradNormProjected: |grad F(x0)|, which every plan's bias share
// divides by, is the gradient's part along the feasible set. The
// synthetic F = |x - X*|^2 / 2 at x0 = 0 has grad F(x0) = -X*,
// X* = (1, 2, 3, 4)/4: |grad F(x0)| = 1.369, of which 0.559 lies in the
// plane sum x = 0. Projected onto that plane the run reads 0.559 (read
// without the projection, 1.369, the bias share would be (1.369/0.559)^2
// = 6 times too small); a box the point is inside changes nothing.
func TestGradNormProjected(t *testing.T) {
	plane := func(x []float64) {
		s := 0.0
		for _, v := range x {
			s += v
		}
		for i := range x {
			x[i] -= s / float64(len(x))
		}
	}
	box := func(x []float64) {
		for i := range x {
			x[i] = math.Max(-10, math.Min(10, x[i]))
		}
	}
	for _, tc := range []struct {
		name    string
		project func([]float64)
		want    float64
	}{
		{"no projection", nil, 1.369},
		{"onto sum x = 0", plane, 0.559},
		{"inside a box", box, 1.369},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := synthetic(4, 1, 2, 1, func(o *mlmc.Synthetic) { o.Mb = 0.01 })
			p.Project = tc.project
			s, _ := Settings{Target: Target{Gap: 1e-2, Budget: 4_000_000}, Seed: 5}.withDefaults()
			r := newTestRunner(p, s)
			if _, err := r.measure("x0", 0.1, 40_000); err != nil {
				t.Fatal(err)
			}
			// The top row's draws carry noise of trace variance about
			// 0.08 (Mb = 0.01): a 10% band is several of the reading's
			// standard errors.
			if math.Abs(r.gradNorm0-tc.want) > 0.1*tc.want {
				t.Errorf("|grad F(x0)| read as %.3f, want %.3f", r.gradNorm0, tc.want)
			}
		})
	}
}

// TestProjectorKeepsInactive: a projection that leaves a direction as it
// is keeps it bit for bit (an inactive constraint changes no reading) and
// says it was not active; an affine one maps it onto its plane.
func TestProjectorKeepsInactive(t *testing.T) {
	for _, tc := range []struct {
		name    string
		project func([]float64)
		v, want []float64
		active  bool
	}{
		{"interior of a box", func(x []float64) {
			for i := range x {
				x[i] = math.Max(-1, math.Min(1, x[i]))
			}
		}, []float64{0.3, -1e-7, 2e5}, []float64{0.3, -1e-7, 2e5}, false},
		{"plane sum x = 1", func(x []float64) {
			s := 0.0
			for _, v := range x {
				s += v
			}
			for i := range x {
				x[i] -= (s - 1) / 3
			}
		}, []float64{1, 2, 6}, []float64{-2, -1, 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newProjector(tc.project, []float64{0.2, 0.3, 0.5})
			v := append([]float64(nil), tc.v...)
			pr.direction(v)
			for i := range v {
				if tc.active && math.Abs(v[i]-tc.want[i]) > 1e-6 || !tc.active && v[i] != tc.want[i] {
					t.Errorf("P v = %v, want %v", v, tc.want)
					break
				}
			}
			if pr.active != tc.active {
				t.Errorf("active %v, want %v", pr.active, tc.active)
			}
		})
	}
}
