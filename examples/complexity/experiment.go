package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/simclr-go/simclr/mlmc"
)

// cellSpec is one cell of the table: a row, a regime, an estimator and
// whether its parameters are the prescribed or the tuned ones.
type cellSpec struct {
	Row    Row
	Regime Regime
	Method mlmc.Method
	Tuned  bool
}

// cellID names a cell of the table in the results files: its objective
// class, estimator and regime (the paper's a, b, c).
type cellID struct {
	Objective string  `json:"objective"`
	Estimator string  `json:"estimator"`
	VR        bool    `json:"vr"`
	A         float64 `json:"a"`
	B         float64 `json:"b"`
	C         float64 `json:"c"`
}

func newCellID(row Row, r Regime, m mlmc.Method) cellID {
	return cellID{Objective: row.Class.String(), Estimator: m.DisplayName(), VR: row.VR, A: r.A, B: r.B, C: r.C}
}

// point is the measured cost of a cell at one eps.
type point struct {
	cellID
	Params string  `json:"params"`
	Eps    float64 `json:"eps"`
	Level  int     `json:"L"`
	Tuning tuning  `json:"tuning"`
	Hit    *hit    `json:"hit"` // nil when not reached
	Tried  []tried `json:"tried,omitempty"`
	Trials int     `json:"trials"`
	Error  string  `json:"error,omitempty"`
	// Evals is the oracle evaluations the report runs of this eps made
	// (over all trials and, on horizon cells, every horizon searched):
	// the CPU cost, where samples are the oracle's nominal price.
	Evals float64 `json:"evals"`
	// TuneEvals is the evaluations the tuner spent on this eps.
	TuneEvals float64 `json:"tune_evals,omitempty"`
	// SamplesCI is the 95% percentile interval of the samples over the
	// bootstrap's resamples of the trials; Unresolved counts the
	// resamples whose crossing lay beyond what the runs saw (left out of
	// the interval, and of their exponent fit at this eps).
	SamplesCI  *[2]float64 `json:"samples_95,omitempty"`
	Unresolved int         `json:"boot_unresolved,omitempty"`
	Seeds      []uint64    `json:"-"`
	// Boot is the samples of every resample (NaN, written null:
	// unresolved), kept so that --replot can refit the cells.
	Boot sig4 `json:"boot,omitempty"`
}

// tried is one setting the tuner measured on the tuning seeds.
type tried struct {
	Tuning  tuning  `json:"tuning"`
	Samples float64 `json:"samples"` // +Inf (written as -1) when not reached
}

// experiment holds what every cell shares.
type experiment struct {
	Trials, TuneTrials int
	Lim                limits
	Wrap               oracleWrap
	// Log, when set, gets a line per measured eps.
	Log io.Writer
}

// trials is the number of report trials of a cell. The strongly convex
// row's criterion is on the last iterate, whose mean over trials wanders
// slowly (with steps 1/t an iterate averages all its noise so far), so it
// takes twice as many; except V-MLMC, whose batch holds one iterate's
// noise at a quarter of the target (and whose batches, of order 1/eps
// queries, would make the extra trials the row's largest cost).
func (x *experiment) trials(row Row, m mlmc.Method) int {
	if row.Class == StronglyConvex && m != mlmc.VMLMC {
		return 2 * x.Trials
	}
	return x.Trials
}

// sig4 is a series written with four significant digits (NaN as null),
// to keep points.jsonl small.
type sig4 []float64

func (v sig4) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, x, 'g', 4, 64)
	}
	return append(b, ']'), nil
}

func (v *sig4) UnmarshalJSON(data []byte) error {
	var raw []*float64
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*v = make(sig4, len(raw))
	for i, x := range raw {
		(*v)[i] = math.NaN()
		if x != nil {
			(*v)[i] = *x
		}
	}
	return nil
}

// bootSeed seeds the bootstrap's resamples: one set of resamples for
// every cell, fixed so that a rerun draws the same.
const bootSeed = 40

// percentiles is the 95% percentile interval of the finite values of v
// and the count of the others (nil where fewer than half are finite).
func percentiles(v []float64) (*[2]float64, int) {
	var f []float64
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			f = append(f, x)
		}
	}
	bad := len(v) - len(f)
	if len(f) == 0 || 2*len(f) < len(v) {
		return nil, bad
	}
	slices.Sort(f)
	q := func(p float64) float64 { return f[min(len(f)-1, int(math.Floor(p*float64(len(f)))))] }
	return &[2]float64{q(0.025), q(0.975)}, bad
}

// seeds are the report seeds (1..n) or the tuning seeds (1001..).
func seeds(n int, tuning bool) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i + 1)
		if tuning {
			s[i] += 1000
		}
	}
	return s
}

