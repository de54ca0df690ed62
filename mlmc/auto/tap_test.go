package auto

import (
	"math"
	"slices"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestTopTapReadsTheBias: on mlmc.Synthetic, whose top-level correction
// has the exact mean |E H^L| = Ma 2^(-a L) (2^a - 1) and whose bias of L is
// exactly Ma 2^(-a L), the tap leaves the run's sum as the oracle alone
// makes it (to rounding), reads |E H^L|^2 within four of its standard
// errors (a normal deviation that large has probability 6e-5), turns it
// into the bias share Giles' estimate gives, and says no bias stands out
// where the levels have none. Where the iterate is projected the bias is
// read along the feasible set, as |grad F(x0)| is: Synthetic's bias points
// along (1, 1, 1, 1), across the plane sum x = 0, so none is left there. On
// a box's face (the run at x <= X*, at X*) the projection clips each draw
// one way, and the mean of clipped draws carries an offset of the noise's
// size: the reading is the unprojected one there.
func TestTopTapReadsTheBias(t *testing.T) {
	const dim, draws = 4, 4096
	for _, tc := range []struct {
		name    string
		a, ma   float64
		level   int
		seen    bool
		weight  float64
		project func([]float64)
		face    bool // project onto x <= X* instead
	}{
		{"bias well above the noise", 0.5, 4, 3, true, 7, nil, false},
		{"bias near the noise", 1, 0.6, 4, true, 0.25, nil, false},
		{"no bias", 1, 0, 4, false, 3, nil, false},
		{"bias across the feasible plane", 0.5, 4, 3, false, 7, ontoSumZero, false},
		{"on a box's face", 0.5, 4, 3, true, 7, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := mlmc.NewSynthetic(dim, tc.a, 1, 1, 7)
			o.Ma = tc.ma
			copy(o.X, o.XStar) // at the optimum: the noise is Mb 2^(-b L) d
			plain := mlmc.NewSynthetic(dim, tc.a, 1, 1, 7)
			plain.Ma = tc.ma
			copy(plain.X, plain.XStar)
			project := tc.project
			if tc.face {
				xStar := slices.Clone(o.XStar)
				project = func(x []float64) {
					for i := range x {
						x[i] = math.Min(x[i], xStar[i])
					}
				}
			}
			tap := newTopTap(o, tc.level, project, o.X)
			got, want := make([]float64, dim), make([]float64, dim)
			for range draws {
				s, _, err := tap.Draw(tc.level)
				if err != nil {
					t.Fatal(err)
				}
				ps, _, _ := plain.Draw(tc.level)
				if err := tap.Eval(s, mlmc.Current, true, tc.weight, got); err != nil {
					t.Fatal(err)
				}
				tap.Release(s)
				if err := plain.Eval(ps, mlmc.Current, true, tc.weight, want); err != nil {
					t.Fatal(err)
				}
			}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
					t.Fatalf("the run's sum through the tap %v; the oracle's own %v", got, want)
				}
			}
			wantN := draws
			b := tap.read()
			mean := tc.ma * math.Exp2(-tc.a*float64(tc.level)) * (math.Exp2(tc.a) - 1)
			if tc.project != nil {
				mean = 0
			}
			if b.n != wantN || math.Abs(b.y-mean*mean) > 4*b.se || b.seen != tc.seen {
				t.Errorf("%d draws read |E H^L|^2 = %.4g +- %.3g (seen %v); want %d draws, %.4g, seen %v", b.n, b.y, b.se, b.seen, wantN, mean*mean, tc.seen)
			}
			if tc.seen {
				gradNorm := 2.0
				bias := tc.ma * math.Exp2(-tc.a*float64(tc.level))
				share, exact := b.share(tc.a, gradNorm), (bias/gradNorm)*(bias/gradNorm)
				// y within 4 se puts |mean| within about 2 se / |mean|.
				if rel := 4 * b.se / b.y; math.Abs(share-exact) > rel*exact {
					t.Errorf("bias share %.4g; the exact %.4g (band %.2g)", share, exact, rel)
				}
			}
		})
	}
}
