package experiment

import (
	"fmt"
	"math"
	"slices"
)

// AxisLimits bound the widening axes of Axes: a top level whose iteration
// costs 2^(L+1) samples leaves at most budget/2^(L+1) iterations, so L
// stops at MaxLevel; steps stay within [MinStep, MaxStep].
type AxisLimits struct {
	MaxLevel         int
	MinStep, MaxStep float64
}

// decayLadder and d1Ladder are the rungs the t0 and D1 axes move along.
var (
	decayLadder = []float64{1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000}
	d1Ladder    = []int{1, 10, 100, 1000}
)

// ladderStep is the value next to v on a ladder in direction dir (+1 up,
// -1 down), or multiplied or divided by 3 off the ladder; ok is false past
// the ladder's end.
func ladderStep(ladder []float64, v float64, dir int) (float64, bool) {
	i := slices.Index(ladder, v)
	if i < 0 {
		if dir > 0 {
			return v * 3, v*3 <= ladder[len(ladder)-1]
		}
		return v / 3, v/3 >= ladder[0]
	}
	j := i + dir
	if j < 0 || j >= len(ladder) {
		return 0, false
	}
	return ladder[j], true
}

// Axes are the settings a widening (TuneWidened) moves, each with the
// value one beyond an edge: the top level L by one (not for the unbounded
// families), the step by a factor of 2, t0 of a decaying schedule along
// 1, 3, 10, ..., 30000 (a constant step is its own schedule), and the VR
// estimators' D1 along 1, 10, 100, 1000; each stops at its cap with a
// note.
func Axes(lim AxisLimits) []Axis {
	return []Axis{
		{
			Name:    "L",
			Applies: func(m Method) bool { return !m.Family().Unbounded() },
			Value:   func(m Method) float64 { return float64(m.Config.MaxLevel) },
			End:     func(v float64, m Method) bool { return v == float64(m.Config.MinLevel) },
			Next: func(m Method, dir int) (Method, string) {
				l := m.Config.MaxLevel + dir
				if l > lim.MaxLevel {
					return m, fmt.Sprintf("cap L = %d", lim.MaxLevel)
				}
				m.Config.MaxLevel = l
				return m, ""
			},
		},
		{
			Name:  "step",
			Value: func(m Method) float64 { return m.Step },
			Next: func(m Method, dir int) (Method, string) {
				s := m.Step * math.Pow(2, float64(dir))
				if s < lim.MinStep || s > lim.MaxStep {
					return m, fmt.Sprintf("cap step in [%g, %g]", lim.MinStep, lim.MaxStep)
				}
				m.Step = s
				return m, ""
			},
		},
		{
			Name:    "decay t0",
			Applies: func(m Method) bool { return m.Decay > 0 },
			Value:   func(m Method) float64 { return m.Decay },
			Next: func(m Method, dir int) (Method, string) {
				d, ok := ladderStep(decayLadder, m.Decay, dir)
				if !ok {
					return m, fmt.Sprintf("cap t0 in [%g, %g]", decayLadder[0], decayLadder[len(decayLadder)-1])
				}
				m.Decay = d
				return m, ""
			},
		},
		{
			Name:    "D1",
			Applies: func(m Method) bool { return m.Kind.VR },
			Value:   func(m Method) float64 { return float64(m.Config.D1) },
			End:     func(v float64, _ Method) bool { return v == 1 },
			Next: func(m Method, dir int) (Method, string) {
				i := slices.Index(d1Ladder, m.Config.D1) + dir
				if i < 0 {
					return m, fmt.Sprintf("end of the D1 ladder %v", d1Ladder)
				}
				if i >= len(d1Ladder) {
					return m, fmt.Sprintf("cap D1 = %d", d1Ladder[len(d1Ladder)-1])
				}
				m.Config.D1 = d1Ladder[i]
				return m, ""
			},
		},
	}
}
