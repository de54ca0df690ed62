package mlmc

import "math/rand/v2"

// lsgd is L-SGD, the baseline: the mean of NL draws of h^L, the plain
// minibatch gradient of batch 2^L (docs/definitions.md, section 2 "The
// estimators").
type lsgd struct{}

func (lsgd) Name() string                          { return "lsgd" }
func (lsgd) Check(cfg Config, oracleMax int) error { return CheckLevelRange(cfg, oracleMax) }
func (lsgd) Bind(cfg Config, _ int) Allocation     { return lsgdQueries{cfg} }

func (lsgd) DisplayName() string { return "L-SGD" }
func (lsgd) SingleLevel() bool   { return true }

// SplitsBatch: the ranks of a data-parallel run share L-SGD's one batch of
// 2^L images, each computing 2^L/P of it, so that the loss is that of the
// whole batch.
func (lsgd) SplitsBatch() bool { return true }

func (lsgd) Variance(q []LevelQueries, stats []LevelStat, _ float64) float64 {
	return independentVariance(q, stats)
}

func (lsgd) Optimal([]LevelQueries, []LevelStat, []float64) []float64 { return nil }

type lsgdQueries struct{ cfg Config }

func (p lsgdQueries) Queries(plan []Query, _ *rand.Rand) ([]Query, int) {
	for range p.cfg.NL {
		plan = append(plan, Query{Level: p.cfg.MaxLevel, Weight: 1 / float64(p.cfg.NL)})
	}
	return plan, 0
}

func (p lsgdQueries) Expected() []LevelQueries {
	return []LevelQueries{{Level: p.cfg.MaxLevel, Queries: float64(p.cfg.NL)}}
}

func (lsgdQueries) Notes() []string { return nil }

// independentVariance is the variance of a sum of independent means, n_l
// draws each of variance Var_l: sum_l Var_l / n_l (L-SGD, V-MLMC).
func independentVariance(q []LevelQueries, stats []LevelStat) float64 {
	v := 0.0
	for i, st := range stats {
		v += st.Var / q[i].Queries
	}
	return v
}
