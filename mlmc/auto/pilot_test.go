package auto

import (
	"math"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestPilotBudget: the first stage's pilot is FirstPilot of the budget; a
// later one is PilotShare of its predicted cost (the last stage's samples
// times StageRatio), never below a sixteenth of the first's
// (docs/definitions.md, section 11).
func TestPilotBudget(t *testing.T) {
	s, err := Settings{Target: Target{Gap: 1e-3, Budget: 1 << 22}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	first := int64(4194) // a thousandth of 2^22
	for _, tc := range []struct {
		name      string
		k         int
		lastStage int64
		want      int64
	}{
		{"the first stage", 0, 0, first},
		{"a later stage before any stage ended", 2, 0, first},
		{"a cheap last stage: the floor", 1, 100, first / 16},
		{"a last stage whose tenth is between the floor and the first pilot", 1, 5_000, int64(0.1 * 5_000 * math.Sqrt(10))},
		{"a costly last stage", 3, 1_000_000, int64(0.1 * 1_000_000 * math.Sqrt(10))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{s: s, lastStage: tc.lastStage}
			if got := r.pilotBudget(tc.k); got != tc.want {
				t.Errorf("pilotBudget(%d) after a stage of %d samples = %d, want %d", tc.k, tc.lastStage, got, tc.want)
			}
		})
	}
}

// TestLaterPilotsBelowTheFirst: on a problem whose stages cost little, a
// later stage measures with a pilot well below the first stage's (the
// floor itself is TestPilotBudget's). With a floor of the first pilot's
// size, a later stage measures the same levels with as many draws as the
// first; with the floor at a sixteenth, it measures fewer levels where
// the last stage cost little. auto is deterministic given its seed: of
// the runs on six seeds, at least half have a later stage whose pilot is
// below a quarter of the first's (with the first pilot's floor, none
// does).
func TestLaterPilotsBelowTheFirst(t *testing.T) {
	const budget, runs = 4_000_000, 6
	first := int64(0.001 * budget) // the first pilot: FirstPilot of the budget
	smaller := 0
	for seed := uint64(1); seed <= runs; seed++ {
		res, err := Run(synthetic(3, 1, 2, 1, nil), Settings{Target: Target{Gap: 1e-3, Budget: budget}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		st := res.Record.Stages
		if len(st) < 2 {
			t.Fatalf("seed %d: %d stages, want at least 2", seed, len(st))
		}
		for _, s := range st[1:] {
			// A stage without a pilot (skipped, or the last plan ran on)
			// has Pilot 0.
			if s.Pilot > 0 && s.Pilot < first/4 {
				smaller++
				break
			}
		}
		t.Logf("seed %d: pilots: first %d, later %v", seed, first, pilots(st[1:]))
	}
	if 2*smaller < runs {
		t.Errorf("%d of %d runs have a later stage's pilot below a quarter of the first's %d", smaller, runs, first)
	}
}

func pilots(st []*Stage) []int64 {
	var ps []int64
	for _, s := range st {
		ps = append(ps, s.Pilot)
	}
	return ps
}

// TestProbeMeasuresLikeALaterStage: where every H^l vanishes at x0, the
// probe that measures the levels again after the step search takes a
// sixteenth of the first pilot, at least what three levels cost at the
// fewest draws (half of it measuring), not the first pilot.
func TestProbeMeasuresLikeALaterStage(t *testing.T) {
	const budget = 2_000_000
	res, err := Run(vanishingProblem(), Settings{Target: Target{Gap: 0.01, Budget: budget}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	first := int64(0.001 * budget)
	var pilots []int64
	for _, sg := range res.Segments {
		if sg.Pilot != nil {
			pilots = append(pilots, sg.Pilot.Samples)
		}
	}
	// The glance at x0, then the probe's measurement.
	if len(pilots) < 2 {
		t.Fatalf("pilot segments %v: want the glance and a probe's measurement", pilots)
	}
	// Half of what three levels cost at the fewest draws, which is more
	// than a sixteenth of the first pilot here; with the whole pilot it
	// took 815.
	if got := pilots[1]; got > first/4 || got < first/64 {
		t.Errorf("the probe measured on %d samples, want half of a share between a sixteenth of the first pilot's %d and what three levels cost at the fewest draws (%d to %d)", got, first, first/64, first/4)
	}
	// The probe starts from what three levels cost at the fewest draws, as
	// the glance's costs put it, so it is not tried on too few samples
	// first (at a degenerate x0 the stage's only other measurement is the
	// glance, which is never doubled).
	for _, n := range res.Record.Stages[0].Notes {
		if strings.Contains(n, "measured again with twice the samples") {
			t.Errorf("the probe was measured again: %s", n)
		}
	}
	t.Logf("pilots %v, first %d", pilots, first)
}

// TestProbeShare: a probe's pilot is a sixteenth of the stage's, at least
// what three levels cost at the fewest draws at the last usable
// measurement's costs (that floor at most the stage's pilot), and at least
// the share the last probe ended with.
func TestProbeShare(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	// report is a measurement whose levels cost cs samples a query.
	report := func(cs ...float64) *Measurement {
		rep := &mlmc.LevelsReport{}
		for _, c := range cs {
			rep.Levels = append(rep.Levels, mlmc.LevelStat{Images: c})
		}
		return &Measurement{Report: rep}
	}
	// 16 draws of levels costing 1, 2 and 4 and of h at the third, and one
	// cost-probe query of each: 16 (1 + 2 + 2 x 4) + 7 = 183, twice over.
	const least = 2 * 183
	for _, tc := range []struct {
		name         string
		segs         []Segment
		budget, last int64
		want         int64
	}{
		{"no measurement: a sixteenth", nil, 4000, 0, 250},
		{"a glance's costs: the three-level floor", []Segment{{Pilot: report(1, 2, 4)}}, 4000, 0, least},
		{"a sixteenth above the floor", []Segment{{Pilot: report(1, 2, 4)}}, 16000, 0, 1000},
		{"the floor capped at the stage's pilot", []Segment{{Pilot: report(1, 2, 4)}}, 300, 0, 300},
		{"the last probe's doubled share", []Segment{{Pilot: report(1, 2, 4)}}, 4000, 1464, 1464},
		{"the last measurement has two levels: the one before it", []Segment{{Pilot: report(1, 2, 4)}, {Pilot: report(1, 2)}}, 4000, 0, least},
		{"a step run between them", []Segment{{Pilot: report(1, 2, 4)}, {Iterations: 10}}, 4000, 0, least},
		{"costs not finite: the one before it", []Segment{{Pilot: report(1, 2, 4)}, {Pilot: report(1, nan, 4)}, {Pilot: report(1, inf, 4)}}, 4000, 0, least},
		{"no usable costs at all", []Segment{{Pilot: report(0, 0, 0)}, {Pilot: &Measurement{}}}, 4000, 0, 250},
		{"costs beyond the budget: capped, no overflow", []Segment{{Pilot: report(1, 2, 1e300)}}, 4000, 0, 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{s: Settings{MinDraws: 16, Target: Target{Budget: 1 << 22}}, segments: tc.segs}
			if got := r.probeShare(tc.budget, tc.last); got != tc.want {
				t.Errorf("probeShare(%d, %d) = %d, want %d (leastPilot %d)", tc.budget, tc.last, got, tc.want, r.leastPilot())
			}
		})
	}
}
