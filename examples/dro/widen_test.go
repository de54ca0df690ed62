package main

import (
	"strings"
	"testing"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// TestWidened: housing's grid gains RR-MLMC's steps 3e-6 and 1e-6 and VR
// RT-MLMC's levels 13 and 14 (every step and D1), and at 2 x 10^6
// samples RT-MLMC's steps 3e-6 and 1e-6 (every level), none of the
// settings grid already has; another data set, budget or method gains
// nothing.
func TestWidened(t *testing.T) {
	rr, vrrt := mlmc.Kind{Method: mlmc.RRMLMC}, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}
	for _, tc := range []struct {
		name    string
		budget  int64
		ks      []mlmc.Kind
		want    int
		minStep float64
		maxL    int
	}{
		{"housing", 400_000, []mlmc.Kind{rr}, 2, 1e-6, 0},
		{"housing", 400_000, []mlmc.Kind{vrrt}, 2 * len(droGrid().Steps) * len(droGrid().D1), 1e-5, 14},
		{"housing", 400_000, []mlmc.Kind{{Method: mlmc.LSGD}, {Method: mlmc.RTMLMC}}, 0, 0, 0},
		{"housing", 2_000_000, []mlmc.Kind{{Method: mlmc.LSGD}, {Method: mlmc.RTMLMC}}, 2 * len(droGrid().Levels), 1e-6, 12},
		{"mpg", 400_000, []mlmc.Kind{rr, vrrt}, 0, 0, 0},
	} {
		tk := &task{ds: dataset{Name: tc.name}, budget: tc.budget, grid: droGrid()}
		got := tk.widened(tc.ks)
		if len(got) != tc.want {
			t.Errorf("%s %v: %d added settings, want %d", tc.name, tc.ks, len(got), tc.want)
			continue
		}
		seen := map[string]bool{}
		for _, m := range tk.grid.Methods(tc.ks) {
			seen[m.String()] = true
		}
		minStep, maxL := 1.0, 0
		for _, m := range got {
			if seen[m.String()] {
				t.Errorf("%s: %s is already in the grid", tc.name, m)
			}
			seen[m.String()] = true
			minStep, maxL = min(minStep, m.Step), max(maxL, m.Config.MaxLevel)
		}
		if tc.want > 0 && (minStep != tc.minStep || maxL != tc.maxL) {
			t.Errorf("%s %v: smallest step %g, largest L %d; want %g, %d", tc.name, tc.ks, minStep, maxL, tc.minStep, tc.maxL)
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
