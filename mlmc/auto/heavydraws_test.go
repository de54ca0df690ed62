package auto

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// rareAbove is mlmc.Synthetic whose corrections from level from on are
// rare: H^l is size u (u the bias direction) with probability
// rate 2^-(l - from), else zero, as a coupled construction's H^l is once
// its two halves coalesce in most draws (the pricing problem's queues).
// rate is read at each draw, so a test can measure at rate 0 (the pilot
// sees every such H^l vanish) and then ask what the plan's estimator does
// where the rate is one the measurement cannot rule out.
type rareAbove struct {
	*mlmc.Synthetic
	from       int
	rate, size float64
	rng        *rand.Rand
}

type rareDraw struct {
	inner mlmc.Sample
	level int
	u     float64
}

func (o *rareAbove) Draw(l int) (mlmc.Sample, int64, error) {
	s, c, err := o.Synthetic.Draw(l)
	return rareDraw{s, l, o.rng.Float64()}, c, err
}

func (o *rareAbove) Release(s mlmc.Sample) { o.Synthetic.Release(s.(rareDraw).inner) }

func (o *rareAbove) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	d := s.(rareDraw)
	if !diff || d.level < o.from {
		return o.Synthetic.Eval(d.inner, at, diff, alpha, out)
	}
	if d.u < o.prob(d.level) {
		for i := range out {
			out[i] += alpha * o.size * o.Dir[i]
		}
	}
	return nil
}

func (o *rareAbove) prob(l int) float64 { return o.rate * math.Exp2(-float64(l-o.from)) }

// moment2 is E|Y_l|^2 of the estimator's level-l term at x: h^l at l = 0,
// H^l above (mlmc.Synthetic's closed forms below from).
func (o *rareAbove) moment2(l int, x []float64) float64 {
	if l >= o.from {
		return o.prob(l) * o.size * o.size
	}
	mean := make([]float64, len(x))
	if l == 0 {
		o.Grad(0, x, mean)
	} else {
		d := o.Ma * (math.Exp2(-o.A*float64(l)) - math.Exp2(-o.A*float64(l-1)))
		for i := range mean {
			mean[i] = d * o.Dir[i]
		}
	}
	return norm(mean)*norm(mean) + o.NoiseVar(l, l > 0, x)
}

// TestVanishedLevelsInTheLaw: where H^l vanished in all K draws of the
// pilot, the plan's RT-MLMC law and predicted variance must hold for any
// truth the measurement cannot rule out, not for H^l = 0: each such level
// non-zero with probability up to c/K, as large as the last level that did
// not vanish. The estimator's exact variance there, sum_l E|Y_l|^2 / q_l -
// |E v|^2 from the oracle's closed forms, must be within twice the plan's
// prediction (the step's variance cap rests on it). A law fitted to a
// moment of zero puts such a level at its floor, 1e-6, and one non-zero
// draw in a million iterations moves the iterate by 1e6 |H^l| times the
// step: on the pricing problem such draws threw the iterate to the edge
// of the feasible box, again and again until the budget ran out.
// The pilot is measured at rate 0: every vanished level's K draws zero,
// the outcome it has with probability about e^-2c under the truth (the
// rates halve per level), so the test is deterministic; it fails on a law
// that ignores the rule of three.
func TestVanishedLevelsInTheLaw(t *testing.T) {
	for _, tc := range []struct {
		from int
		c    float64 // the truth's P(H^from != 0) x K
	}{
		{3, 0.5}, {3, 2}, {5, 0.5}, {5, 2},
	} {
		t.Run(fmt.Sprintf("from %d, P = %g/K", tc.from, tc.c), func(t *testing.T) {
			o := &rareAbove{Synthetic: mlmc.NewSynthetic(4, 1, 2, 1, 7), from: tc.from, rng: rand.New(rand.NewPCG(7, 8))}
			x := o.X
			m, err := Measure[[]float64](o, mlmc.Float64Ops{Dim: 4}, 0, 200_000, 64, 11)
			if err != nil {
				t.Fatal(err)
			}
			k := m.Report.Draws
			if last := m.Report.Levels[len(m.Report.Levels)-1]; last.Moment2 != 0 || last.Level < tc.from {
				t.Fatalf("the pilot's top level %d is not a vanished one: %+v", last.Level, last)
			}
			// A continuation's best fit stops L below a vanished tail; a
			// later stage whose floor (the L an earlier stage needed) is
			// above it runs RT-MLMC over the vanished levels.
			p, err := ChooseFrom(m.Report, "x0", m.Samples, GradNorm(m.Report), Target{Gap: 1e-4, Budget: 1e9}, Rules{BestFit: true}, mlmc.Unbounded, tc.from+2)
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind.Method != mlmc.RTMLMC || p.MaxLevel < tc.from {
				t.Fatalf("plan %s L = %d: the test needs RT-MLMC over the vanished levels\n%s", p.Method, p.MaxLevel, p)
			}
			// The truth: as large as the last level that did not vanish.
			o.size = math.Sqrt(o.moment2(tc.from-1, x))
			o.rate = tc.c / float64(k)
			mean := make([]float64, len(x))
			o.Grad(min(p.MaxLevel, tc.from-1), x, mean)
			for l := tc.from; l <= p.MaxLevel; l++ {
				for i := range mean {
					mean[i] += o.prob(l) * o.size * o.Dir[i]
				}
			}
			exact := -norm(mean) * norm(mean)
			for i, q := range p.LevelProbs {
				exact += o.moment2(p.MinLevel+i, x) / q
			}
			pred := p.predictedVar()
			t.Logf("exact %.4g, predicted %.4g, L = %d, K = %d, law %.3g", exact, pred, p.MaxLevel, k, p.LevelProbs)
			if !(exact <= 2*pred) {
				t.Errorf("exact variance %.4g of the plan's RT-MLMC estimator, predicted %.4g (L = %d, K = %d, law %.3g)", exact, pred, p.MaxLevel, k, p.LevelProbs)
			}
		})
	}
}

