package main

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/sgd"
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
	// MaxEpsWork bounds the predicted evaluations of one eps (its report
	// runs and its tuning): a cell stops going down its grid of eps
	// before the eps whose work, extrapolated from the two before, would
	// pass it. Zero: no bound.
	MaxEpsWork float64
}

// trial is one independent run of an estimator on its own problem, on the
// driver of package mlmc/sgd.
type trial struct {
	p   *problem
	run *sgd.Run
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
	// boot, when set, is the bootstrap over the seeds' trials.
	boot *resampling
}

// start makes the setting's trials, each a run of the driver with the
// setting's step gamma(t, T) at iteration t = 1, 2, ...
func (rn *runner) start(s setting, T int) ([]*trial, error) {
	trials := make([]*trial, len(rn.seeds))
	for i, seed := range rn.seeds {
		p := objective(rn.row.Class, rn.regime.A, rn.regime.B, rn.regime.C, seed)
		o := p.oracle
		if rn.wrap != nil {
			o = rn.wrap(o, s)
		}
		cfg := s.Cfg
		cfg.Seed = seed ^ 0xa5a5a5a5
		inst := sgd.Instance{Oracle: o, At: func(x, prev []float64) {
			copy(p.x, x)
			copy(p.xp, prev)
		}}
		run, err := sgd.NewRun(&sgd.Problem{X0: p.start, NewOracle: func(uint64) (sgd.Instance, error) { return inst, nil }}, inst,
			sgd.Method{Kind: s.Kind, Config: cfg}, sgd.ScheduleFunc(func(t int) float64 { return s.Step(t+1, T) }),
			sgd.Settings{Budget: math.MaxInt64})
		if err != nil {
			return nil, err
		}
		trials[i] = &trial{p: p, run: run}
	}
	return trials, nil
}

// trace is a run's record: metric[t] and cost[t] are the means over
// trials after t iterations (index 0 is the start); trialMetric and
// trialCost are each trial's metric and cumulative samples after the last
// iteration recorded, for the bootstrap over trials.
type trace struct {
	metric, cost           []float64
	trialMetric, trialCost []float64
}

// run iterates until more returns false or a limit is hit; more sees the
// trace so far. T is the horizon passed to the step (0 for none).
func (rn *runner) run(s setting, T int, more func(tr *trace) bool) (*trace, error) {
	trials, err := rn.start(s, T)
	if err != nil {
		return nil, err
	}
	n := float64(len(trials))
	tr := &trace{metric: []float64{0}, cost: []float64{0}, trialMetric: make([]float64, len(trials)), trialCost: make([]float64, len(trials))}
	for i, tl := range trials {
		tr.trialMetric[i] = tl.p.metric(tl.run.Location().X)
		tr.metric[0] += tr.trialMetric[i] / n
	}
	var work float64
	for t := 1; more(tr); t++ {
		if t > rn.lim.MaxIter || work > rn.lim.MaxWork {
			rn.evals += work
			return tr, errNotReached
		}
		var m, c float64
		for i, tl := range trials {
			before := tl.run.Totals().Evals
			if _, err := tl.run.Next(); err != nil {
				return nil, err
			}
			tot := tl.run.Totals()
			work += float64(tot.Evals - before)
			v := tl.p.metric(tl.run.Location().X)
			if math.IsNaN(v) || math.IsInf(v, 0) || v > 1e12 {
				rn.evals += work
				return tr, errDiverged
			}
			m += v / n
			c += float64(tot.Samples) / n
			tr.trialMetric[i], tr.trialCost[i] = v, float64(tot.Samples)
		}
		tr.metric = append(tr.metric, m)
		tr.cost = append(tr.cost, c)
	}
	rn.evals += work
	return tr, nil
}

// hit is the cost of one eps: the iterations after which the criterion
// holds and stays, and the mean samples they cost. Boot holds the same
// cost for every resample of the runner's bootstrap (NaN where that
// resample's crossing lies beyond what the run saw); nil without one.
type hit struct {
	Iter int       `json:"iterations"`
	Cost float64   `json:"samples"`
	Boot []float64 `json:"-"`
}

// resampling is a bootstrap over trials: W[b][i] is how often resample b
// draws trial i, divided by the number of trials. One resampling serves
// every eps of a cell: the trials have the same seeds at every eps, so a
// resample is one alternative set of trials for the whole cell, and the
// exponent fitted to its costs is one draw of the exponent's bootstrap.
type resampling struct{ W [][]float64 }

