package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

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
	return cellID{Objective: row.Class.String(), Estimator: estimatorLabels[m], VR: row.VR, A: r.A, B: r.B, C: r.C}
}

// point is the measured cost of a cell at one eps.
type point struct {
	cellID
	Params string   `json:"params"`
	Eps    float64  `json:"eps"`
	Level  int      `json:"L"`
	Tuning tuning   `json:"tuning"`
	Hit    *hit     `json:"hit"` // nil when not reached
	Tried  []tried  `json:"tried,omitempty"`
	Trials int      `json:"trials"`
	Error  string   `json:"error,omitempty"`
	Seeds  []uint64 `json:"-"`
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

// trials is the number of report trials of a row. The strongly convex
// row's criterion is on the last iterate, whose mean over trials wanders
// slowly (with steps 1/t an iterate averages all its noise so far), so it
// takes five times as many, which it can afford.
func (x *experiment) trials(row Row) int {
	if row.Class == StronglyConvex {
		return 5 * x.Trials
	}
	return x.Trials
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
	for _, e := range eps {
		pt := point{cellID: newCellID(c.Row, c.Regime, c.Method), Params: params, Eps: e, Tuning: prescribedTuning, Trials: x.trials(c.Row)}
		if c.Tuned {
			pt.Tuning, pt.Tried = x.tune(c, e, T0)
		}
		rn := &runner{row: c.Row, regime: c.Regime, seeds: seeds(pt.Trials, false), lim: x.Lim, wrap: x.Wrap}
		s := prescribe(c.Row, c.Method, c.Regime, e, pt.Tuning, objective(c.Row.Class, c.Regime.A, c.Regime.B, c.Regime.C, 0))
		pt.Level = s.Cfg.MaxLevel
		h, err := rn.measure(s, T0, math.Inf(1))
		if err != nil {
			pt.Error = err.Error()
		} else {
			pt.Hit = &h
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
			fmt.Fprintf(x.Log, "  %s %s %s %s eps=%.4g L=%d %+v hit=%+v %s\n", c.Row, c.Regime, estimatorLabels[c.Method], params,
				e, pt.Level, pt.Tuning, pt.Hit, pt.Error)
		}
		pts = append(pts, pt)
	}
	return pts
}

// tune finds the tuning of the cell at eps with the least cost on the
// tuning seeds: first the step factor kappa (V-MLMC: the batch factor) on
// 1/2, 1, 2, widened by factors of 2 while the best is at an edge (up to
// ten times, within 1/1024..64); then,
// at that kappa, the level offset dL from 0 down (and up) while the cost
// falls (RU/RR have no level).
func (x *experiment) tune(c cellSpec, eps float64, T0 int) (tuning, []tried) {
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
		return best, log
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
	return best, log
}

func finiteOr(v, alt float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return alt
	}
	return v
}