// measureCell measures the cell at every eps (descending, so that each
// horizon search starts near the previous eps's answer).
func (x *experiment) measureCell(c cellSpec, epsGrid []float64) []point {
	eps := slices.Clone(epsGrid)
	slices.Sort(eps)
	slices.Reverse(eps)
	params := "prescribed"
	if c.Tuned {
		params = "tuned"
	}
	var pts []point
	T0, prevT := 1, 0
	boot := newResampling(x.trials(c.Row, c.Method), bootstrapResamples, bootSeed)
	for _, e := range eps {
		pt := point{cellID: newCellID(c.Row, c.Regime, c.Method), Params: params, Eps: e, Tuning: prescribedTuning, Trials: x.trials(c.Row, c.Method)}
		if c.Tuned {
			pt.Tuning, pt.Tried, pt.TuneEvals = x.tune(c, e, T0)
		}
		rn := &runner{row: c.Row, regime: c.Regime, seeds: seeds(pt.Trials, false), lim: x.Lim, wrap: x.Wrap, boot: boot}
		s := prescribe(c.Row, c.Method, c.Regime, e, pt.Tuning, objective(c.Row.Class, c.Regime.A, c.Regime.B, c.Regime.C, 0))
		pt.Level = s.Cfg.MaxLevel
		h, err := rn.measure(s, T0, math.Inf(1))
		pt.Evals = rn.evals
		if err != nil {
			pt.Error = err.Error()
		} else {
			pt.Hit = &h
			// Rounded as points.jsonl keeps them, so that --replot fits
			// the same numbers.
			pt.Boot = make(sig4, len(h.Boot))
			for i, v := range h.Boot {
				pt.Boot[i], _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
			}
			h.Boot = nil
			pt.SamplesCI, pt.Unresolved = percentiles(pt.Boot)
			if s.Horizon {
				// Start the next search one grid step below the horizon
				// the last two suggest.
				T0 = max(1, h.Iter/2)
				if prevT > 0 {
					T0 = max(1, int(float64(h.Iter)*float64(h.Iter)/float64(prevT)/math.Sqrt2))
				}
				prevT = h.Iter
			}
		}
		if x.Log != nil {
			res := pt.Error
			if pt.Hit != nil {
				res = fmt.Sprintf("%d iterations, %.4g samples", pt.Hit.Iter, pt.Hit.Cost)
			}
			fmt.Fprintf(x.Log, "  %s %s %s %s eps=%.4g L=%d %+v: %s; %.3g evaluations (tuning %.3g)\n", c.Row, c.Regime, c.Method.DisplayName(), params,
				e, pt.Level, pt.Tuning, res, pt.Evals, pt.TuneEvals)
		}
		pts = append(pts, pt)
		// The next eps is predicted to cost this one's work times the
		// growth from the last: stop before it passes the limit.
		why := ""
		if n := len(pts); n >= 2 && pts[n-2].Hit != nil && pt.Hit != nil {
			w0, w1 := pts[n-2].Evals+pts[n-2].TuneEvals, pt.Evals+pt.TuneEvals
			if next := w1 * w1 / w0; x.Lim.MaxEpsWork > 0 && next > x.Lim.MaxEpsWork {
				why = fmt.Sprintf("not attempted: the work of the eps before predicts %.2g evaluations, over the limit %.2g", next, x.Lim.MaxEpsWork)
			}
		}
		if pt.Hit == nil {
			why = "not attempted: a larger eps did not reach its target within the work limit"
		}
		if why != "" {
			// A smaller eps costs more: it would spend the work limit
			// again and reach nothing.
			for _, e2 := range eps[len(pts):] {
				pts = append(pts, point{cellID: pt.cellID, Params: params, Eps: e2, Tuning: prescribedTuning, Trials: pt.Trials,
					Error: why})
			}
			break
		}
	}
	return pts
}

// tune finds the tuning of the cell at eps with the least cost on the
// tuning seeds: first the step factor kappa (V-MLMC: the batch factor) on
// 1/2, 1, 2, widened by factors of 2 while the best is at an edge (up to
// ten times, within 1/1024..64); then,
// at that kappa, the level offset dL from 0 down (and up) while the cost
// falls (RU/RR have no level).
func (x *experiment) tune(c cellSpec, eps float64, T0 int) (tuning, []tried, float64) {
	rn := &runner{row: c.Row, regime: c.Regime, seeds: seeds(x.TuneTrials, true), lim: x.Lim, wrap: x.Wrap}
	prob := objective(c.Row.Class, c.Regime.A, c.Regime.B, c.Regime.C, 0)
	cache := map[tuning]float64{}
	var log []tried
	cost := func(tu tuning) float64 {
		if v, ok := cache[tu]; ok {
			return v
		}
		s := prescribe(c.Row, c.Method, c.Regime, eps, tu, prob)
		v := math.Inf(1)
		// A candidate is abandoned once it costs more than the best so far.
		bound := math.Inf(1)
		for _, b := range cache {
			bound = math.Min(bound, b)
		}
		if h, err := rn.measure(s, max(1, T0/4), bound); err == nil {
			v = h.Cost
		} else if !errors.Is(err, errNotReached) && !errors.Is(err, errDiverged) {
			panic(fmt.Sprintf("complexity: tune %v: %v", c, err))
		}
		cache[tu] = v
		log = append(log, tried{Tuning: tu, Samples: finiteOr(v, -1)})
		return v
	}
	best := tuning{Kappa: 1}
	kappas := []float64{0.5, 1, 2}
	for range 10 {
		for _, k := range kappas {
			if cost(tuning{Kappa: k}) < cost(best) {
				best = tuning{Kappa: k}
			}
		}
		switch {
		case best.Kappa == kappas[0] && best.Kappa > 1.0/1024:
			kappas = []float64{best.Kappa / 2}
		case best.Kappa == kappas[len(kappas)-1] && best.Kappa < 64:
			kappas = []float64{best.Kappa * 2}
		default:
			kappas = nil
		}
		if kappas == nil {
			break
		}
	}
	if c.Method == mlmc.RUMLMC || c.Method == mlmc.RRMLMC {
		return best, log, rn.evals
	}
	L0 := prescribe(c.Row, c.Method, c.Regime, eps, prescribedTuning, prob).Cfg.MaxLevel
	for _, dir := range []int{-1, 1} {
		moved := false
		for dl := best.DL + dir; L0+dl >= 0 && dl >= -16 && dl <= 4; dl += dir {
			tu := tuning{DL: dl, Kappa: best.Kappa}
			if !(cost(tu) < cost(best)) {
				break
			}
			best, moved = tu, true
		}
		if moved {
			break
		}
	}
	return best, log, rn.evals
}

func finiteOr(v, alt float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return alt
	}
	return v
}
