package experiment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
)

// Kinds are every estimator of package mlmc's table (the paper's five),
// then their VR versions: the families a full comparison runs, in the
// order of its tables.
func Kinds() []mlmc.Kind {
	var ks []mlmc.Kind
	for _, vr := range []bool{false, true} {
		for _, m := range mlmc.Methods() {
			ks = append(ks, mlmc.Kind{Method: m, VR: vr})
		}
	}
	return ks
}

// ParseKinds reads a comma-separated list of estimators (a --methods
// flag), each named as the tables name it ("VR RT-MLMC") or as package
// mlmc does ("vr-rtmlmc"); an empty list or "all" is every kind (Kinds).
func ParseKinds(list string) ([]mlmc.Kind, error) {
	all := Kinds()
	if list == "" || list == "all" {
		return all, nil
	}
	var out []mlmc.Kind
	for _, name := range strings.Split(list, ",") {
		k, err := mlmc.ParseKind(name)
		if err != nil {
			i := slices.IndexFunc(all, func(k mlmc.Kind) bool { return strings.EqualFold(Family{Kind: k}.Name(), strings.TrimSpace(name)) })
			if i < 0 {
				var names []string
				for _, k := range all {
					names = append(names, Family{Kind: k}.Name())
				}
				return nil, fmt.Errorf("unknown method %q: use some of %s", name, strings.Join(names, ","))
			}
			k = all[i]
		}
		out = append(out, k)
	}
	return out, nil
}

// Grid is a tuning grid: every top level L, step size, schedule and, for
// the VR estimators, D1 (the draws averaged into the fresh estimate).
type Grid struct {
	Levels []int
	Steps  []float64
	// Decays are the t0 of the schedule step/(1 + t/t0), 0 for a constant
	// step; none: constant only.
	Decays []float64
	D1     []int
	// B is the variance rate b of the randomized level laws (RT, RU, RR):
	// q_l proportional to 2^(-(b+c)l/2), with c = 1.
	B float64
}

// Method is estimator k with top level l, step, decay and (VR) D1, its
// levels from 0; V-MLMC takes mlmc's default n_l = 2^(L-l).
func (g Grid) Method(k mlmc.Kind, l int, step, decay float64, d1 int) Method {
	m := Method{Kind: k, Step: step, Decay: decay, Config: mlmc.Config{MinLevel: 0, MaxLevel: max(l, 0)}}
	if k.VR {
		m.Config.D1 = d1
	}
	if k.Method.DrawsLevels() {
		m.Config.B, m.Config.C = g.B, 1
	}
	return m
}

// Methods is every setting of the grid for the estimators ks, by L, step,
// decay and D1 in turn; RU-MLMC and RR-MLMC, which have no top level,
// once for all L.
func (g Grid) Methods(ks []mlmc.Kind) []Method {
	decays := g.Decays
	if len(decays) == 0 {
		decays = []float64{0}
	}
	var out []Method
	for _, k := range ks {
		levels, d1s := g.Levels, []int{0}
		if k.Method.Unbounded() {
			levels = []int{0}
		}
		if k.VR {
			d1s = g.D1
		}
		for _, l := range levels {
			for _, st := range g.Steps {
				for _, dc := range decays {
					for _, d1 := range d1s {
						out = append(out, g.Method(k, l, st, dc, d1))
					}
				}
			}
		}
	}
	return out
}
