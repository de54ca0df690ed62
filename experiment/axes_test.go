package experiment

import (
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestAxes: each axis moves its setting one value along its ladder
// (L by one, the step by a factor of 2, t0 and D1 to the next rung, or by
// a factor of 3 off the ladder) and stops at its cap with a note.
func TestAxes(t *testing.T) {
	lim := AxisLimits{MaxLevel: 14, MinStep: 1.0 / 256, MaxStep: 64}
	axis := map[string]Axis{}
	for _, a := range Axes(lim) {
		axis[a.Name] = a
	}
	lsgd := Method{Kind: mlmc.Kind{Method: mlmc.LSGD}, Config: mlmc.Config{MaxLevel: 8}, Step: 1, Decay: 300}
	vr := lsgd
	vr.Kind.VR, vr.Config.D1 = true, 10
	with := func(m Method, f func(*Method)) Method { f(&m); return m }
	for _, tc := range []struct {
		axis string
		m    Method
		dir  int
		want string // the moved setting, or the cap's words
	}{
		{"L", lsgd, 1, "L-SGD L=9 step=1 t0=300"},
		{"L", lsgd, -1, "L-SGD L=7 step=1 t0=300"},
		{"L", with(lsgd, func(m *Method) { m.Config.MaxLevel = lim.MaxLevel }), 1, "cap L = 14"},
		{"step", lsgd, 1, "L-SGD L=8 step=2 t0=300"},
		{"step", lsgd, -1, "L-SGD L=8 step=0.5 t0=300"},
		{"step", with(lsgd, func(m *Method) { m.Step = lim.MaxStep }), 1, "cap step in [0.00390625, 64]"},
		{"step", with(lsgd, func(m *Method) { m.Step = lim.MinStep }), -1, "cap step in"},
		{"decay t0", lsgd, 1, "L-SGD L=8 step=1 t0=1000"},
		{"decay t0", lsgd, -1, "L-SGD L=8 step=1 t0=100"},
		{"decay t0", with(lsgd, func(m *Method) { m.Decay = 20 }), 1, "L-SGD L=8 step=1 t0=60"},
		{"decay t0", with(lsgd, func(m *Method) { m.Decay = 30000 }), 1, "cap t0 in [1, 30000]"},
		{"decay t0", with(lsgd, func(m *Method) { m.Decay = 1 }), -1, "cap t0 in [1, 30000]"},
		{"D1", vr, 1, "VR L-SGD L=8 step=1 t0=300 D1=100"},
		{"D1", vr, -1, "VR L-SGD L=8 step=1 t0=300 D1=1"},
		{"D1", with(vr, func(m *Method) { m.Config.D1 = 1000 }), 1, "cap D1 = 1000"},
	} {
		m, why := axis[tc.axis].Next(tc.m, tc.dir)
		got := why
		if why == "" {
			got = m.String()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s of %s, direction %d: %q, want %q", tc.axis, tc.m, tc.dir, got, tc.want)
		}
	}
	// Which settings have an axis: L not for the unbounded families, t0
	// only for a decaying step, D1 only for VR.
	ru := Method{Kind: mlmc.Kind{Method: mlmc.RUMLMC}, Step: 1}
	for _, tc := range []struct {
		axis string
		m    Method
		want bool
	}{
		{"L", lsgd, true}, {"L", ru, false}, {"decay t0", lsgd, true}, {"decay t0", ru, false}, {"D1", vr, true}, {"D1", lsgd, false},
	} {
		if got := axis[tc.axis].Applies(tc.m); got != tc.want {
			t.Errorf("%s applies to %s: %v, want %v", tc.axis, tc.m, got, tc.want)
		}
	}
}
