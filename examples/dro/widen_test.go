package main

import (
	"strings"
	"testing"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// TestWidened: housing's grid gains RR-MLMC's steps 3e-6 and 1e-6 and VR
// RT-MLMC's levels 13 and 14 (every step and D1) and D1 300 and 1000
// (every level and step, the added ones too), and at 2 x 10^6 samples
// RT-MLMC's steps 3e-6 and 1e-6 (every level); the VR methods whose D1
// sat at 100 gain D1 300 and 1000 on their data set, and 3000 and 10000
// where it then sat at 1000 (on mg, VR L-SGD and VR V-MLMC at L 0-2 only; bike's VR RR-MLMC to 1000). None is a setting
// grid already has; another data set, budget or method gains nothing.
func TestWidened(t *testing.T) {
	rr, vrrt := mlmc.Kind{Method: mlmc.RRMLMC}, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}
	vrls, vrv, vrru := mlmc.Kind{Method: mlmc.LSGD, VR: true}, mlmc.Kind{Method: mlmc.VMLMC, VR: true}, mlmc.Kind{Method: mlmc.RUMLMC, VR: true}
	nL, nS, nD, nW := len(Levels), len(Steps), len(VRFresh), len(widerD1)
	for _, tc := range []struct {
		name    string
		budget  int64
		ks      []mlmc.Kind
		want    int
		minStep float64
		maxL    int
		maxD1   int
	}{
		{"housing", 400_000, []mlmc.Kind{rr}, 2, 1e-6, 0, 0},
		{"housing", 400_000, []mlmc.Kind{vrrt}, 2*nS*(nD+nW) + nL*nS*nW, 1e-5, 14, 1000},
		{"housing", 400_000, []mlmc.Kind{vrru}, nS * nW, 1e-5, 0, 1000},
		{"housing", 400_000, []mlmc.Kind{{Method: mlmc.LSGD}, {Method: mlmc.RTMLMC}, vrls, vrv}, 0, 0, 0, 0},
		{"housing", 2_000_000, []mlmc.Kind{{Method: mlmc.LSGD}, {Method: mlmc.RTMLMC}}, 2 * nL, 1e-6, 12, 0},
		{"mpg", 400_000, []mlmc.Kind{rr, vrrt}, nL * nS * nW, 1e-5, 12, 1000},
		{"mpg", 400_000, []mlmc.Kind{vrv}, 0, 0, 0, 0},
		{"mpg", 400_000, []mlmc.Kind{vrru}, nS * len(widestD1), 1e-5, 0, 10000},
		{"mg", 400_000, []mlmc.Kind{vrv}, nL*nS*nW + len(lowLevels)*nS*2, 1e-5, 12, 10000},
		{"mg", 400_000, []mlmc.Kind{vrrt}, nL * nS * (nW + 2), 1e-5, 12, 10000},
		{"mg", 400_000, []mlmc.Kind{vrru}, nS * (nW + 2), 1e-5, 0, 10000},
		{"gas", 400_000, []mlmc.Kind{vrls, vrrt}, 0, 0, 0, 0},
		{"bike", 40_000, []mlmc.Kind{vrls, vrrt}, 0, 0, 0, 0},
		{"bike", 40_000, []mlmc.Kind{{Method: mlmc.RRMLMC, VR: true}}, nS * nW, 1e-5, 0, 1000},
	} {
		tk := &task{ds: dataset{Name: tc.name}, budget: tc.budget, grid: droGrid()}
		got := tk.widened(tc.ks)
		for _, m := range got {
			if m.Config.D1 > 1000 && !m.Kind.Method.DrawsLevels() && m.Config.MaxLevel > lowLevels[len(lowLevels)-1] {
				t.Errorf("%s: %s has D1 above 1000 at a level above %v", tc.name, m, lowLevels)
			}
		}
		if len(got) != tc.want {
			t.Errorf("%s %v: %d added settings, want %d", tc.name, tc.ks, len(got), tc.want)
			continue
		}
		seen := map[string]bool{}
		for _, m := range tk.grid.Methods(tc.ks) {
			seen[m.String()] = true
		}
		minStep, maxL, maxD1 := 1.0, 0, 0
		for _, m := range got {
			if seen[m.String()] {
				t.Errorf("%s: %s is already in the grid", tc.name, m)
			}
			seen[m.String()] = true
			minStep, maxL, maxD1 = min(minStep, m.Step), max(maxL, m.Config.MaxLevel), max(maxD1, m.Config.D1)
		}
		if tc.want > 0 && (minStep != tc.minStep || maxL != tc.maxL || maxD1 != tc.maxD1) {
			t.Errorf("%s %v: smallest step %g, largest L %d, largest D1 %d; want %g, %d, %d", tc.name, tc.ks, minStep, maxL, maxD1, tc.minStep, tc.maxL, tc.maxD1)
		}
	}
}

// TestRegion: --grid-levels and --grid-steps keep the grid's settings in
// the region (RU- and RR-MLMC, without a top level, by their step only),
// and a region that leaves a method nothing, or a malformed one, is one
// error naming the flag.
func TestRegion(t *testing.T) {
	lsgd, ru := mlmc.Kind{Method: mlmc.LSGD}, mlmc.Kind{Method: mlmc.RUMLMC}
	for _, tc := range []struct {
		levels, steps string
		want          int
		err           string
	}{
		{"3..5", "0.01,0.001", 3*2 + 2, ""},
		{"", "1e-4", 13 + 1, ""},
		{"2..2", "", 8 + 8, ""},
		{"3..5", "0.02", 0, "0.02 is not a step of this grid"},
		{"13..13", "", 0, "leave L-SGD no setting"},
		{"5..3", "", 0, "--grid-levels"},
		{"3-5", "", 0, "--grid-levels"},
		{"", "0.1,x", 0, "--grid-steps"},
		{"", "-1", 0, "--grid-steps"},
	} {
		o := options{kinds: []mlmc.Kind{lsgd, ru}}
		err := o.parseRegion(tc.levels, tc.steps)
		var got []experiment.Method
		if err == nil {
			got, err = o.region(droGrid().Methods(o.kinds))
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %q: error %v, want one naming %q", tc.levels, tc.steps, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != tc.want {
			t.Errorf("%q %q: %d settings (error %v), want %d", tc.levels, tc.steps, len(got), err, tc.want)
		}
	}
}
