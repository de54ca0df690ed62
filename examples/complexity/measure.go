package main

import (
	"errors"
	"math"

	"github.com/simclr-go/simclr/mlmc"
)

// errNotReached says a run's work limit passed before the criterion held;
// errDiverged that the iterates left every bounded region.
var (
	errNotReached = errors.New("target not reached within the work limit")
	errDiverged   = errors.New("the iterates diverged")
)

// limits bound one measurement, so that a setting that never reaches its
// target (a broken estimator, a step that diverges) costs bounded time.
type limits struct {
	MaxIter int     // iterations of one run
	MaxWork float64 // oracle evaluations of one run, summed over its trials
}

// trial is one independent run of an estimator on its own problem.
type trial struct {
	p   *problem
	est *mlmc.Estimator[[]float64]
	g   []float64
}

// wrap, when set, wraps each trial's oracle (tests break estimators
// with it).
type oracleWrap func(o mlmc.Oracle[[]float64], s setting) mlmc.Oracle[[]float64]

// runner runs a setting's trials in lockstep and records, per iteration,
// the mean over trials of the metric and of the cumulative samples.
type runner struct {
	row    Row
	regime Regime
	seeds  []uint64
	lim    limits
	wrap   oracleWrap
	// evals counts every oracle evaluation made, for the work report.
	evals float64
}

func (rn *runner) start(s setting) ([]*trial, error) {
	trials := make([]*trial, len(rn.seeds))
	for i, seed := range rn.seeds {
		p := objective(rn.row.Class, rn.regime.A, rn.regime.B, rn.regime.C, seed)
		copy(p.x, p.start)
		copy(p.xp, p.start)
		o := p.oracle
		if rn.wrap != nil {
			o = rn.wrap(o, s)
		}
		cfg := s.Cfg
		cfg.Seed = seed ^ 0xa5a5a5a5
		est, err := mlmc.New(s.Kind, cfg, mlmc.Float64Ops{Dim: dim}, o)
		if err != nil {
			return nil, err
		}
		trials[i] = &trial{p: p, est: est, g: make([]float64, dim)}
	}
	return trials, nil
}

// trace is a run's record: metric[t] and cost[t] are the means over
// trials after t iterations (index 0 is the start).
type trace struct {
	metric, cost []float64
}

// run iterates until more returns false or a limit is hit; more sees the
// trace so far. T is the horizon passed to the step (0 for none).
func (rn *runner) run(s setting, T int, more func(tr *trace) bool) (*trace, error) {
	trials, err := rn.start(s)
	if err != nil {
		return nil, err
	}
	n := float64(len(trials))
	tr := &trace{metric: []float64{0}, cost: []float64{0}}
	for _, tl := range trials {
		tr.metric[0] += tl.p.metric(tl.p.x) / n
	}
	var work float64
	for t := 1; more(tr); t++ {
		if t > rn.lim.MaxIter || work > rn.lim.MaxWork {
			return tr, errNotReached
		}
		gamma := s.Step(t, T)
		var m, c float64
		for _, tl := range trials {
			before := tl.est.Totals().Evals
			if _, err := tl.est.Estimate(t-1, tl.g); err != nil {
				return nil, err
			}
			copy(tl.p.xp, tl.p.x)
			for i := range tl.p.x {
				tl.p.x[i] -= gamma * tl.g[i]
			}
			tot := tl.est.Totals()
			work += float64(tot.Evals - before)
			v := tl.p.metric(tl.p.x)
			if math.IsNaN(v) || math.IsInf(v, 0) || v > 1e12 {
				rn.evals += work
				return tr, errDiverged
			}
			m += v / n
			c += float64(tot.Samples) / n
		}
		tr.metric = append(tr.metric, m)
		tr.cost = append(tr.cost, c)
	}
	rn.evals += work
	return tr, nil
}

// hit is the cost of one eps: the iterations after which the criterion
// holds and stays, and the mean samples they cost.
type hit struct {
	Iter int     `json:"iterations"`
	Cost float64 `json:"samples"`
}

// measure finds the cost of setting s to reach its target.
//
// Without a horizon, one run: the criterion's value (the mean metric, or
// its running mean over the iterates) must be at or below the target from
// iteration t on, and the run goes on until it has stayed there for as
// many iterations again as it took to get there; the cost is that of the
// first t. With a horizon (gamma = [V T]^(-1/2)), a fresh run per T on
// the grid T0 2^(k/2), and the cost is that of the first T whose mean
// metric over its iterates is at or below the target.
//
// A run stops early, not reached, once its mean cost passes maxCost (the
// tuner's best so far; +Inf for no bound).
func (rn *runner) measure(s setting, T0 int, maxCost float64) (hit, error) {
	if !s.Horizon {
		last := 0  // the last iteration above the target
		sum := 0.0 // running sum of the metric over the iterates
		tr, err := rn.run(s, 0, func(tr *trace) bool {
			t := len(tr.metric) - 1
			if t == 0 {
				return true
			}
			v := tr.metric[t]
			if s.Average {
				sum += v
				v = sum / float64(t)
			}
			if v > s.Target {
				last = t
				if tr.cost[t] > maxCost {
					return false
				}
			}
			return t < 2*(last+1) || t < 4
		})
		if err != nil {
			return hit{}, err
		}
		if last+1 >= len(tr.cost) {
			return hit{}, errNotReached // stopped at maxCost
		}
		return hit{Iter: last + 1, Cost: tr.cost[last+1]}, nil
	}
	// pass runs horizon T and says whether the criterion holds.
	pass := func(T int) (hit, bool, error) {
		tr, err := rn.run(s, T, func(tr *trace) bool { return len(tr.metric) <= T && tr.cost[len(tr.cost)-1] <= maxCost })
		if errors.Is(err, errDiverged) {
			return hit{}, false, nil // a longer horizon has a smaller step
		}
		if err != nil {
			return hit{}, false, err
		}
		if len(tr.metric) <= T {
			return hit{}, false, errNotReached // stopped at maxCost
		}
		avg := 0.0
		for _, v := range tr.metric[1:] {
			avg += v / float64(T)
		}
		return hit{Iter: T, Cost: tr.cost[T]}, avg <= s.Target, nil
	}
	grid := func(k int) int { return int(math.Ceil(float64(max(T0, 1)) * math.Exp2(float64(k)/2))) }
	for k := 0; ; k++ {
		T := grid(k)
		if T > rn.lim.MaxIter {
			return hit{}, errNotReached
		}
		h, ok, err := pass(T)
		if err != nil {
			return hit{}, err
		}
		if !ok {
			continue
		}
		// The first horizon tried may be longer than needed: go down
		// the grid while shorter ones pass.
		for j := k - 1; k == 0 && grid(j) >= 1 && grid(j) < h.Iter; j-- {
			h2, ok, err := pass(grid(j))
			if err != nil || !ok {
				break
			}
			h = h2
		}
		return h, nil
	}
}
