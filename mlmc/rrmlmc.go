package mlmc

import "math/rand/v2"

// rrmlmc is RR-MLMC: sum_{l<=T} H^l / P(T >= l), T drawn from the
// geometric law on MinLevel..infinity, redrawn above the largest level the
// oracle serves (docs/definitions.md, section 2 "The estimators").
type rrmlmc struct{}

func (rrmlmc) Name() string                          { return "rrmlmc" }
func (rrmlmc) Check(cfg Config, oracleMax int) error { return checkServable(cfg, oracleMax) }

func (rrmlmc) DisplayName() string { return "RR-MLMC" }
func (rrmlmc) Unbounded() bool     { return true }
func (rrmlmc) DrawsLevels() bool   { return true }

func (rrmlmc) Bind(cfg Config, oracleMax int) Allocation {
	return rrmlmcQueries{cfg: cfg, geometric: bindGeometric(cfg, oracleMax)}
}

type rrmlmcQueries struct {
	cfg Config
	geometric
}

func (p rrmlmcQueries) Queries(plan []Query, r *rand.Rand) ([]Query, int) {
	top, redraws := p.draw(r)
	for l := p.cfg.MinLevel; l <= top; l++ {
		plan = append(plan, Query{Level: l, Correction: correctionAbove(p.cfg, l), Weight: 1 / p.law.Tail(l)})
	}
	return plan, redraws
}

// Expected: one query at every level up to the drawn top T, so level l is
// queried with probability P(T >= l).
func (p rrmlmcQueries) Expected() []LevelQueries {
	var q []LevelQueries
	for l := p.cfg.MinLevel; l <= p.expected.Max; l++ {
		q = append(q, LevelQueries{Level: l, Queries: p.expected.Tail(l), Correction: correctionAbove(p.cfg, l)})
	}
	return q
}

func (p rrmlmcQueries) Notes() []string { return p.notes }

func (p rrmlmcQueries) levelLaw() LevelDist { return p.law }
