package sgd

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// exact is F(x) = x^2/2 in one dimension with the exact gradient x at every
// level, each draw costing cost samples: gradient descent with step a gives
// x_t = (1 - a)^t, so every figure of a run is known by hand.
type exact struct {
	x    []float64
	cost int64
}

func (q *exact) MaxLevel() int                        { return mlmc.Unbounded }
func (q *exact) Draw(int) (mlmc.Sample, int64, error) { return nil, q.cost, nil }
func (q *exact) Eval(_ mlmc.Sample, _ mlmc.Point, _ bool, alpha float64, out []float64) error {
	out[0] += alpha * q.x[0]
	return nil
}
func (q *exact) Release(mlmc.Sample) {}

func half(x []float64) (float64, float64) { return x[0] * x[0] / 2, 0 }

func exactProblem(cost int64) (*Problem, Instance) {
	q := &exact{cost: cost}
	inst := Instance{Oracle: q, At: func(x, _ []float64) { q.x = x }}
	return &Problem{X0: []float64{1}, NewOracle: func(uint64) (Instance, error) { return inst, nil }, Objective: half}, inst
}

var lsgd = Method{Kind: mlmc.Kind{Method: mlmc.LSGD}}

func value(x []float64) float64 { f, _ := half(x); return f }

// TestMinimizeByHand: the iterates, costs, logged values, first touches and
// stays-below costs of runs whose iterates are known by hand.
func TestMinimizeByHand(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cost      int64
		sched     Schedule
		budget    int64
		precond   float64 // 0: none
		clampAt   float64 // 0: no projection
		stopAt    int64   // 0: none
		iters     int     // 0: no limit
		wantX     float64
		wantIters int
		wantCost  int64
		wantDrawn int64
	}{
		// x_t = 0.5^t; 10 iterations of 1 sample.
		{"constant step", 1, Constant(0.5), 10, 0, 0, 0, 0, math.Pow(0.5, 10), 10, 10, 11},
		// 2 samples a draw: the 4th estimate (cost 8) passes 7 and is not taken.
		{"budget between draws", 2, Constant(0.5), 7, 0, 0, 0, 0, 0.125, 3, 6, 8},
		// Stopped after the step whose cost reaches 7: the 4th (cost 8) is
		// taken, no estimate is drawn beyond it.
		{"stop at a cost", 2, Constant(0.5), 100, 0, 0, 7, 0, 0.0625, 4, 8, 8},
		// Stopped after 3 steps, no estimate drawn beyond them.
		{"stop after iterations", 1, Constant(0.5), 100, 0, 0, 0, 3, 0.125, 3, 3, 3},
		// StopAt above the budget: the budget ends the run first, as
		// without it (the 4th estimate, cost 8, passes 7 and is dropped).
		{"stop beyond the budget", 2, Constant(0.5), 7, 0, 0, 50, 0, 0.125, 3, 6, 8},
		// step_t = 0.5/(1 + t): x = 1 x 0.5 x 0.75 x (1 - 1/6).
		{"decaying step", 1, Decay{Step0: 0.5, T0: 1}, 3, 0, 0, 0, 0, 0.5 * 0.75 * (1 - 1.0/6), 3, 3, 4},
		// d = 2 with step 0.25 is step 0.5.
		{"preconditioned", 1, Constant(0.25), 4, 2, 0, 0, 0, 0.0625, 4, 4, 5},
		// Projected onto x >= 0.2: 0.5, 0.25, then 0.2 for good.
		{"projected", 1, Constant(0.5), 6, 0, 0.2, 0, 0, 0.2, 6, 6, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, inst := exactProblem(tc.cost)
			if tc.precond > 0 {
				p.Precondition = func(_, d []float64) { d[0] = tc.precond }
			}
			if tc.clampAt > 0 {
				p.Project = func(x []float64) { x[0] = math.Max(x[0], tc.clampAt) }
			}
			res, err := Minimize(p, inst, lsgd, tc.sched, Settings{Budget: tc.budget, Value: value, StopAt: tc.stopAt, Iterations: tc.iters})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.X[0]-tc.wantX) > 1e-15 || res.Iterations != tc.wantIters || res.Cost != tc.wantCost || res.Drawn != tc.wantDrawn || res.Diverged || res.Stopped != (tc.stopAt > 0 && tc.stopAt <= tc.budget || tc.iters > 0) {
				t.Errorf("x %v after %d iterations, cost %d, drawn %d (diverged %v, stopped %v); want %v, %d, %d, %d",
					res.X[0], res.Iterations, res.Cost, res.Drawn, res.Diverged, res.Stopped, tc.wantX, tc.wantIters, tc.wantCost, tc.wantDrawn)
			}
		})
	}
}

