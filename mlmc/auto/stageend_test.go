package auto

import (
	"math"
	"strings"
	"testing"
)

// TestStageEndsWithoutSafetyFactor: a stage before the last claims nothing
// to the user, so it ends where its gap estimate without the safety factor
// is at its target, its record keeping the estimate with the factor (above
// the target where the factor alone held it there); the last stage claims
// only on the estimate with the factor. On mlmc.Synthetic (F quadratic,
// F* = 0 exactly) a run for 0.1% passes three stages before its last; with
// the factor on every stage's end, none of them ends with its recorded
// estimate above its target.
func TestStageEndsWithoutSafetyFactor(t *testing.T) {
	p := synthetic(4, 1, 2, 1, nil)
	const gap = 1e-3
	early := 0 // stages before the last ended by their estimate without the factor
	for _, seed := range []uint64{1, 2, 3} {
		res, err := Run(p, Settings{Target: Target{Gap: gap, Budget: 4_000_000}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		stages := res.Record.Stages
		for i, st := range stages {
			g := float64(st.GapEstimate)
			byFactorless := strings.Contains(st.Why, "without its safety factor")
			last := i == len(stages)-1 && st.Target == gap
			if last && byFactorless {
				t.Errorf("seed %d: the last stage ended on the estimate without the safety factor: %s", seed, st.Why)
			}
			if byFactorless && g > st.Target {
				early++
			}
		}
		if !res.Record.Claimed() {
			continue
		}
		if g := float64(res.Record.GapEstimate); !(g <= gap) {
			t.Errorf("seed %d: claimed the target %g with the gap estimate %g above it", seed, gap, g)
		}
		f, _ := p.Objective(res.X)
		f0, _ := p.Objective(p.X0)
		if rel := f / f0; rel > gap || math.IsNaN(rel) {
			t.Errorf("seed %d: claimed the target %g, the true relative gap is %g", seed, gap, rel)
		}
	}
	if early == 0 {
		t.Error("no stage before the last ended with its estimate (with the safety factor) above its target: every stage waited for the factor's margin")
	}
}
