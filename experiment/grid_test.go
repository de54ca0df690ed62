package experiment

import (
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

func TestGridMethods(t *testing.T) {
	g := Grid{Levels: []int{0, 3}, Steps: []float64{0.1, 0.01}, Decays: []float64{0, 50}, D1: []int{1, 10}, B: 2}
	for _, tc := range []struct {
		kind mlmc.Kind
		want int // L x step x decay (x D1)
	}{
		{mlmc.Kind{Method: mlmc.LSGD}, 2 * 2 * 2},
		{mlmc.Kind{Method: mlmc.RTMLMC}, 2 * 2 * 2},
		{mlmc.Kind{Method: mlmc.RUMLMC}, 1 * 2 * 2}, // no top level
		{mlmc.Kind{Method: mlmc.RTMLMC, VR: true}, 2 * 2 * 2 * 2},
	} {
		ms := g.Methods([]mlmc.Kind{tc.kind})
		if len(ms) != tc.want {
			t.Errorf("%v: %d settings, want %d", tc.kind, len(ms), tc.want)
		}
		seen := map[string]bool{}
		for _, m := range ms {
			if m.Kind != tc.kind || seen[m.String()] {
				t.Errorf("%v: setting %s of another kind or repeated", tc.kind, m)
			}
			seen[m.String()] = true
			if draws := tc.kind.Method.DrawsLevels(); draws != (m.Config.B == 2 && m.Config.C == 1) {
				t.Errorf("%s: rates b = %g, c = %g", m, m.Config.B, m.Config.C)
			}
			if (m.Config.D1 != 0) != tc.kind.VR {
				t.Errorf("%s: D1 = %d", m, m.Config.D1)
			}
		}
	}
	if ks := Kinds(); len(ks) != 2*len(mlmc.Methods()) || ks[0].VR || !ks[len(ks)-1].VR {
		t.Errorf("Kinds() = %v: every method, then every VR method", ks)
	}
}

// TestParseKinds: a --methods list names estimators as the tables do or as
// package mlmc does, any case, spaces around the commas; empty and "all"
// are every kind; an unknown name is one error listing the names.
func TestParseKinds(t *testing.T) {
	rt, vrrt := mlmc.Kind{Method: mlmc.RTMLMC}, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}
	for _, tc := range []struct {
		list string
		want []mlmc.Kind
		err  string
	}{
		{"", Kinds(), ""},
		{"all", Kinds(), ""},
		{"RT-MLMC, vr-rtmlmc", []mlmc.Kind{rt, vrrt}, ""},
		{"rtmlmc,VR RT-MLMC", []mlmc.Kind{rt, vrrt}, ""},
		{"vr rt-mlmc", []mlmc.Kind{vrrt}, ""},
		{"L-SGD,XX", nil, `unknown method "XX": use some of L-SGD,V-MLMC,`},
	} {
		got, err := ParseKinds(tc.list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.list, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v (error %v), want %v", tc.list, got, err, tc.want)
		}
	}
}
