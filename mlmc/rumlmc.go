package mlmc

import (
	"fmt"
	"math/rand/v2"
)

// rumlmc is RU-MLMC: H^i / q_i, i drawn from the geometric law on
// MinLevel..infinity, redrawn above the largest level the oracle serves
// (docs/definitions.md, section 2 "The estimators").
type rumlmc struct{}

func (rumlmc) Name() string                          { return "rumlmc" }
func (rumlmc) Check(cfg Config, oracleMax int) error { return checkServable(cfg, oracleMax) }

func (rumlmc) DisplayName() string { return "RU-MLMC" }
func (rumlmc) Unbounded() bool     { return true }
func (rumlmc) DrawsLevels() bool   { return true }

func (rumlmc) Bind(cfg Config, oracleMax int) Allocation {
	g := bindGeometric(cfg, oracleMax)
	return singleDraw{cfg: cfg, law: g.law, expected: &g.expected, draw: g.draw, notes: g.notes}
}

// checkServable checks that an oracle serving levels up to oracleMax
// serves the minimum level: the check of the unbounded laws, which ignore
// MaxLevel.
func checkServable(c Config, oracleMax int) error {
	if oracleMax != Unbounded && c.MinLevel > oracleMax {
		return fmt.Errorf("minimum level %d is above the largest level the oracle serves (%d)", c.MinLevel, oracleMax)
	}
	return nil
}

// geometric is the law of RU-MLMC and RR-MLMC bound to an oracle: the
// geometric law on MinLevel..infinity, whose draws above max are drawn
// again, which draws from the law conditioned on T <= max (law).
type geometric struct {
	min      int
	b, c     float64
	max      int
	law      LevelDist // the law conditioned on the servable levels, as drawn
	expected LevelDist // the same law as the cost model states it
	notes    []string
}

func bindGeometric(cfg Config, oracleMax int) geometric {
	g := geometric{min: cfg.MinLevel, b: cfg.B, c: cfg.C, max: levelCap}
	if oracleMax != Unbounded && oracleMax < levelCap {
		g.max = oracleMax
		g.notes = append(g.notes, fmt.Sprintf(
			"the oracle serves levels up to %d; levels drawn above it are redrawn, "+
				"which makes this RT-MLMC truncated at %d (its expectation is grad F^%d, not grad F)",
			oracleMax, oracleMax, oracleMax))
	}
	g.law = Geometric(cfg.MinLevel, cfg.B, cfg.C).truncate(g.max)
	g.expected = Truncated(cfg.MinLevel, g.max, cfg.B, cfg.C)
	if cfg.B <= cfg.C {
		g.notes = append(g.notes, fmt.Sprintf(
			"b = %g <= c = %g, so the untruncated estimator has unbounded expected cost (the paper's Table 2)",
			cfg.B, cfg.C))
	}
	return g
}

// draw draws from the unbounded law and redraws levels the oracle cannot
// serve; it returns the level and the redraws.
func (g geometric) draw(r *rand.Rand) (int, int) {
	law := Geometric(g.min, g.b, g.c)
	redraws := 0
	for {
		l := law.Draw(r)
		if l <= g.max {
			return l, redraws
		}
		redraws++
	}
}
