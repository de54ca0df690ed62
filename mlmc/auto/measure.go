package auto

import (
	"fmt"

	"github.com/simclr-go/simclr/mlmc"
)

// counting wraps an oracle and adds up the samples of its draws, so that a
// pilot's cost is what the oracle says it drew, not a model of it.
type counting[V any] struct {
	mlmc.Oracle[V]
	samples int64
}

func (c *counting[V]) Draw(level int) (mlmc.Sample, int64, error) {
	s, cost, err := c.Oracle.Draw(level)
	c.samples += cost
	return s, cost, err
}

// Measurement is one pilot measurement: the per-level report and the
// samples it drew (the cost probe included).
type Measurement struct {
	Report  *mlmc.LevelsReport `json:"report"`
	Samples int64              `json:"samples"`
	// LowDraws, when positive, is the draws of levels l_min..l_min+3,
	// measured again densely; Report.Levels holds those rows.
	LowDraws int `json:"low_draws,omitempty"`
	// Queries are the queries the pilot made, level by level, for
	// pricing what its samples cost apart from its statistics.
	Queries []LevelQueries `json:"-"`
}

// LevelQueries are Draws queries at Level: each evaluated as H^l (Diff)
// or h^l, or only drawn (DrawOnly: the cost probe).
type LevelQueries struct {
	Level, Draws   int
	Diff, DrawOnly bool
}

// reportQueries lists a report's queries: Draws per level, then h^L.
func reportQueries(rep *mlmc.LevelsReport) []LevelQueries {
	var qs []LevelQueries
	for _, l := range rep.Levels {
		qs = append(qs, LevelQueries{Level: l.Level, Draws: l.Draws, Diff: l.Diff})
	}
	return append(qs, LevelQueries{Level: rep.Top.Level, Draws: rep.Top.Draws})
}

// maxPilotLevels bounds the levels one pilot measures above the minimum:
// beyond about a dozen the fits gain little and a level's cost dominates.
const maxPilotLevels = 12

// Measure measures the levels minLevel..Lp of o at its current parameters
// within budget samples: a cost probe draws one query per level upwards
// (drawn, not evaluated) to learn the costs C_l; Lp is the largest level at
// which draws queries of every level and of h^Lp (MeasureLevels' telescoping
// check) fit in what the probe left, with at least minDraws per level, and
// then as many draws per level as half the budget pays for, the other half
// measuring levels minLevel..minLevel+3 again with as many draws as it pays
// for (their rows replace the first measurement's). Fewer than three levels
// (two H^l, the least that fits b and a) is an *Error. The report is
// brief (mlmc.LevelsConfig.Brief): no predictions and no verdict, which
// the plan makes by its own rules.
func Measure[V any](o mlmc.Oracle[V], ops mlmc.DiagOps[V], minLevel int, budget int64, minDraws int, seed uint64) (Measurement, error) {
	if minDraws < 3 {
		minDraws = 3
	}
	co := &counting[V]{Oracle: o}
	top := minLevel + maxPilotLevels
	if m := o.MaxLevel(); m != mlmc.Unbounded && m < top {
		top = m
	}
	// Cost probe: C_l per level while the cheapest measurement that still
	// includes level l, minDraws x (sum C + C_l), fits.
	var costs []float64
	var probe []LevelQueries
	sum := 0.0
	for l := minLevel; l <= top; l++ {
		s, cost, err := co.Draw(l)
		if err != nil {
			return Measurement{}, fmt.Errorf("auto: pilot cost probe at level %d: %w", l, err)
		}
		co.Release(s)
		probe = append(probe, LevelQueries{Level: l, Draws: 1, DrawOnly: true})
		c := float64(cost)
		if float64(minDraws)*(sum+2*c)+float64(co.samples) > float64(budget) {
			break
		}
		costs = append(costs, c)
		sum += c
	}
	if len(costs) < 3 {
		return Measurement{}, &Error{
			Measurement: fmt.Sprintf("a pilot budget of %d samples measures %d level(s) from level %d with %d draws each (the cost probe drew %d)",
				budget, len(costs), minLevel, minDraws, co.samples),
			Change: "measuring the rates needs three levels: give the run a larger sample budget (the pilot is a fixed share of it) or a larger pilot share (at most 5%)",
		}
	}
	lp := minLevel + len(costs) - 1
	// Above lowLevels levels, half of what is left measures the low levels
	// again with many more draws: they are cheap, and the bias rate is read
	// on their means, which a few draws lose in the noise.
	left := float64(budget) - float64(co.samples)
	deepShare := 1.0
	if lp > minLevel+lowLevels {
		deepShare = 0.5
	}
	perDraw := sum + costs[len(costs)-1]
	draws := int(left * deepShare / perDraw)
	draws = min(max(draws, minDraws), 1024)
	rep, err := mlmc.MeasureLevels(co, ops, mlmc.LevelsConfig{MinLevel: minLevel, MaxLevel: lp, Draws: draws, Seed: seed, Untimed: true, Brief: true})
	if err != nil {
		return Measurement{}, fmt.Errorf("auto: pilot: %w", err)
	}
	m := Measurement{Report: rep, Samples: co.samples, Queries: append(probe, reportQueries(rep)...)}
	if deepShare == 1 {
		return m, nil
	}
	lowTop := minLevel + lowLevels
	lowPer := costs[lowLevels]
	for _, c := range costs[:lowLevels+1] {
		lowPer += c
	}
	lowDraws := int((float64(budget) - float64(co.samples)) / lowPer)
	if lowDraws <= draws {
		return m, nil
	}
	low, err := mlmc.MeasureLevels(co, ops, mlmc.LevelsConfig{MinLevel: minLevel, MaxLevel: lowTop, Draws: min(lowDraws, 4096), Seed: seed ^ 0x10e, Untimed: true, Brief: true})
	if err != nil {
		return Measurement{}, fmt.Errorf("auto: pilot, low levels: %w", err)
	}
	m.Queries = append(m.Queries, reportQueries(low)...)
	copy(rep.Levels, low.Levels)
	m.LowDraws, m.Samples = low.Draws, co.samples
	return m, nil
}

// lowLevels is how many levels above the minimum the second, denser
// measurement covers.
const lowLevels = 3
