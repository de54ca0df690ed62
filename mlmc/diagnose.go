package mlmc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// DiagOps are the vector operations the per-level diagnostics need beyond
// VecOps: inner products (norms, variances, projections) and random
// directions. Like VecOps they act on the caller's vectors in place, so the
// gradients stay where the oracle put them (on a GPU for SimCLR).
type DiagOps[V any] interface {
	VecOps[V]
	// Dot is sum_i x_i y_i.
	Dot(x, y V) float64
	// Normal sets v to independent standard normal entries drawn from r.
	Normal(v V, r *rand.Rand)
}

// Dot is sum_i x_i y_i.
func (Float64Ops) Dot(x, y []float64) float64 {
	mustSameLen("Dot", x, y)
	s := 0.0
	for i, xi := range x {
		s += xi * y[i]
	}
	return s
}

// Normal sets v to independent standard normal entries drawn from r.
func (Float64Ops) Normal(v []float64, r *rand.Rand) {
	for i := range v {
		v[i] = r.NormFloat64()
	}
}

// LevelsConfig sets what MeasureLevels measures. Zero values take the
// defaults stated on each field.
type LevelsConfig struct {
	// MinLevel and MaxLevel are l_min and L: the levels measured.
	MinLevel, MaxLevel int
	// Draws is K, the independent queries per level, and of h^L for the
	// telescoping check (default 32, at least 3).
	Draws int
	// Projections is the number of random directions of the telescoping
	// z-test (default 4).
	Projections int
	// Confidence of the telescoping z-test (default 0.999).
	Confidence float64
	// B and C are the rates the estimators are configured with (Config's
	// defaults): vmlmc's n_l and rtmlmc's q_l in the predictions use them.
	B, C float64
	// Previous also evaluates every draw at the previous parameters x_(t-1)
	// and measures the VR correction Y(x_t; s) - Y(x_(t-1); s) of each
	// level, from which the vr- estimators are predicted.
	Previous bool
	// D1, D2 and QE are the VR settings the vr- predictions use (Config's
	// defaults).
	D1, D2, QE int
	// Seed seeds the random directions.
	Seed uint64
	// Progress, when set, is called after every query.
	Progress func(level int, diff bool, draw int)
	// Untimed leaves the queries untimed: the report's Seconds are 0, and
	// its predictions and verdict judge on samples. A caller that plans on
	// samples alone (auto) saves two clock reads a query, a visible share
	// of a cheap oracle's query.
	Untimed bool
	// Brief leaves out the estimators' predictions and the verdict
	// (Estimators nil, Verdict empty, and D1, D2 and QE 0 even where
	// Previous measured the corrections, whose statistics the levels
	// still hold): a caller that plans by rules of its own (auto, at every
	// measurement) saves their cost.
	Brief bool
}

func (c LevelsConfig) withDefaults() LevelsConfig {
	if c.Draws == 0 {
		c.Draws = 32
	}
	if c.Projections == 0 {
		c.Projections = 4
	}
	if c.Confidence == 0 {
		c.Confidence = 0.999
	}
	// The estimators' settings take Config's defaults, from one place.
	est := Config{B: c.B, C: c.C, D1: c.D1, D2: c.D2, QE: c.QE}.withDefaults()
	c.B, c.C, c.D1, c.D2, c.QE = est.B, est.C, est.D1, est.D2, est.QE
	return c
}

func (c LevelsConfig) check(oracleMax int) error {
	switch {
	case c.MinLevel < 0 || c.MaxLevel < c.MinLevel:
		return fmt.Errorf("levels %d..%d are not a range of non-negative levels: the minimum level must be at most the maximum",
			c.MinLevel, c.MaxLevel)
	case oracleMax != Unbounded && c.MaxLevel > oracleMax:
		return fmt.Errorf("maximum level %d is above the largest level the oracle serves (%d)", c.MaxLevel, oracleMax)
	case c.Draws < 3:
		return fmt.Errorf("%d draws per level: a variance and its standard error need at least 3", c.Draws)
	case c.Projections < 1:
		return fmt.Errorf("%d projections: the telescoping test needs at least 1", c.Projections)
	case c.Confidence <= 0 || c.Confidence >= 1:
		return fmt.Errorf("confidence %g is not in (0, 1)", c.Confidence)
	case c.B <= 0 || c.C <= 0:
		return fmt.Errorf("rates b = %g, c = %g must be positive", c.B, c.C)
	case c.D1 < 1 || c.D2 < 1 || c.QE < 1:
		return fmt.Errorf("D1 = %d, D2 = %d, QE = %d must all be at least 1", c.D1, c.D2, c.QE)
	}
	return nil
}

