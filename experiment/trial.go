package experiment

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/simclr-go/simclr/mlmc/auto"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// Trace is one trial's outcome.
type Trace struct {
	Seed uint64 `json:"seed"`
	// Values[k] is F (or the problem's Error) at the last iterate whose
	// cumulative cost is at most the k-th logged point (x0 before any);
	// +Inf outside the domain or after divergence.
	Values []float64 `json:"-"`
	// First[i] is the cost at which the i-th target was first touched, read
	// at every iterate when the problem allows it (Problem.EveryIterate and
	// a known F*), else -1 until the protocol reads it off Values.
	First []int64 `json:"-"`
	// Diverged says an iterate left the finite numbers or the domain.
	Diverged bool `json:"diverged,omitempty"`
	// Iterations, Cost and Final: the iterates within the budget, the cost
	// of the last of them, and it.
	Iterations int       `json:"iterations"`
	Cost       int64     `json:"cost"`
	Final      []float64 `json:"-"`
	// Auto is the auto method's record: its stages, plans and reasons.
	Auto *auto.Record `json:"auto,omitempty"`

	firstRead bool // First was read during the run
}

// gauge turns recorded values into gaps: the relative gap, or the
// problem's Error as it is.
type gauge struct {
	err       bool
	f0, fStar float64
	// objective, where the targets are read on Error, is the problem's
	// Objective (nil: none), with f0 and fStar its values at x0 and at the
	// optimum: auto plans for a relative objective gap and claims one, and
	// its claims are checked on that gap (autoGap).
	objective func(x []float64) (float64, float64)
}

func (g gauge) gap(v float64) float64 {
	if g.err {
		return v
	}
	return g.relative(v)
}

// relative is the relative objective gap of the value v.
func (g gauge) relative(v float64) float64 { return (v - g.fStar) / (g.f0 - g.fStar) }

// autoGap is the true gap at auto's answer x, on the scale of auto's own
// gap estimate: the relative objective gap. final is the value at x as the
// targets read it (+Inf for a diverged run). Where the targets are read on
// Error and the problem has no Objective, it is the Error.
func (g gauge) autoGap(x []float64, final float64) float64 {
	if !g.err || g.objective == nil || math.IsInf(final, 1) {
		return g.gap(final)
	}
	v, _ := g.objective(x)
	return g.relative(v)
}

// trial runs method m from the problem's x0 with one seed on the driver
// (package mlmc/sgd) until the next iterate would pass budget, recording
// the value at every logged point (points, increasing); g reads the first
// touch of each target at every iterate when the problem allows it. A
// logged value outside the domain (+Inf) ends a fixed method's trial as
// diverged; auto goes on, its safeguard putting the answer back.
func trial(p *Problem, m Method, seed uint64, budget int64, points []int64, targets []float64, g gauge, everyIterate bool) (Trace, error) {
	tr := Trace{Seed: seed, First: make([]int64, len(targets)), firstRead: everyIterate}
	for i := range tr.First {
		tr.First[i] = -1
	}
	trace := sgd.NewTrace(points)
	recs := []sgd.Recorder{trace}
	var ft *sgd.FirstTouch
	if everyIterate {
		ft = sgd.NewFirstTouch(targets, g.gap)
		recs = append(recs, ft)
	}
	var x []float64
	if m.Auto != nil {
		s := *m.Auto
		s.Target.Budget, s.Seed, s.Value = budget, seed, p.value
		if s.Log != nil {
			s.Log = prefixed{s.Log, fmt.Sprintf("%s, seed %d: ", p.Name, seed)}
		}
		if s.Score == nil && p.Objective == nil && p.Error != nil {
			s.Score = func(x []float64) (float64, float64) { return p.Error(x), 0 }
		}
		res, err := auto.Run(&p.Problem, s, recs...)
		var ae *auto.Error
		switch {
		case errors.As(err, &ae):
			// auto cannot serve this trial's problem: the trial stays at
			// x0, its record saying why, instead of stopping the report.
			res = &auto.Result{X: p.X0, Record: &auto.Record{Target: s.Target, Stopped: "auto cannot serve it: " + err.Error()}}
		case err != nil:
			return tr, fmt.Errorf("auto, seed %d: %w", seed, err)
		}
		x, tr.Diverged, tr.Iterations, tr.Cost, tr.Auto = res.X, res.Diverged, res.Iterations, res.Cost, res.Record
	} else {
		inst, err := p.NewOracle(seed)
		if err != nil {
			return tr, fmt.Errorf("%s, seed %d: oracle: %w", m, seed, err)
		}
		cfg := m.Config
		cfg.Seed = seed
		res, err := sgd.Minimize(&p.Problem, inst, sgd.Method{Kind: m.Kind, Config: cfg}, sgd.Decay{Step0: m.Step, T0: m.Decay},
			sgd.Settings{Budget: budget, Value: p.value}, recs...)
		if err != nil {
			return tr, fmt.Errorf("%s, seed %d: %w", m, seed, err)
		}
		x, tr.Diverged, tr.Iterations, tr.Cost = res.X, res.Diverged, res.Iterations, res.Cost
	}
	final := math.Inf(1)
	if !tr.Diverged {
		final = sgd.ValueAt(p.value, x)
	}
	trace.Finish(final)
	tr.Values = trace.Values
	if tr.Auto != nil {
		// Whether auto's own estimate held: the true gap where it stopped
		// against the target it claimed to reach.
		if gap := g.autoGap(x, final); !math.IsNaN(gap) {
			// (NaN: F* not known yet, the lowest value reached.)
			tr.Auto.SetTrueGap(gap)
		}
	}
	if ft != nil {
		tr.First = ft.First
	}
	tr.Final = x
	return tr, nil
}

// Trial runs method m from the problem's x0 with one seed until the next
// iterate would pass budget, and returns its trace with the value logged at
// the budget only: for a run's last iterate (Trace.Final).
func Trial(p *Problem, m Method, seed uint64, budget int64) (Trace, error) {
	if err := p.check(); err != nil {
		return Trace{}, err
	}
	g, err := gaugeOf(p)
	if err != nil {
		return Trace{}, err
	}
	// The trace's values stay as the objective (or Error) gives them; the
	// gauge reads auto's true gap.
	return trial(p, m, seed, budget, []int64{budget}, nil, g, false)
}

// prefixed writes each write (one line of auto's log) after a prefix
// naming the trial, in one write, so that trials running at once keep
// their lines whole.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append([]byte(p.prefix), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}