// TestRecorders: with step 0.5 the gap F(x_t)/F(x0) is 0.25^t at cost t.
func TestRecorders(t *testing.T) {
	p, inst := exactProblem(1)
	trace := NewTrace([]int64{0, 1, 2, 5, 100})
	gap := func(v float64) float64 { return v / 0.5 }
	ft := NewFirstTouch([]float64{0.3, 0.01, 1e-30}, gap)
	res, err := Minimize(p, inst, lsgd, Constant(0.5), Settings{Budget: 8, Value: value}, trace, ft)
	if err != nil {
		t.Fatal(err)
	}
	trace.Finish(value(res.X))
	want := []float64{0.5, 0.125, 0.5 * math.Pow(0.25, 2), 0.5 * math.Pow(0.25, 5), 0.5 * math.Pow(0.25, 8)}
	for k, w := range want {
		if math.Abs(trace.Values[k]-w) > 1e-18 {
			t.Errorf("value at point %d = %v, want %v", trace.Points[k], trace.Values[k], w)
		}
	}
	// 0.25 <= 0.3 at t = 1, 0.25^4 = 0.0039 <= 0.01 at t = 4; 1e-30 never.
	if ft.First[0] != 1 || ft.First[1] != 4 || ft.First[2] != -1 {
		t.Errorf("first touches %v, want [1 4 -1]", ft.First)
	}
	// At the points 0, 1, 2, 5, 100 the gaps are 1, 0.25, 0.0625, ...:
	// at or below 0.1 from point 2 on.
	if c := trace.StaysBelow(0.1, gap); c != 2 {
		t.Errorf("stays below 0.1 from %d, want 2", c)
	}
	if c := trace.StaysBelow(1e-30, gap); c != -1 {
		t.Errorf("stays below 1e-30 from %d, want -1", c)
	}
}

// TestDivergence: step 2.5 gives x_t = (-1.5)^t; with F = +Inf where |x| >
// 10, the iterate leaves the domain at t = 6 (1.5^6 = 11.4) while still
// finite. The Divergence recorder ends the run there, and a trace whose
// logged value is +Inf does the same; without either, the run goes on to
// its budget.
func TestDivergence(t *testing.T) {
	dom := func(x []float64) float64 {
		if math.Abs(x[0]) > 10 {
			return math.Inf(1)
		}
		return value(x)
	}
	for _, tc := range []struct {
		name      string
		rec       func() Recorder
		wantIters int
		diverged  bool
	}{
		{"divergence", func() Recorder { return &Divergence{Every: 1} }, 6, true},
		{"trace", func() Recorder { return NewTrace([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9}) }, 6, true},
		{"none", func() Recorder { return RecorderFunc(func(Op, *Location) Status { return Continue }) }, 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, inst := exactProblem(1)
			res, err := Minimize(p, inst, lsgd, Constant(2.5), Settings{Budget: 20, Value: dom}, tc.rec())
			if err != nil {
				t.Fatal(err)
			}
			if res.Diverged != tc.diverged || res.Iterations < tc.wantIters || res.Iterations > tc.wantIters+1 {
				t.Errorf("diverged %v after %d iterations, want %v after %d", res.Diverged, res.Iterations, tc.diverged, tc.wantIters)
			}
		})
	}
	// Non-finite iterates end a run as diverged without any recorder.
	p, inst := exactProblem(1)
	res, err := Minimize(p, inst, lsgd, Constant(1e300), Settings{Budget: 20})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Diverged || res.Iterations > 3 {
		t.Errorf("step 1e300: diverged %v after %d iterations, want diverged within 3", res.Diverged, res.Iterations)
	}
}

// TestStopAndLockstep: a recorder's Stop ends the run where it is, and a
// Run advanced by Next reaches what Minimize does.
func TestStopAndLockstep(t *testing.T) {
	p, inst := exactProblem(1)
	stop := RecorderFunc(func(op Op, loc *Location) Status {
		if op == Stepped && loc.Value() <= 0.5*math.Pow(0.25, 3) {
			return Stop
		}
		return Continue
	})
	res, err := Minimize(p, inst, lsgd, Constant(0.5), Settings{Budget: 100, Value: value}, stop)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.Iterations != 3 || res.X[0] != 0.125 {
		t.Errorf("stopped %v after %d iterations at %v, want stopped after 3 at 0.125", res.Stopped, res.Iterations, res.X[0])
	}
	r, err := NewRun(p, inst, lsgd, Constant(0.5), Settings{Budget: 5})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		more, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		n++
	}
	if n != 5 || r.Location().X[0] != 1.0/32 || r.Totals().Samples != 6 {
		t.Errorf("%d steps to %v with %d samples, want 5 to 1/32 with 6", n, r.Location().X[0], r.Totals().Samples)
	}
}