// TestLaterStageStepCapped: a stage after the first starts near the
// optimum, at the gap its predecessor ended with, and an RT-MLMC plan's
// step there keeps its iterates' noise floor, step x Var / 4, within that
// gap of F(x0) - F*, whether the method changed (the step re-checked) or
// not (the last stage's step kept). A cap at the whole of F(x0) - F*, as
// in the first stage, let the pricing problem's late stages run at a
// floor far above their targets, where the average of the iterates
// crawled to the end of the budget. On mlmc.Synthetic in the paper's
// three regimes, with F* = 0 exact.
func TestLaterStageStepCapped(t *testing.T) {
	for _, rc := range []struct {
		a, b, c float64
		regime  string
	}{{1, 2, 1, "b > c"}, {1, 1, 1, "b = c"}, {1, 0.5, 1, "b < c"}} {
		t.Run(rc.regime, func(t *testing.T) {
			p := synthetic(4, rc.a, rc.b, rc.c, nil)
			f0, _ := p.Objective(p.X0)
			res, err := Run(p, Settings{Target: Target{Gap: 1e-4, Budget: 4_000_000}, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			// Each plan is checked against the stage that made it: a stage
			// whose pilot would take more than half of what the budget has
			// left runs on with the last stage's plan, made for that stage.
			checked, seen := 0, map[*Plan]bool{}
			for _, pl := range res.Record.Stages[0].Plans {
				seen[pl] = true
			}
			for i, st := range res.Record.Stages[1:] {
				g := float64(res.Record.Stages[i].GapEstimate)
				if !(g > 0 && g < 1) {
					continue
				}
				for _, pl := range st.Plans {
					if seen[pl] || pl.Kind.Method != mlmc.RTMLMC || pl.Step == 0 {
						continue
					}
					seen[pl] = true
					checked++
					if floor := pl.Step * pl.predictedVar() / 4; floor > g*f0*(1+1e-9) {
						t.Errorf("stage %d (started at the gap %.3g): %s L=%d at step %.3g, noise floor %.3g > %.3g x F(x0) = %.3g\n%s",
							i+2, g, pl.Method, pl.MaxLevel, pl.Step, floor, g, g*f0, pl.Reasons.Step)
					}
				}
			}
			if checked == 0 {
				t.Fatalf("no later stage ran RT-MLMC: nothing checked\n%s", res.Record.Summary())
			}
		})
	}
}