// MeasureLevels queries the oracle K times per level MinLevel..MaxLevel (Y =
// h^MinLevel, then H^l) and K times for h^MaxLevel, all at the current
// parameters, and reports per level the mean, variance and cost of Y, the
// fitted rates b and c, the telescoping check and the predicted variance x
// cost of each estimator relative to L-SGD's (docs/definitions.md, section 4 "Contrastive learning as a biased oracle", per-level
// diagnostics).
//
// It holds four gradient vectors plus one per projection; each query's
// gradient is reduced to scalars (its squared norm, projections) and a
// running mean before the next one is made.
func MeasureLevels[V any](o Oracle[V], ops DiagOps[V], cfg LevelsConfig) (*LevelsReport, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(o.MaxLevel()); err != nil {
		return nil, fmt.Errorf("per-level diagnostics: %w", err)
	}
	m := &levelMeter[V]{o: o, ops: ops, cfg: cfg,
		y: ops.New(), mean: ops.New(), sum: ops.New()}
	if cfg.Previous {
		m.prev = ops.New()
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x7e1e5c0de))
	for range cfg.Projections {
		u := ops.New()
		ops.Normal(u, r)
		m.dirs = append(m.dirs, u)
	}
	rep := &LevelsReport{MinLevel: cfg.MinLevel, MaxLevel: cfg.MaxLevel, Draws: cfg.Draws, B: cfg.B, C: cfg.C}
	// proj[j] accumulates D's projection on direction j and its variance.
	projMean := make([]float64, cfg.Projections)
	projVar := make([]float64, cfg.Projections)
	noise2 := 0.0
	for l := cfg.MinLevel; l <= cfg.MaxLevel; l++ {
		st, pm, pv, err := m.level(l, l > cfg.MinLevel)
		if err != nil {
			return nil, err
		}
		rep.Levels = append(rep.Levels, st)
		ops.Axpy(1, m.mean, m.sum)
		for j := range pm {
			projMean[j] += pm[j]
			projVar[j] += pv[j] / float64(cfg.Draws)
		}
		noise2 += st.Var / float64(cfg.Draws)
	}
	top, pm, pv, err := m.level(cfg.MaxLevel, false)
	if err != nil {
		return nil, err
	}
	rep.Top = top
	sumNorm := math.Sqrt(math.Max(ops.Dot(m.sum, m.sum), 0))
	// sum <- sum_l mean Y_l - mean h^L.
	ops.Axpy(-1, m.mean, m.sum)
	tel := Telescope{
		SumNorm:    sumNorm,
		DiffNorm:   math.Sqrt(math.Max(ops.Dot(m.sum, m.sum), 0)),
		NoiseNorm:  math.Sqrt(noise2 + top.Var/float64(cfg.Draws)),
		TopNorm:    top.MeanNorm,
		Confidence: cfg.Confidence,
		Critical:   NormalCritical(cfg.Confidence, cfg.Projections),
		Pass:       true,
	}
	for j := range pm {
		d := projMean[j] - pm[j]
		z := d / math.Sqrt(projVar[j]+pv[j]/float64(cfg.Draws))
		if d == 0 {
			z = 0 // no difference, even where no query varied (0/0)
		}
		tel.Z = append(tel.Z, z)
		if !(math.Abs(z) < tel.Critical) {
			tel.Pass = false
		}
	}
	rep.Telescope = tel
	rep.FitB, rep.FitCImages, rep.FitCTime = fitRates(rep.Levels, !cfg.Untimed)
	if rep.NoBiasVisible = biasInvisible(rep.Levels); rep.NoBiasVisible {
		// A rate fitted to rounding residues would be a number of no meaning.
		rep.FitB = RateFit{Rate: math.NaN(), SE: math.NaN(), From: rep.FitB.From, To: rep.FitB.To,
			Note: "H^l is zero to rounding at every level above the minimum: no rate"}
	}
	if !cfg.Brief {
		rep.Estimators = PredictEstimators(rep.Levels, rep.Top, sumNorm, cfg.B, cfg.C)
		if cfg.Previous {
			rep.Estimators = append(rep.Estimators, PredictVR(rep.Estimators, rep.Levels, rep.Top, cfg)...)
			rep.D1, rep.D2, rep.QE = cfg.D1, cfg.D2, cfg.QE
		}
		rep.Verdict = verdict(rep)
	}
	vecs := append([]V{m.y, m.mean, m.sum}, m.dirs...)
	if cfg.Previous {
		vecs = append(vecs, m.prev)
	}
	for _, v := range vecs {
		if f, ok := ops.(interface{ Free(V) }); ok {
			f.Free(v)
		}
	}
	return rep, nil
}

