package main

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// Bad flags get one error naming the flag.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--instance", "gaussian-4"}, "--instance"},
		{[]string{"--loss", "cvar"}, "--loss"},
		{[]string{"--grid", "huge"}, "--grid"},
		{[]string{"--methods", "lsgd,sgd"}, "--methods"},
		{[]string{"--run", "--budget", "0"}, "--budget"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--refit"}, "--refit needs --run and --levels-from"},
		{[]string{"--widen", "2"}, "--tuning-from and --widen go with --run"},
		{[]string{"--tuning-from", "x.json"}, "--tuning-from and --widen go with --run"},
		{[]string{"--run", "--widen", "-1"}, "--widen -1"},
		{[]string{"--run", "--tuning-seeds", "0"}, "--tuning-seeds 0"},
		{[]string{"--targets", "0.01,0.003,0.001"}, "--targets goes with --run"},
		{[]string{"--run", "--targets", "0.001,0.01,0.003"}, "decreasing gaps"},
		{[]string{"--run", "--targets", "0.1,0.01,1e-4"}, "include the headline"},
		{[]string{"--run", "--targets", "0.1,x"}, "--targets"},
		{[]string{"--method", "auto", "--widen", "1"}, "drop --widen"},
		{[]string{"--gap", "0.01"}, "only --method auto plans for a gap"},
		{[]string{"--method", "lsgd"}, "--method \"lsgd\""},
		{[]string{"--method", "auto", "--gap", "1.5"}, "--gap 1.5"},
		{[]string{"--method", "auto", "--gap", "-0.01"}, "--gap -0.01"},
		{[]string{"--method", "auto", "--run"}, "drop --run"},
		{[]string{"--method", "auto", "--methods", "lsgd"}, "drop --methods"},
		{[]string{"--method", "auto", "--levels"}, "drop --levels"},
		{[]string{"--method", "auto", "--budget", "0"}, "--budget"},
		{[]string{"--instance", "student-t-20", "--reference-floor", "-1"}, "--reference-floor -1"},
		{[]string{"--reference-floor", "2"}, "--reference-floor goes alone with --instance student-t-20"},
		{[]string{"--instance", "student-t-20", "--reference-floor", "2", "--levels"}, "--reference-floor goes alone"},
		{[]string{"--method", "auto", "--first-seed", "0"}, "--first-seed 0"},
		{[]string{"--method", "auto", "--first-seed", "995"}, "meet the tuning seeds 1001..1003"},
		{[]string{"--method", "auto", "--first-seed", "1002", "--trials", "1"}, "meet the tuning seeds"},
	} {
		if _, err := parse(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.want)
		}
	}
}

// --method auto plans for the three headline gaps, or for --gap alone.
func TestParseAuto(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []float64
	}{
		{[]string{"--method", "auto"}, []float64{0.01, 0.003, 0.001}},
		{[]string{"--method", "auto", "--gap", "0.003"}, []float64{0.003}},
	} {
		s, err := parse(c.args)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if !s.Auto || !slices.Equal(s.AutoGaps, c.want) {
			t.Errorf("%v: auto %v for gaps %v, want gaps %v", c.args, s.Auto, s.AutoGaps, c.want)
		}
	}
	if s, err := parse(nil); err != nil || s.Auto {
		t.Errorf("no flags: auto %v, error %v; want the grid", s.Auto, err)
	}
}

// Auto on the entropic loss, planned for a 10% gap with one trial of a
// small budget: one JSON summary whose trial records its plan with the
// reasons, reaching the gap it was planned for.
func TestRunAutoWritesPlans(t *testing.T) {
	sum, out := runAutoJSON(t, "--gap", "0.1", "--loss", "entropic", "--trials", "1", "--workers", "1", "--budget", "1048576")
	if len(sum.Methods) != 1 || len(sum.Methods[0].Auto) != 1 || len(sum.Methods[0].Auto[0].Stages) == 0 ||
		len(sum.Methods[0].Auto[0].Stages[0].Plans) == 0 || sum.Methods[0].Auto[0].Stages[0].Plans[0].Reasons.Method == "" {
		t.Fatalf("summary holds no recorded plan with reasons: %+v", sum.Methods)
	}
	if st := sum.Methods[0].StaysBelow[0]; st.Reached != 1 {
		t.Errorf("auto planned for 10%% did not stay below 10%% within 2^20 samples: %+v", st)
	}
	if !strings.Contains(out, "auto planned for gap 0.1") {
		t.Errorf("output does not name the plan's gap:\n%s", out)
	}
}

