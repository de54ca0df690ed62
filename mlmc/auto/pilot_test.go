package auto

import (
	"math"
	"strings"
	"testing"
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
// floor itself is TestPilotBudget's).
func TestLaterPilotsBelowTheFirst(t *testing.T) {
	const budget = 4_000_000
	res, err := Run(synthetic(3, 1, 2, 1, nil), Settings{Target: Target{Gap: 1e-3, Budget: budget}, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	st := res.Record.Stages
	if len(st) < 2 {
		t.Fatalf("%d stages, want at least 2", len(st))
	}
	first := int64(0.001 * budget) // the first pilot's share, of which the first stage spent st[0].Pilot
	smaller := 0
	for _, s := range st[1:] {
		if s.Pilot == 0 {
			continue // no pilot: the last plan ran on
		}
		if s.Pilot < first/4 {
			smaller++
		}
	}
	if smaller == 0 {
		// A later stage whose method is unchanged measures without a step
		// search, on half its pilot: with a floor of the first pilot's
		// size that half is never below half the first's.
		t.Errorf("no later stage's pilot is below a quarter of the first's %d: %v", first, pilots(st[1:]))
	}
	t.Logf("pilots: first %d, later %v", first, pilots(st[1:]))
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
		t.Errorf("the probe measured on %d samples, want half of a sixteenth of the first pilot's %d, doubled while it measures too few levels (%d to %d)", got, first, first/64, first/4)
	}
	// The probe starts from what three levels cost at the fewest draws, as
	// the glance's costs put it, so it is not tried on too few samples
	// first.
	for _, n := range res.Record.Stages[0].Notes {
		if strings.Contains(n, "measured again with twice the samples") {
			t.Errorf("the probe was measured again: %s", n)
		}
	}
	t.Logf("pilots %v, first %d", pilots, first)
}