// bootstrapResamples is the number of resamples: enough for a 95%
// percentile interval (5 resamples in each tail).
const bootstrapResamples = 200

func newResampling(trials, resamples int, seed uint64) *resampling {
	rng := rand.New(rand.NewPCG(seed, 0xb007))
	r := &resampling{W: make([][]float64, resamples)}
	for b := range r.W {
		r.W[b] = make([]float64, trials)
		for range trials {
			r.W[b][rng.IntN(trials)] += 1 / float64(trials)
		}
	}
	return r
}

// mean is resample b's mean of the per-trial values v.
func (r *resampling) mean(b int, v []float64) float64 {
	m := 0.0
	for i, w := range r.W[b] {
		m += w * v[i]
	}
	return m
}

// horizonRun is one horizon of the search: the mean over the trials of
// the metric averaged over the iterates, and of the samples; per trial
// the same, for the bootstrap. A diverged run has no cost: diverged is
// set, and its averages are +Inf and its costs NaN, so that nothing that
// reads them can take it for a cheap run that reached its target.
type horizonRun struct {
	T                 int
	diverged          bool
	avg, cost         float64
	trialAvg, trialCo []float64
}

// divergedRun is the record of horizon T whose iterates diverged in one
// of its trials (of n): it did not reach the target, at no known cost.
func divergedRun(T, n int) horizonRun {
	r := horizonRun{T: T, diverged: true, avg: math.Inf(1), cost: math.NaN(),
		trialAvg: make([]float64, n), trialCo: make([]float64, n)}
	for i := range n {
		r.trialAvg[i], r.trialCo[i] = math.Inf(1), math.NaN()
	}
	return r
}

// crossing is the cost at which the average metric reaches target over
// the horizons runs (sorted by T), with avg and cost reading one run:
// interpolated log-linearly between the longest horizon that fails
// before the first that passes and that one, so that the grid's steps of
// sqrt(2) in T do not quantise the cost; where none passes, extrapolated
// from the two longest by at most two grid steps (NaN beyond, or where
// the metric does not fall with T); where the shortest passes, its cost.
//
// A diverged run never passes and is never interpolated from: between it
// and the first passing run the cost is the passing run's, and a diverged
// run among the two longest leaves no extrapolation (NaN).
func crossing(runs []horizonRun, target float64, avg, cost func(horizonRun) float64) (T, c float64) {
	j := slices.IndexFunc(runs, func(r horizonRun) bool { return !r.diverged && avg(r) <= target })
	lin := func(lo, hi horizonRun) (float64, float64) {
		if lo.diverged || hi.diverged {
			return math.NaN(), math.NaN()
		}
		a0, a1 := math.Log(avg(lo)), math.Log(avg(hi))
		if math.IsInf(a0, 0) || math.IsNaN(a0) || !(a1 < a0) {
			return math.NaN(), math.NaN()
		}
		f := (a0 - math.Log(target)) / (a0 - a1)
		lt := math.Log(float64(lo.T)) + f*(math.Log(float64(hi.T))-math.Log(float64(lo.T)))
		lc := math.Log(cost(lo)) + f*(math.Log(cost(hi))-math.Log(cost(lo)))
		return math.Exp(lt), math.Exp(lc)
	}
	switch {
	case j == 0:
		return float64(runs[0].T), cost(runs[0])
	case j > 0:
		T, c = lin(runs[j-1], runs[j])
		if math.IsNaN(c) { // the failing horizon diverged
			return float64(runs[j].T), cost(runs[j])
		}
		return T, c
	case len(runs) < 2:
		return math.NaN(), math.NaN()
	}
	n := len(runs)
	T, c = lin(runs[n-2], runs[n-1])
	if T > 2*float64(runs[n-1].T) {
		return math.NaN(), math.NaN()
	}
	return T, c
}