// runAutoJSON runs the program with --method auto, the given flags and a JSON
// file of its own, and returns the summary the file holds and what the
// program printed.
func runAutoJSON(t *testing.T, flags ...string) (experiment.Summary, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auto.jsonl")
	var out strings.Builder
	if err := run(append([]string{"--method", "auto", "--json", path}, flags...), &out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum experiment.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sum, out.String()
}

// The exponent fit recovers the slope of medians that follow N = C eps^-e
// exactly, with an interval around it, and skips a target whose median
// trial did not reach it.
func TestFitExponent(t *testing.T) {
	in := &instance{SR0: 2, SRStar: 1}
	const e = 1.5
	var sum experiment.Summary
	for k, target := range targets {
		var ps experiment.Passage
		for j := range 10 {
			c := 1000 * math.Pow(target, -e) * (1 + 0.01*float64(j-5))
			if k == len(targets)-1 && j < 6 {
				ps.Trials = append(ps.Trials, nil) // most did not reach the last target
				continue
			}
			ps.Trials = append(ps.Trials, &c)
			ps.Reached++
		}
		if ps.Reached == 10 {
			med := 1000 * math.Pow(target, -e)
			ps.Median = &med // the harness's median; nil where the median trial did not reach
		}
		sum.PerTarget = append(sum.PerTarget, experiment.TargetSummary{Target: target,
			StaysBelow: experiment.Ranking{Methods: []experiment.Ranked{{Name: "L-SGD", Passage: ps,
				Setting: experiment.Method{Kind: mlmc.Kind{Method: mlmc.LSGD}}}}}})
	}
	ex := fitExponent(sum, in, func(experiment.Ranking) string { return "L-SGD" })
	if len(ex.Targets) != len(targets)-1 {
		t.Errorf("fitted on %d targets, want %d (the last one reached by 4 of 10)", len(ex.Targets), len(targets)-1)
	}
	if v := ex.Exponent; math.Abs(v[0]-e) > 0.01 || v[1] > v[0] || v[2] < v[0] || v[2]-v[1] > 0.1 {
		t.Errorf("exponent %v, want %g inside a narrow interval", v, e)
	}
}

// The projection keeps iterates on the budget plane, and an oracle error
// becomes a NaN gradient (a diverged trial) instead of an error.
func TestProblemProjectionAndDivergence(t *testing.T) {
	in, err := gaussianInstance(0)
	if err != nil {
		t.Fatal(err)
	}
	p := in.problem()
	x := []float64{3, -1, 0.5}
	p.Project(x)
	if s := x[0] + x[1] + x[2]; math.Abs(s-1) > 1e-15 {
		t.Errorf("projected sum %g, want 1", s)
	}
	inst, err := p.NewOracle(1)
	if err != nil {
		t.Fatal(err)
	}
	far := []float64{1e6, -1e6 + 1, 0} // exp(-beta X) overflows: no root
	inst.At(far, far)
	s, _, err := inst.Oracle.Draw(0)
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, 3)
	if err := inst.Oracle.Eval(s, mlmc.Current, false, 1, g); err != nil {
		t.Fatalf("Eval returned %v, want a NaN gradient", err)
	}
	if !math.IsNaN(g[0]) {
		t.Errorf("gradient %v at a point with no root, want NaNs", g)
	}
}

