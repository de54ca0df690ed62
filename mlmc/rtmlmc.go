package mlmc

import (
	"math"
	"math/rand/v2"
)

// rtmlmc is RT-MLMC: H^i / q_i, i drawn from the truncated law q_l
// proportional to 2^(-(b+c) l/2) on MinLevel..MaxLevel, or Config.LevelProbs
// (docs/definitions.md, section 2 "The estimators").
type rtmlmc struct{}

func (rtmlmc) Name() string { return "rtmlmc" }

func (rtmlmc) Check(cfg Config, oracleMax int) error {
	if err := CheckLevelRange(cfg, oracleMax); err != nil {
		return err
	}
	return cfg.checkExplicit()
}

func (rtmlmc) Bind(cfg Config, _ int) Allocation {
	return singleDraw{cfg: cfg, law: cfg.rtLaw()}
}

func (rtmlmc) Explicit() ExplicitLaw { return ExplicitProbs }

func (rtmlmc) DisplayName() string { return "RT-MLMC" }
func (rtmlmc) DrawsLevels() bool   { return true }

func (rtmlmc) Variance(q []LevelQueries, stats []LevelStat, mean2 float64) float64 {
	return singleDrawVariance(q, stats, mean2)
}

// Optimal is q_l proportional to sqrt(E|Y_l|^2 / C_l) (Lagrange, ignoring
// the |E v|^2 term).
func (rtmlmc) Optimal(_ []LevelQueries, stats []LevelStat, cost []float64) []float64 {
	q := make([]float64, len(stats))
	sum := 0.0
	for i, st := range stats {
		q[i] = math.Sqrt(st.Moment2 / cost[i])
		sum += q[i]
	}
	for i := range q {
		q[i] /= sum
	}
	return q
}

// rtLaw is RT-MLMC's level law: Config.LevelProbs when set, else q_l
// proportional to 2^(-(b+c) l/2) on MinLevel..MaxLevel.
func (c Config) rtLaw() LevelDist {
	if c.LevelProbs != nil {
		d, err := Explicit(c.MinLevel, c.LevelProbs)
		if err == nil {
			return d
		}
		// checkExplicit has rejected such a config before any law is built.
		panic("mlmc: " + err.Error())
	}
	return Truncated(c.MinLevel, c.MaxLevel, c.B, c.C)
}

// singleDraw is the plan of RT-MLMC and RU-MLMC: one query H^i / q_i at a
// level i drawn from law. expected is the law the cost model prices (nil:
// law itself); draw, when set, draws the level instead of law.Draw and
// returns the redraws it made.
type singleDraw struct {
	cfg      Config
	law      LevelDist
	expected *LevelDist
	draw     func(r *rand.Rand) (int, int)
	notes    []string
}

func (p singleDraw) Queries(plan []Query, r *rand.Rand) ([]Query, int) {
	var i, redraws int
	if p.draw != nil {
		i, redraws = p.draw(r)
	} else {
		i = p.law.Draw(r)
	}
	return append(plan, Query{Level: i, Correction: correctionAbove(p.cfg, i), Weight: 1 / p.law.Prob(i)}), redraws
}

func (p singleDraw) Expected() []LevelQueries {
	law := p.law
	if p.expected != nil {
		law = *p.expected
	}
	var q []LevelQueries
	for l := p.cfg.MinLevel; l <= law.Max; l++ {
		q = append(q, LevelQueries{Level: l, Queries: law.Prob(l), Correction: correctionAbove(p.cfg, l)})
	}
	return q
}

func (p singleDraw) Notes() []string { return p.notes }

// levelLaw is the law the plan draws from, for the tests' exact moments.
func (p singleDraw) levelLaw() LevelDist { return p.law }

// singleDrawVariance is the variance of Y_i / q_i, i drawn with
// probability q_i: sum_l E|Y_l|^2 / q_l - |E v|^2.
func singleDrawVariance(q []LevelQueries, stats []LevelStat, mean2 float64) float64 {
	v := 0.0
	for i, st := range stats {
		v += st.Moment2 / q[i].Queries
	}
	return v - mean2
}