// measure finds the cost of setting s to reach its target.
//
// Without a horizon, one run: the criterion's value (the mean metric, or
// its running mean over the iterates) must be at or below the target from
// iteration t on, and the run goes on until it has stayed there for as
// many iterations again as it took to get there; the cost is that of the
// first t. With a horizon (gamma = [V T]^(-1/2)), a fresh run per T on
// the grid T0 2^(k/2) until one passes (its mean metric over its iterates
// at or below the target); the cost is interpolated between the last
// failing and the passing horizon (see crossing).
//
// A run stops early, not reached, once its mean cost passes maxCost (the
// tuner's best so far; +Inf for no bound). With rn.boot set, the hit
// carries every resample's cost, measured by the same rule on the same
// runs.
func (rn *runner) measure(s setting, T0 int, maxCost float64) (hit, error) {
	bs := rn.boot
	nb := 0
	if bs != nil {
		nb = len(bs.W)
	}
	if !s.Horizon {
		last := 0  // the last iteration above the target
		sum := 0.0 // running sum of the metric over the iterates
		// Per resample: its running sum, whether it is above the target
		// since its last crossing, and the cost at that crossing.
		bSum, bAbove, bCost := make([]float64, nb), make([]bool, nb), make([]float64, nb)
		for b := range bAbove {
			bAbove[b], bCost[b] = true, math.NaN()
		}
		tr, err := rn.run(s, 0, func(tr *trace) bool {
			t := len(tr.metric) - 1
			if t == 0 {
				return true
			}
			for b := range nb {
				v := bs.mean(b, tr.trialMetric)
				if s.Average {
					bSum[b] += v
					v = bSum[b] / float64(t)
				}
				switch {
				case v > s.Target:
					bAbove[b], bCost[b] = true, math.NaN()
				case bAbove[b]:
					bAbove[b], bCost[b] = false, bs.mean(b, tr.trialCost)
				}
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
		h := hit{Iter: last + 1, Cost: tr.cost[last+1]}
		if nb > 0 {
			h.Boot = bCost
		}
		return h, nil
	}
	var runs []horizonRun
	// pass runs horizon T, records it and says whether the criterion holds.
	pass := func(T int) (bool, error) {
		r, err := rn.horizon(s, T, maxCost)
		if err != nil {
			return false, err
		}
		// A diverged horizon is recorded as failing: a longer one has a
		// smaller step.
		runs = append(runs, r)
		return !r.diverged && r.avg <= s.Target, nil
	}
	grid := func(k int) int { return int(math.Ceil(float64(max(T0, 1)) * math.Exp2(float64(k)/2))) }
	for k := 0; ; k++ {
		T := grid(k)
		if T > rn.lim.MaxIter {
			return hit{}, errNotReached
		}
		ok, err := pass(T)
		if err != nil {
			return hit{}, err
		}
		if !ok {
			continue
		}
		// The first horizon tried may be longer than needed: go down
		// the grid while shorter ones pass.
		for j := k - 1; k == 0 && grid(j) >= 1 && grid(j) < T; j-- {
			ok, err := pass(grid(j))
			if err != nil || !ok {
				break
			}
			T = grid(j)
		}
		break
	}
	slices.SortFunc(runs, func(x, y horizonRun) int { return x.T - y.T })
	Tx, c := crossing(runs, s.Target, func(r horizonRun) float64 { return r.avg }, func(r horizonRun) float64 { return r.cost })
	if !(c > 0) || math.IsInf(c, 0) {
		// No horizon priced the crossing (crossing always prices a
		// passing run; this keeps a NaN or a zero out of the fit).
		return hit{}, errNotReached
	}
	h := hit{Iter: int(math.Ceil(Tx)), Cost: c}
	if nb > 0 {
		h.Boot = make([]float64, nb)
		for b := range nb {
			_, h.Boot[b] = crossing(runs, s.Target,
				func(r horizonRun) float64 { return bs.mean(b, r.trialAvg) },
				func(r horizonRun) float64 { return bs.mean(b, r.trialCo) })
		}
	}
	return h, nil
}

// horizon runs setting s for horizon T: the metric averaged over the T
// iterates and the samples, per trial and their means; divergedRun(T) if
// the iterates diverged, errNotReached once the mean cost passes maxCost.
func (rn *runner) horizon(s setting, T int, maxCost float64) (horizonRun, error) {
	sums := make([]float64, len(rn.seeds))
	tr, err := rn.run(s, T, func(tr *trace) bool {
		if len(tr.metric) > 1 {
			for i, v := range tr.trialMetric {
				sums[i] += v
			}
		}
		return len(tr.metric) <= T && tr.cost[len(tr.cost)-1] <= maxCost
	})
	if errors.Is(err, errDiverged) {
		return divergedRun(T, len(sums)), nil
	}
	if err != nil {
		return horizonRun{}, err
	}
	if len(tr.metric) <= T {
		return horizonRun{}, errNotReached // stopped at maxCost
	}
	r := horizonRun{T: T, cost: tr.cost[T], trialCo: slices.Clone(tr.trialCost)}
	for i := range sums {
		sums[i] /= float64(T)
		r.avg += sums[i] / float64(len(sums))
	}
	r.trialAvg = sums
	return r, nil
}