// --levels-from names the file and what is missing in it.
func TestReadLevelsErrors(t *testing.T) {
	in := &instance{Name: "gaussian-3", Loss: losses[0].Loss}
	dir := t.TempDir()
	for _, c := range []struct {
		name, body, want string
	}{
		{"missing.json", "", "--levels-from"},
		{"bad.json", "{", "write it with --levels --json"},
		{"other.json", `[{"instance": "gaussian-3", "loss": "expectile", "rates": {}}]`, "no diagnostic of gaussian-3 with the entropic loss"},
		{"norates.json", `[{"instance": "gaussian-3", "loss": "entropic", "rates": {"a": [1, 2]}}]`, "is not [value, lo, hi]"},
	} {
		path := filepath.Join(dir, c.name)
		if c.body != "" {
			if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := readLevels(path, in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// The sample-average SR's gradient matches central differences of its
// value along directions in the budget plane, on a small sample (the
// objective is smooth in theta: the quadratic hinge's l' is continuous).
func TestSampleSRGradient(t *testing.T) {
	f := newFactorModel()
	lc := losses[1]
	sr := f.sampleSR(lc.Loss, lc.Lambda, f.sample(5, 2000))
	theta := uniform(factorAssets)
	theta[0] += 0.3
	theta[19] -= 0.3
	g := make([]float64, factorAssets)
	if _, err := sr(theta, g); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]int{{0, 1}, {3, 17}, {10, 19}} {
		const h = 1e-5
		plus, minus := slices.Clone(theta), slices.Clone(theta)
		plus[pair[0]] += h
		plus[pair[1]] -= h
		minus[pair[0]] -= h
		minus[pair[1]] += h
		vp, err1 := sr(plus, nil)
		vm, err2 := sr(minus, nil)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		fd, an := (vp-vm)/(2*h), g[pair[0]]-g[pair[1]]
		if math.Abs(fd-an) > 1e-6*(1+math.Abs(an)) {
			t.Errorf("direction e%d - e%d: finite difference %.9g, gradient %.9g", pair[0], pair[1], fd, an)
		}
	}
}

// The floor is a property of a sample objective: the closed-form
// instance refuses it with an error naming the flag.
func TestReferenceFloorClosedForm(t *testing.T) {
	in, err := gaussianInstance(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := referenceFloor(in, 2, io.Discard); err == nil || !strings.Contains(err.Error(), "--reference-floor") {
		t.Errorf("error %v, want one naming --reference-floor", err)
	}
}

func TestCPUModel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"processor\t: 0\nmodel name\t: AMD EPYC 9B45\nflags\t: x\n", "AMD EPYC 9B45"},
		{"processor\t: 0\nmodel name\t: \nmodel name\t: Intel(R) Xeon(R)\n", "Intel(R) Xeon(R)"},
		{"processor\t: 0\n", "unknown processor"},
		{"", "unknown processor"},
	} {
		if got := cpuModel(tc.in); got != tc.want {
			t.Errorf("cpuModel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Auto on the quadratic-hinge loss, where SR(x0) - SR* is small and the
// pilots' noise hides the bias of the first plans' L: the runs that the
// bias held, stationary above their target, go deeper with the step they
// had before the stationarity test halved it, and later plans scale their
// bias share by what the run found. Fixed seeds 1..10, so the count is
// deterministic (no flake): 8 of them reach 1%, and the test asks for at
// least 6 (without those two rules, 4 do).
func TestAutoQuadraticHingeReaches(t *testing.T) {
	if testing.Short() {
		t.Skip("ten runs of 2^22 samples")
	}
	sum, _ := runAutoJSON(t, "--gap", "0.01", "--loss", "quadratic-hinge", "--trials", "10", "--workers", "2", "--budget", "4194304")
	for i, g := range sum.Targets {
		if g == 0.01 {
			if st := sum.Methods[0].StaysBelow[i]; st.Reached < 6 {
				t.Errorf("auto for 1%% stayed below 1%% in %d of 10 trials, want at least 6", st.Reached)
			}
			return
		}
	}
	t.Fatalf("no 1%% target among %v", sum.Targets)
}
