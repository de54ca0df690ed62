package experiment

import (
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestChoose: per family, the smallest score overall and the smallest
// median cost per target by each rule; a tie in cost goes to the smaller
// score, a full tie to the earlier setting; a missing cost (not reached)
// loses to any number; families come in the order they first appear.
func TestChoose(t *testing.T) {
	num := func(v float64) *float64 { return &v }
	at := func(step float64) Method { m := lsgd0; m.Step = step; return m }
	rt := Method{Kind: mlmc.Kind{Method: mlmc.RTMLMC}, Step: 0.1}
	rows := []Scored{
		{Setting: at(1), Score: num(3), StaysBelow: []*float64{num(100), nil}, FirstTouch: []*float64{num(50), num(70)}},
		{Setting: rt, Score: nil, StaysBelow: []*float64{nil, nil}},
		{Setting: at(2), Score: num(2), StaysBelow: []*float64{num(100), num(900)}, FirstTouch: []*float64{num(50), nil}},
		{Setting: at(3), Score: num(2), StaysBelow: []*float64{num(200), nil}, FirstTouch: []*float64{num(40), nil}},
	}
	got := Choose(rows, 2)
	if len(got) != 2 || got[0].Name != "L-SGD" || got[1].Name != "RT-MLMC" {
		t.Fatalf("choices %+v, want L-SGD then RT-MLMC", got)
	}
	c := got[0]
	for _, tc := range []struct {
		what string
		m    Method
		step float64
	}{
		{"best (score 2 tied: the earlier)", c.Best, 2},
		{"stays below, target 0 (cost 100 tied: the smaller score)", c.Stays[0], 2},
		{"stays below, target 1 (the only one reached)", c.Stays[1], 2},
		{"first touch, target 0", c.First[0], 3},
		{"first touch, target 1", c.First[1], 1},
	} {
		if tc.m.Step != tc.step {
			t.Errorf("%s: step %g, want %g", tc.what, tc.m.Step, tc.step)
		}
	}
	if r := got[1]; r.Best.Key() != rt.Key() || len(r.Stays) != 2 || len(r.First) != 2 || r.First[1].Key() != rt.Key() {
		t.Errorf("RT-MLMC's choices %+v, want its one setting everywhere", r)
	}
}
