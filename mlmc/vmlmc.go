package mlmc

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// vmlmc is V-MLMC: sum over l of the mean of n_l draws of H^l (h^l at the
// minimum level), n_l = ceil(2^(-(b+c) l/2) N) or Config.LevelDraws
// (docs/definitions.md, section 2 "The estimators").
type vmlmc struct{}

func (vmlmc) Name() string { return "vmlmc" }

func (vmlmc) Check(cfg Config, oracleMax int) error {
	if err := CheckLevelRange(cfg, oracleMax); err != nil {
		return err
	}
	return cfg.checkExplicit()
}

func (vmlmc) Bind(cfg Config, _ int) Allocation { return vmlmcQueries{cfg} }

func (vmlmc) DisplayName() string { return "V-MLMC" }

func (vmlmc) Explicit() ExplicitLaw { return ExplicitDraws }

func (vmlmc) Variance(q []LevelQueries, stats []LevelStat, _ float64) float64 {
	return independentVariance(q, stats)
}

// Optimal is n_l proportional to sqrt(Var_l / C_l) (Lagrange), scaled so
// that the top level has one draw; variance x cost does not depend on the
// scale.
func (vmlmc) Optimal(_ []LevelQueries, stats []LevelStat, cost []float64) []float64 {
	n := make([]float64, len(stats))
	last := len(stats) - 1
	top := math.Sqrt(stats[last].Var / cost[last])
	for i, st := range stats {
		n[i] = math.Sqrt(st.Var/cost[i]) / top
	}
	return n
}

type vmlmcQueries struct{ cfg Config }

func (p vmlmcQueries) Queries(plan []Query, _ *rand.Rand) ([]Query, int) {
	c := p.cfg
	for l := c.MinLevel; l <= c.MaxLevel; l++ {
		n := c.vmlmcDraws(l)
		for range n {
			plan = append(plan, Query{Level: l, Correction: correctionAbove(c, l), Weight: 1 / float64(n)})
		}
	}
	return plan, 0
}

func (p vmlmcQueries) Expected() []LevelQueries {
	c := p.cfg
	var q []LevelQueries
	for l := c.MinLevel; l <= c.MaxLevel; l++ {
		q = append(q, LevelQueries{Level: l, Queries: float64(c.vmlmcDraws(l)), Correction: correctionAbove(c, l)})
	}
	return q
}

func (vmlmcQueries) Notes() []string { return nil }

// VMLMCDraws is n_l = ceil(2^(-(b+c) l/2) N), V-MLMC's draws at level l.
func VMLMCDraws(l int, b, c, n float64) int {
	return int(math.Ceil(math.Exp2(-(b+c)*float64(l)/2) * n))
}

// vmlmcDraws is V-MLMC's n_l: Config.LevelDraws when set, else
// VMLMCDraws(l, b, c, N).
func (c Config) vmlmcDraws(l int) int {
	if c.LevelDraws != nil {
		return c.LevelDraws[l-c.MinLevel]
	}
	return VMLMCDraws(l, c.B, c.C, c.N)
}

// checkExplicit checks LevelProbs and LevelDraws against MinLevel..MaxLevel.
func (c Config) checkExplicit() error {
	n := c.MaxLevel - c.MinLevel + 1
	if c.LevelProbs != nil {
		if len(c.LevelProbs) != n {
			return fmt.Errorf("explicit level law: %d probabilities for the %d levels %d..%d", len(c.LevelProbs), n, c.MinLevel, c.MaxLevel)
		}
		if _, err := Explicit(c.MinLevel, c.LevelProbs); err != nil {
			return err
		}
	}
	if c.LevelDraws != nil {
		if len(c.LevelDraws) != n {
			return fmt.Errorf("explicit V-MLMC draws: %d counts for the %d levels %d..%d", len(c.LevelDraws), n, c.MinLevel, c.MaxLevel)
		}
		for i, k := range c.LevelDraws {
			if k < 1 {
				return fmt.Errorf("explicit V-MLMC draws: n at level %d is %d; every level needs at least one draw", c.MinLevel+i, k)
			}
		}
	}
	return nil
}