// levelMeter holds MeasureLevels' vectors: y the current query's gradient,
// mean the running mean of the level, sum the telescoping sum, dirs the
// random directions, prev the query's gradient at x_(t-1).
type levelMeter[V any] struct {
	o                  Oracle[V]
	ops                DiagOps[V]
	cfg                LevelsConfig
	y, mean, sum, prev V
	dirs               []V
	incr               []float64
	seconds, costs     []float64
}

// level makes K queries at level l and returns their statistics, with the
// mean and the variance of their projections on the random directions; it
// leaves their mean in m.mean. The mean and variance are updated one query
// at a time (Welford's recurrence, in vector form): with delta = Y_k -
// M_(k-1), M_k = M_(k-1) + delta/k and S_k = S_(k-1) + |delta|^2 (k-1)/k, so
// no vector is ever subtracted from a nearly equal one.
func (m *levelMeter[V]) level(l int, diff bool) (LevelStat, []float64, []float64, error) {
	ops, k := m.ops, m.cfg.Draws
	ops.Zero(m.mean)
	m.incr, m.seconds, m.costs = m.incr[:0], m.seconds[:0], m.costs[:0]
	p := len(m.dirs)
	pSum, pSum2 := make([]float64, p), make([]float64, p)
	moment2, corr2, corrSec := 0.0, 0.0, 0.0
	var start time.Time
	for i := 1; i <= k; i++ {
		if !m.cfg.Untimed {
			start = time.Now()
		}
		s, cost, err := m.o.Draw(l)
		if err != nil {
			return LevelStat{}, nil, nil, fmt.Errorf("per-level diagnostics: draw at level %d: %w", l, err)
		}
		ops.Zero(m.y)
		err = m.o.Eval(s, Current, diff, 1, m.y)
		if err != nil {
			m.o.Release(s)
			return LevelStat{}, nil, nil, fmt.Errorf("per-level diagnostics: evaluate at level %d: %w", l, err)
		}
		// Dot synchronises a device backend, so the time is the query's.
		y2 := ops.Dot(m.y, m.y)
		if !m.cfg.Untimed {
			m.seconds = append(m.seconds, time.Since(start).Seconds())
		}
		if m.cfg.Previous {
			// prev <- Y(x_(t-1); s) - Y(x_t; s), the same draw.
			if !m.cfg.Untimed {
				start = time.Now()
			}
			ops.Zero(m.prev)
			if err := m.o.Eval(s, Previous, diff, 1, m.prev); err != nil {
				m.o.Release(s)
				return LevelStat{}, nil, nil, fmt.Errorf("per-level diagnostics: evaluate at level %d at x_{t-1}: %w", l, err)
			}
			ops.Axpy(-1, m.y, m.prev)
			corr2 += ops.Dot(m.prev, m.prev)
			if !m.cfg.Untimed {
				corrSec += time.Since(start).Seconds()
			}
		}
		m.o.Release(s)
		m.costs = append(m.costs, float64(cost))
		moment2 += y2
		for j, u := range m.dirs {
			pj := ops.Dot(u, m.y)
			pSum[j] += pj
			pSum2[j] += pj * pj
		}
		// y <- Y_k - M_(k-1); M_k = M_(k-1) + y/k.
		ops.Axpy(-1, m.mean, m.y)
		d2 := ops.Dot(m.y, m.y)
		if i > 1 {
			m.incr = append(m.incr, d2*float64(i-1)/float64(i))
		}
		ops.Axpy(1/float64(i), m.y, m.mean)
		if m.cfg.Progress != nil {
			m.cfg.Progress(l, diff, i)
		}
	}
	st := LevelStat{Level: l, Diff: diff, Draws: k,
		MeanNorm:    math.Sqrt(math.Max(ops.Dot(m.mean, m.mean), 0)),
		Moment2:     moment2 / float64(k),
		CorrMoment2: corr2 / float64(k), CorrSeconds: corrSec / float64(k)}
	// The increments sum to (K-1) s^2 and each has mean Var Y; their spread
	// estimates the standard error of s^2 (exactly so for large K, where
	// M_(k-1) is close to E Y).
	st.Var, st.VarSE = meanSE(m.incr)
	if !m.cfg.Untimed {
		st.Seconds, st.SecondsSE = meanSE(m.seconds)
	}
	st.Images, _ = meanSE(m.costs)
	pMean, pVar := make([]float64, p), make([]float64, p)
	for j := range p {
		pMean[j] = pSum[j] / float64(k)
		pVar[j] = math.Max(pSum2[j]-float64(k)*pMean[j]*pMean[j], 0) / float64(k-1)
	}
	return st, pMean, pVar, nil
}
