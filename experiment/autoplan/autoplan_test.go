package autoplan_test

import (
	"flag"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/experiment/autoplan"
	"github.com/simclr-go/simclr/mlmc"
)

// synthetic is mlmc.Synthetic (a = 1, b = 2, c = 1) as the harness's
// problem: F(x) = |x - X*|^2/2, F* = 0.
func synthetic() *experiment.Problem {
	ref := mlmc.NewSynthetic(4, 1, 2, 1, 0)
	return &experiment.Problem{
		Name: "synthetic", X0: make([]float64, 4), EveryIterate: true,
		NewOracle: func(seed uint64) (experiment.Instance, error) {
			o := mlmc.NewSynthetic(4, 1, 2, 1, seed)
			return experiment.Instance{Oracle: o, At: func(x, prev []float64) { o.X, o.XPrev = x, prev }}, nil
		},
		Objective: experiment.Objective{Value: func(x []float64) (float64, float64) {
			f := 0.0
			for i := range x {
				f += (x[i] - ref.XStar[i]) * (x[i] - ref.XStar[i]) / 2
			}
			return f, 0
		}},
		FStar: experiment.Optimum{Value: 0},
	}
}

// The harness runs auto through its Planner: every trial plans at x0 and
// re-plans once, the pilot's cost is in the trial's total (the first plan
// spends at most 3% of the budget, the second 2%), and the trials stay
// below the 0.1% gap within the budget.
func TestHarnessRunsAuto(t *testing.T) {
	const gap, budget = 1e-3, 1_000_000
	pr := experiment.Protocol{Budget: budget, Trials: 4, Targets: []float64{gap}}
	res, err := experiment.Report(synthetic(), pr, experiment.Fixed("auto", experiment.Method{Auto: autoplan.New(gap)}))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Summary.Methods[0]
	if m.Name != "auto" || len(m.Plans) != pr.Trials {
		t.Fatalf("method %s with %d trials' plans, want auto with %d", m.Name, len(m.Plans), pr.Trials)
	}
	for i, plans := range m.Plans {
		if len(plans) != 2 || plans[0].ReplanAt <= 0 || plans[0].Spent <= 0 || plans[0].Spent > budget*3/100 ||
			plans[1].Spent <= 0 || plans[1].Spent > budget*2/100 || plans[0].Method.Kind.Method != mlmc.RTMLMC || len(plans[0].Reasons) == 0 {
			t.Errorf("trial %d: plans %+v", i, plans)
		}
	}
	if s := m.StaysBelow[0]; s.Reached != pr.Trials || s.Median == nil || !(*s.Median < budget) || math.IsNaN(*s.Median) {
		t.Errorf("stays below %g: %d of %d trials, median %v", gap, s.Reached, pr.Trials, s.Median)
	}
}

// TestFlags: --method auto plans for --gap or the command's default gaps;
// a gap outside (0, 1), a gap without auto and another method are one
// error naming the flag, which points at --methods where the command has
// it.
func TestFlags(t *testing.T) {
	defaults := []float64{0.01, 0.001}
	for _, tc := range []struct {
		args    []string
		methods bool // the command has --methods
		want    []float64
		err     string
	}{
		{nil, false, nil, ""},
		{[]string{"--method", "auto"}, false, defaults, ""},
		{[]string{"--method", "auto", "--gap", "0.003"}, false, []float64{0.003}, ""},
		{[]string{"--method", "auto", "--gap", "1.5"}, false, nil, "--gap 1.5: give a relative gap in (0, 1), e.g. 0.001"},
		{[]string{"--gap", "0.01"}, false, nil, "only --method auto plans for a gap"},
		{[]string{"--method", "grid"}, false, nil, `--method "grid": the only method is auto`},
		{[]string{"--method", "grid"}, true, nil, "chosen with --methods"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		if tc.methods {
			fs.String("methods", "", "")
		}
		f := autoplan.AddFlags(fs, "", "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := f.Gaps(defaults)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%v: gaps %v (error %v), want %v", tc.args, got, err, tc.want)
		}
	}
}
