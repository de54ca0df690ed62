package mlmc

import (
	"encoding/json"
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
	// B and C are the rates the estimators are configured with (default 1
	// each): vmlmc's n_l and rtmlmc's q_l in the predictions use them.
	B, C float64
	// Previous also evaluates every draw at the previous parameters x_(t-1)
	// and measures the VR correction Y(x_t; s) - Y(x_(t-1); s) of each
	// level, from which the vr- estimators are predicted.
	Previous bool
	// D1, D2 and QE are the VR settings the vr- predictions use (defaults
	// 1, 1, 10, as Config's).
	D1, D2, QE int
	// Seed seeds the random directions.
	Seed uint64
	// Progress, when set, is called after every query.
	Progress func(level int, diff bool, draw int)
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
	if c.B == 0 {
		c.B = 1
	}
	if c.C == 0 {
		c.C = 1
	}
	if c.D1 == 0 {
		c.D1 = 1
	}
	if c.D2 == 0 {
		c.D2 = 1
	}
	if c.QE == 0 {
		c.QE = 10
	}
	return c
}

func (c LevelsConfig) check(oracleMax int) error {
	switch {
	case c.MinLevel < 0 || c.MaxLevel < c.MinLevel:
		return fmt.Errorf("levels %d..%d are not a range of non-negative levels: set --min-level <= --max-level",
			c.MinLevel, c.MaxLevel)
	case oracleMax != Unbounded && c.MaxLevel > oracleMax:
		return fmt.Errorf("maximum level %d is above the largest level the oracle serves (%d): set --max-level <= %d",
			c.MaxLevel, oracleMax, oracleMax)
	case c.Draws < 3:
		return fmt.Errorf("%d draws per level: a variance and its standard error need at least 3 (set --draws)", c.Draws)
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

// LevelStat is what K independent queries tell about one level's
// estimate Y: H^l above the minimum level, h^l at it (and for the top row
// of the telescoping check).
type LevelStat struct {
	Level int  `json:"level"`
	Diff  bool `json:"diff"` // Y is H^l (true) or h^l
	Draws int  `json:"draws"`
	// MeanNorm is |mean of the K draws|.
	MeanNorm float64 `json:"mean_norm"`
	// Var is the unbiased estimate of E|Y - E Y|^2, the trace of Y's
	// covariance; VarSE its standard error.
	Var   float64 `json:"var"`
	VarSE float64 `json:"var_se"`
	// Moment2 is the mean of |Y|^2 over the draws, an unbiased estimate of
	// E|Y|^2.
	Moment2 float64 `json:"moment2"`
	// Images is the mean cost of a query in samples (the oracle's count:
	// 2^l images for SimCLR); Seconds the mean wall time of a query (draw
	// and evaluation) with its standard error.
	Images    float64 `json:"images"`
	Seconds   float64 `json:"seconds"`
	SecondsSE float64 `json:"seconds_se"`
	// With LevelsConfig.Previous: CorrMoment2 is the mean of
	// |Y(x_t; s) - Y(x_(t-1); s)|^2 over the draws, and CorrSeconds the mean
	// time of the evaluation at x_(t-1).
	CorrMoment2 float64 `json:"corr_moment2,omitempty"`
	CorrSeconds float64 `json:"corr_seconds,omitempty"`
}

// RateFit is a rate fitted by least squares on log2: log2 y_l = k + s l,
// with s = -b for variances and s = c for costs.
type RateFit struct {
	Rate float64 `json:"rate"`
	SE   float64 `json:"se"`
	// From and To are the levels fitted.
	From int `json:"from"`
	To   int `json:"to"`
	// Note says why a fit is missing or how it was made, when not plain.
	Note string `json:"note,omitempty"`
}

// Telescope compares D = sum_l mean Y_l with the mean of h^L: for an
// oracle whose H^l telescope (E sum_l Y_l = E h^L) D is noise only.
type Telescope struct {
	// DiffNorm is |sum_l mean Y_l - mean h^L|; NoiseNorm is
	// sqrt(E|D|^2) under exact telescoping, sqrt(sum_l Var_l/K + Var h^L/K),
	// the size of D expected from noise alone; SumNorm is |sum_l mean Y_l|
	// and TopNorm |mean h^L|.
	DiffNorm  float64 `json:"diff_norm"`
	NoiseNorm float64 `json:"noise_norm"`
	SumNorm   float64 `json:"sum_norm"`
	TopNorm   float64 `json:"top_norm"`
	// Z holds D's projections on random directions, each divided by its
	// standard error (from the projections of the single draws).
	Z []float64 `json:"z"`
	// Critical is the two-sided normal quantile at Confidence, Bonferroni
	// corrected for len(Z) tests; Pass says max |Z| < Critical.
	Confidence float64 `json:"confidence"`
	Critical   float64 `json:"critical"`
	Pass       bool    `json:"pass"`
}

// Prediction is an estimator's variance and expected cost per iteration,
// computed from the measured levels.
type Prediction struct {
	Name string `json:"name"`
	// Var is E|v - E v|^2; Images and Seconds the expected cost of one
	// estimate.
	Var     float64 `json:"var"`
	Images  float64 `json:"images"`
	Seconds float64 `json:"seconds"`
	// RelImages and RelSeconds are Var x cost relative to L-SGD's (one
	// draw of h^L): below 1 the estimator reaches the same variance at a
	// smaller cost.
	RelImages  float64 `json:"rel_images"`
	RelSeconds float64 `json:"rel_seconds"`
	Note       string  `json:"note,omitempty"`
}

// LevelsReport is MeasureLevels' result.
type LevelsReport struct {
	MinLevel int     `json:"min_level"`
	MaxLevel int     `json:"max_level"`
	Draws    int     `json:"draws"`
	B        float64 `json:"assumed_b"`
	C        float64 `json:"assumed_c"`
	// D1, D2 and QE are the VR settings of the vr- predictions (zero when
	// the corrections were not measured).
	D1         int          `json:"d1,omitempty"`
	D2         int          `json:"d2,omitempty"`
	QE         int          `json:"qe,omitempty"`
	Levels     []LevelStat  `json:"levels"`
	Top        LevelStat    `json:"top"` // h^L, for the telescoping check and L-SGD
	FitB       RateFit      `json:"fit_b"`
	FitCImages RateFit      `json:"fit_c_images"`
	FitCTime   RateFit      `json:"fit_c_seconds"`
	Telescope  Telescope    `json:"telescope"`
	Estimators []Prediction `json:"estimators"`
	Verdict    string       `json:"verdict"`
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
		z := (projMean[j] - pm[j]) / math.Sqrt(projVar[j]+pv[j]/float64(cfg.Draws))
		tel.Z = append(tel.Z, z)
		if !(math.Abs(z) < tel.Critical) {
			tel.Pass = false
		}
	}
	rep.Telescope = tel
	rep.FitB, rep.FitCImages, rep.FitCTime = fitRates(rep.Levels)
	rep.Estimators = PredictEstimators(rep.Levels, rep.Top, sumNorm, cfg.B, cfg.C)
	if cfg.Previous {
		rep.Estimators = append(rep.Estimators, PredictVR(rep.Estimators, rep.Levels, rep.Top, cfg)...)
		rep.D1, rep.D2, rep.QE = cfg.D1, cfg.D2, cfg.QE
	}
	rep.Verdict = verdict(rep)
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
	for i := 1; i <= k; i++ {
		start := time.Now()
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
		m.seconds = append(m.seconds, time.Since(start).Seconds())
		if m.cfg.Previous {
			// prev <- Y(x_(t-1); s) - Y(x_t; s), the same draw.
			start := time.Now()
			ops.Zero(m.prev)
			if err := m.o.Eval(s, Previous, diff, 1, m.prev); err != nil {
				m.o.Release(s)
				return LevelStat{}, nil, nil, fmt.Errorf("per-level diagnostics: evaluate at level %d at x_{t-1}: %w", l, err)
			}
			ops.Axpy(-1, m.y, m.prev)
			corr2 += ops.Dot(m.prev, m.prev)
			corrSec += time.Since(start).Seconds()
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
	st.Seconds, st.SecondsSE = meanSE(m.seconds)
	st.Images, _ = meanSE(m.costs)
	pMean, pVar := make([]float64, p), make([]float64, p)
	for j := range p {
		pMean[j] = pSum[j] / float64(k)
		pVar[j] = math.Max(pSum2[j]-float64(k)*pMean[j]*pMean[j], 0) / float64(k-1)
	}
	return st, pMean, pVar, nil
}

// meanSE is the mean of xs and its standard error.
func meanSE(xs []float64) (mean, se float64) {
	n := float64(len(xs))
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if n < 2 {
		return mean, math.NaN()
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / (n - 1) / n)
}

// NormalCritical is the two-sided standard normal quantile z with
// P(|Z| > z) = (1 - confidence)/tests: the Bonferroni-corrected critical
// value of tests simultaneous z-tests at the given confidence.
func NormalCritical(confidence float64, tests int) float64 {
	return math.Sqrt2 * math.Erfinv(1-(1-confidence)/float64(tests))
}

// fitRates fits b on the variances of H^l (levels above the minimum; with
// fewer than two of them the minimum level's h^l is included) and c on the
// costs of every level, in images and in seconds.
func fitRates(levels []LevelStat) (b, cImages, cTime RateFit) {
	pts := levels
	note := ""
	if len(levels) >= 3 {
		pts = levels[1:]
	} else {
		note = "includes the minimum level's h^l (fewer than two H^l levels)"
	}
	var ls, ys, ses []float64
	for _, st := range pts {
		ls = append(ls, float64(st.Level))
		ys = append(ys, st.Var)
		ses = append(ses, st.VarSE)
	}
	b = fitLog2(ls, ys, ses)
	b.Rate = -b.Rate
	if note != "" && b.Note == "" {
		b.Note = note
	}
	ls, ys, ses = ls[:0], ys[:0], ses[:0]
	var ts, tses []float64
	for _, st := range levels {
		ls = append(ls, float64(st.Level))
		ys = append(ys, st.Images)
		ses = append(ses, 0)
		ts = append(ts, st.Seconds)
		tses = append(tses, st.SecondsSE)
	}
	return b, fitLog2(ls, ys, ses), fitLog2(ls, ts, tses)
}

// fitLog2 fits log2 y = k + s x by weighted least squares, the weight of a
// point being 1/se(log2 y)^2 with se(log2 y) = se(y)/(y ln 2) (the delta
// method). Its standard error is the weighted fit's, inflated by
// sqrt(chi^2/(n-2)) when the points scatter more than their standard errors
// say (the model does not fit exactly). With no standard errors (exact
// costs) the fit is unweighted and its standard error is the residuals'.
func fitLog2(x, y, ySE []float64) RateFit {
	f := RateFit{Rate: math.NaN(), SE: math.NaN()}
	if len(x) > 0 {
		f.From, f.To = int(x[0]), int(x[len(x)-1])
	}
	if len(x) < 2 {
		f.Note = "one level: no rate"
		return f
	}
	ly, w := make([]float64, len(x)), make([]float64, len(x))
	weighted := true
	for i := range x {
		if !(y[i] > 0) {
			f.Note = fmt.Sprintf("level %d: %g is not positive", int(x[i]), y[i])
			return f
		}
		ly[i] = math.Log2(y[i])
		se := ySE[i] / (y[i] * math.Ln2)
		if !(se > 0) || math.IsInf(se, 0) {
			weighted = false
		}
		w[i] = 1 / (se * se)
	}
	if !weighted {
		for i := range w {
			w[i] = 1
		}
	}
	var sw, sx, sy float64
	for i := range x {
		sw += w[i]
		sx += w[i] * x[i]
		sy += w[i] * ly[i]
	}
	mx, my := sx/sw, sy/sw
	var sxx, sxy float64
	for i := range x {
		sxx += w[i] * (x[i] - mx) * (x[i] - mx)
		sxy += w[i] * (x[i] - mx) * (ly[i] - my)
	}
	f.Rate = sxy / sxx
	chi2 := 0.0
	for i := range x {
		r := ly[i] - my - f.Rate*(x[i]-mx)
		chi2 += w[i] * r * r
	}
	n := float64(len(x))
	switch {
	case weighted:
		scale := 1.0
		if n > 2 {
			scale = math.Max(1, chi2/(n-2))
		}
		f.SE = math.Sqrt(scale / sxx)
	case n > 2:
		f.SE = math.Sqrt(chi2 / (n - 2) / sxx)
	default:
		f.SE = math.NaN()
		f.Note = "two levels and no sampling error: no standard error"
	}
	return f
}

// PredictEstimators computes each estimator's variance and expected cost
// per estimate from the levels' statistics (levels[0] is h^(l_min), the rest
// H^l), top (h^L) and sumNorm = |sum_l mean Y_l|, with vmlmc's n_l and rtmlmc's q_l set by the rates b
// and c as the estimators use them, and with the allocations that minimise
// variance x cost for the measured levels ("-opt"):
//
//	lsgd:   Var h^L,                           cost C_L
//	vmlmc:  sum_l Var_l / n_l,                 cost sum_l n_l C_l
//	rtmlmc: sum_l E|Y_l|^2 / q_l - |sum_l E Y_l|^2, cost sum_l q_l C_l
//
// The optimal allocations are n_l proportional to sqrt(Var_l / C_l) and q_l
// proportional to sqrt(E|Y_l|^2 / C_l) (Lagrange; the latter ignores the
// |E v|^2 term). The VR versions need the corrections measured at x_(t-1)
// as well: PredictVR.
func PredictEstimators(levels []LevelStat, top LevelStat, sumNorm, b, c float64) []Prediction {
	if len(levels) == 0 {
		return nil
	}
	lsgd := Prediction{Name: "lsgd", Var: top.Var, Images: top.Images, Seconds: top.Seconds, RelImages: 1, RelSeconds: 1}
	preds := []Prediction{lsgd}
	rel := func(p Prediction) Prediction {
		p.RelImages = p.Var * p.Images / (lsgd.Var * lsgd.Images)
		p.RelSeconds = p.Var * p.Seconds / (lsgd.Var * lsgd.Seconds)
		return p
	}
	minL, maxL := levels[0].Level, levels[len(levels)-1].Level

	vm := func(name string, n func(i int) float64) Prediction {
		p := Prediction{Name: name}
		for i, st := range levels {
			p.Var += st.Var / n(i)
			p.Images += n(i) * st.Images
			p.Seconds += n(i) * st.Seconds
		}
		return rel(p)
	}
	nTop := math.Ceil(math.Exp2((b + c) * float64(maxL) / 2))
	preds = append(preds, vm("vmlmc", func(i int) float64 {
		return float64(VMLMCDraws(levels[i].Level, b, c, nTop))
	}))
	// The optimal allocations weigh the cost in time when every level has
	// one, else in images. The optimal n_l is scaled so that the top level
	// has one draw; var x cost does not depend on the scale.
	cost := func(i int) float64 { return levels[i].Seconds }
	for _, st := range levels {
		if !(st.Seconds > 0) {
			cost = func(i int) float64 { return levels[i].Images }
		}
	}
	sqrtVC := func(i int) float64 { return math.Sqrt(levels[i].Var / cost(i)) }
	last := len(levels) - 1
	preds = append(preds, vm("vmlmc-opt", func(i int) float64 { return sqrtVC(i) / sqrtVC(last) }))
	if p := preds[len(preds)-1]; math.IsNaN(p.Var) {
		preds[len(preds)-1].Note = "needs positive variances and times"
	}

	// |E v|^2 of the MLMC estimators, E v = sum_l E Y_l, unbiased:
	// |sum_l mean Y_l|^2 - sum_l Var_l / K (the levels are independent).
	mean2 := sumNorm * sumNorm
	for _, st := range levels {
		mean2 -= st.Var / float64(st.Draws)
	}
	mean2 = math.Max(mean2, 0)
	rt := func(name string, q []float64) Prediction {
		p := Prediction{Name: name}
		for i, st := range levels {
			p.Var += st.Moment2 / q[i]
			p.Images += q[i] * st.Images
			p.Seconds += q[i] * st.Seconds
		}
		p.Var -= mean2
		return rel(p)
	}
	law := Truncated(minL, maxL, b, c)
	q := make([]float64, len(levels))
	for i, st := range levels {
		q[i] = law.Prob(st.Level)
	}
	preds = append(preds, rt("rtmlmc", q))
	sum := 0.0
	for i, st := range levels {
		q[i] = math.Sqrt(st.Moment2 / cost(i))
		sum += q[i]
	}
	for i := range q {
		q[i] /= sum
	}
	preds = append(preds, rt("rtmlmc-opt", q))
	return preds
}

// PredictVR predicts the vr- versions of lsgd, vmlmc and rtmlmc from the
// base predictions and the measured corrections (levels measured with
// LevelsConfig.Previous). Over a period of QE iterations, a fresh step's
// mean of D1 estimates has variance Var/D1, and each correction step adds
// the variance of a mean of D2 corrections v(x_t; s) - v(x_(t-1); s), at
// most their second moment E|corr|^2/D2:
//
//	lsgd:   E|corr|^2 = E|Δh^L|^2
//	vmlmc:  sum_l E|ΔY_l|^2 / n_l
//	rtmlmc: sum_l E|ΔY_l|^2 / q_l
//
// so the variance averaged over the period is Var/D1 + (QE-1)/2 E|corr|^2/D2
// (an upper bound, E|corr|^2 >= Var corr), and the cost per iteration is
// (D1 C + (QE-1) D2 C)/QE images, (D1 T + (QE-1) D2 (T + T_prev))/QE
// seconds: a correction evaluates each draw twice. The corrections scale
// with the step |x_t - x_(t-1)| the measurement was made at: the prediction
// holds for training at that learning rate.
func PredictVR(base []Prediction, levels []LevelStat, top LevelStat, cfg LevelsConfig) []Prediction {
	cfg = cfg.withDefaults()
	if len(levels) == 0 {
		return nil
	}
	minL, maxL := levels[0].Level, levels[len(levels)-1].Level
	law := Truncated(minL, maxL, cfg.B, cfg.C)
	nTop := math.Ceil(math.Exp2((cfg.B + cfg.C) * float64(maxL) / 2))
	var lsgd Prediction
	for _, p := range base {
		if p.Name == "lsgd" {
			lsgd = p
		}
	}
	d1, d2, qe := float64(cfg.D1), float64(cfg.D2), float64(cfg.QE)
	var out []Prediction
	for _, p := range base {
		var corr, prevSec float64 // E|corr|^2, and the expected time of the evaluations at x_(t-1)
		switch p.Name {
		case "lsgd":
			corr, prevSec = top.CorrMoment2, top.CorrSeconds
		case "vmlmc":
			for _, st := range levels {
				n := float64(VMLMCDraws(st.Level, cfg.B, cfg.C, nTop))
				corr += st.CorrMoment2 / n
				prevSec += n * st.CorrSeconds
			}
		case "rtmlmc":
			for _, st := range levels {
				q := law.Prob(st.Level)
				corr += st.CorrMoment2 / q
				prevSec += q * st.CorrSeconds
			}
		default:
			continue
		}
		vr := Prediction{Name: "vr-" + p.Name,
			Var:     p.Var/d1 + (qe-1)/2*corr/d2,
			Images:  (d1*p.Images + (qe-1)*d2*p.Images) / qe,
			Seconds: (d1*p.Seconds + (qe-1)*d2*(p.Seconds+prevSec)) / qe,
			Note:    fmt.Sprintf("D1 = %d, D2 = %d, QE = %d, at the measured step x_t - x_(t-1)", cfg.D1, cfg.D2, cfg.QE)}
		vr.RelImages = vr.Var * vr.Images / (lsgd.Var * lsgd.Images)
		vr.RelSeconds = vr.Var * vr.Seconds / (lsgd.Var * lsgd.Seconds)
		out = append(out, vr)
	}
	return out
}

// verdict is one line: can MLMC pay off here, judged on wall time (images
// when no time was measured), and does the telescoping sum hold.
func verdict(rep *LevelsReport) string {
	best := Prediction{RelSeconds: math.Inf(1), RelImages: math.Inf(1)}
	useTime := rep.Top.Seconds > 0
	relOf := func(p Prediction) float64 {
		if useTime {
			return p.RelSeconds
		}
		return p.RelImages
	}
	for _, p := range rep.Estimators {
		// vr-lsgd is L-SGD with variance reduction, not MLMC.
		if p.Name == "lsgd" || p.Name == "vr-lsgd" || math.IsNaN(relOf(p)) {
			continue
		}
		if relOf(p) < relOf(best) {
			best = p
		}
	}
	unit := "wall time"
	if !useTime {
		unit = "images"
	}
	var s string
	switch r := relOf(best); {
	case math.IsInf(r, 1):
		s = "no MLMC estimator could be predicted"
	case r < 1:
		s = fmt.Sprintf("MLMC can pay off: %s reaches L-SGD's variance at %.2f of its cost (in %s)", best.Name, r, unit)
	default:
		s = fmt.Sprintf("MLMC cannot pay off: the best, %s, needs %.2f times L-SGD's variance x cost (in %s)",
			best.Name, r, unit)
	}
	if !rep.Telescope.Pass {
		s += fmt.Sprintf("; and the telescoping check fails (max |z| above %.2f): the MLMC estimators are biased for grad F^%d",
			rep.Telescope.Critical, rep.MaxLevel)
	}
	return s
}

// finite is x, or nil for NaN and infinities, which JSON cannot hold.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MarshalJSON writes a missing rate or standard error as null.
func (f RateFit) MarshalJSON() ([]byte, error) {
	type plain RateFit
	return json.Marshal(struct {
		plain
		Rate *float64 `json:"rate"`
		SE   *float64 `json:"se"`
	}{plain(f), finite(f.Rate), finite(f.SE)})
}

// MarshalJSON writes quantities that could not be predicted as null.
func (p Prediction) MarshalJSON() ([]byte, error) {
	type plain Prediction
	return json.Marshal(struct {
		plain
		Var        *float64 `json:"var"`
		RelImages  *float64 `json:"rel_images"`
		RelSeconds *float64 `json:"rel_seconds"`
	}{plain(p), finite(p.Var), finite(p.RelImages), finite(p.RelSeconds)})
}