// TestProgressAndRelay: the progress line names the share and the time
// left; a relay passes another iterate on to its recorders.
func TestProgressAndRelay(t *testing.T) {
	var out bytes.Buffer
	pr := &Progress{W: &out, Budget: 100, Label: "run: "}
	loc := &Location{Cost: 0}
	pr.Record(Stepped, loc)
	loc.Cost = 25
	pr.Record(Stepped, loc)
	if s := out.String(); !strings.Contains(s, "run: 25 of 100 (25%)") || !strings.Contains(s, "left") {
		t.Errorf("progress %q", s)
	}
	trace := NewTrace([]int64{1})
	rl := NewRelay(value, trace)
	rl.Send(Estimated, 0, 0, []float64{1}, true)
	rl.Send(Stepped, 1, 1, []float64{0.5}, true)
	rl.Send(Estimated, 1, 2, []float64{0.5}, false)
	if trace.Values[0] != 0.125 {
		t.Errorf("relayed value %v, want 0.125", trace.Values[0])
	}
}

// TestAverage: with step 0.5 the iterates are x_t = 0.5^t, and the average
// weights x_t in proportion to t, so after T steps it is
// sum t 0.5^t / sum t, known by hand; a second run carrying the same
// Average on from where the first stopped ends where one run of both
// lengths does, and the average is taken in before the recorders hear of
// the step.
func TestAverage(t *testing.T) {
	byHand := func(steps int) float64 {
		num, den := 0.0, 0.0
		for k := 1; k <= steps; k++ {
			num += float64(k) * math.Pow(0.5, float64(k))
			den += float64(k)
		}
		return num / den
	}
	for _, tc := range []struct {
		name         string
		first, again int64 // the budgets of one run and of a second one carrying its average on
	}{
		{"one step", 1, 0},
		{"five steps", 5, 0},
		{"three then four", 3, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, inst := exactProblem(1)
			avg := &Average{X: []float64{1}}
			var seen []float64
			rec := RecorderFunc(func(op Op, loc *Location) Status {
				if op == Stepped {
					seen = append(seen, avg.X[0])
				}
				return Continue
			})
			res, err := Minimize(p, inst, lsgd, Constant(0.5), Settings{Budget: tc.first, Average: avg}, rec)
			if err != nil {
				t.Fatal(err)
			}
			steps := int(tc.first)
			if tc.again > 0 {
				if _, err := Minimize(p, inst, lsgd, Constant(0.5), Settings{X: res.X, Budget: tc.again, Base: tc.first, Average: avg}, rec); err != nil {
					t.Fatal(err)
				}
				steps = int(tc.again)
			}
			// The x0 = 1 the average starts from carries weight 0: it
			// is replaced by x_1 at the first step.
			want := byHand(steps)
			if avg.N != steps || math.Abs(avg.X[0]-want) > 1e-15 {
				t.Errorf("average of %d iterates %v; want %d, %v", avg.N, avg.X[0], steps, want)
			}
			if len(seen) != steps || seen[len(seen)-1] != avg.X[0] {
				t.Errorf("the recorders saw the averages %v; want %d of them ending at %v", seen, steps, avg.X[0])
			}
		})
	}
}

// TestAverageOfAnotherLength: an Average whose vector is not the
// iterate's length is one clear error, not a panic or a partial average.
func TestAverageOfAnotherLength(t *testing.T) {
	p, inst := exactProblem(1)
	_, err := Minimize(p, inst, lsgd, Constant(0.5), Settings{Budget: 3, Average: &Average{X: make([]float64, 2)}})
	if err == nil || !strings.Contains(err.Error(), "Settings.Average") {
		t.Fatalf("error %v; want one naming Settings.Average", err)
	}
}

// TestStopAtCountsBase: StopAt is a cost with Base in it, as Budget is: a
// run that carries on from 10 samples spent and stops at 13 takes the
// three steps of one sample that reach it.
func TestStopAtCountsBase(t *testing.T) {
	p, inst := exactProblem(1)
	res, err := Minimize(p, inst, lsgd, Constant(0.5), Settings{Budget: 100, Base: 10, StopAt: 13})
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != 3 || res.Cost != 13 || res.Drawn != 13 || !res.Stopped {
		t.Errorf("%d iterations, cost %d, drawn %d, stopped %v; want 3, 13, 13, true", res.Iterations, res.Cost, res.Drawn, res.Stopped)
	}
}
