package mlmc

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestLevelLawsMatchDefinitions(t *testing.T) {
	cases := []struct {
		name string
		law  LevelDist
		prob func(l int) float64 // docs/definitions.md, section 2 "The estimators", computed independently
		top  int                 // levels checked: Min..top
	}{
		{"truncated 1..9 b=c=1", Truncated(1, 9, 1, 1), func(l int) float64 {
			z := 0.0
			for k := 1; k <= 9; k++ {
				z += math.Pow(2, -float64(k))
			}
			return math.Pow(2, -float64(l)) / z
		}, 9},
		{"truncated 0..4 b=2 c=1", Truncated(0, 4, 2, 1), func(l int) float64 {
			z := 0.0
			for k := 0; k <= 4; k++ {
				z += math.Pow(2, -1.5*float64(k))
			}
			return math.Pow(2, -1.5*float64(l)) / z
		}, 4},
		{"geometric from 1 b=c=1", Geometric(1, 1, 1), func(l int) float64 {
			return math.Pow(2, -float64(l-1)) * 0.5
		}, 12},
		{"geometric from 2 b=2 c=1", Geometric(2, 2, 1), func(l int) float64 {
			return math.Pow(2, -1.5*float64(l-2)) * (1 - math.Pow(2, -1.5))
		}, 12},
	}
	const n = 200000
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 1))
			counts := map[int]int{}
			for range n {
				counts[tc.law.Draw(r)]++
			}
			tail := 1.0
			for l := tc.law.Min; l <= tc.top; l++ {
				want := tc.prob(l)
				if got := tc.law.Prob(l); math.Abs(got-want) > 1e-12 {
					t.Errorf("Prob(%d) = %g, want %g", l, got, want)
				}
				if got := tc.law.Tail(l); math.Abs(got-tail) > 1e-12 {
					t.Errorf("Tail(%d) = %g, want %g", l, got, tail)
				}
				tail -= want
				// Binomial frequency: 5 standard errors.
				freq := float64(counts[l]) / n
				if se := math.Sqrt(want * (1 - want) / n); math.Abs(freq-want) > zTol*se+1e-9 {
					t.Errorf("level %d drawn with frequency %.5f, want %.5f (se %.5f)", l, freq, want, se)
				}
			}
			if tc.law.Max != Unbounded {
				if math.Abs(tail) > 1e-12 {
					t.Errorf("probabilities sum to %g, want 1", 1-tail)
				}
				if tc.law.Prob(tc.law.Max+1) != 0 || tc.law.Prob(tc.law.Min-1) != 0 {
					t.Error("probability outside Min..Max is not 0")
				}
			}
		})
	}
}

func TestGeometricConditionedIsTruncated(t *testing.T) {
	g := Geometric(1, 1.5, 1).truncate(6)
	want := Truncated(1, 6, 1.5, 1)
	for l := 0; l <= 7; l++ {
		if math.Abs(g.Prob(l)-want.Prob(l)) > 1e-12 {
			t.Errorf("level %d: conditioned geometric %g, truncated %g", l, g.Prob(l), want.Prob(l))
		}
	}
}

func TestParseKind(t *testing.T) {
	cases := []struct {
		name string
		m    Method
		vr   bool
		err  bool
	}{
		{"lsgd", LSGD, false, false},
		{"vmlmc", VMLMC, false, false},
		{"rtmlmc", RTMLMC, false, false},
		{"rumlmc", RUMLMC, false, false},
		{"rrmlmc", RRMLMC, false, false},
		{"vr-rtmlmc", RTMLMC, true, false},
		{"VR-LSGD", LSGD, true, false},
		{"vr-", 0, false, true},
		{"sgd", 0, false, true},
		{"vr-vr-rtmlmc", 0, false, true},
	}
	for _, tc := range cases {
		k, err := ParseKind(tc.name)
		if (err != nil) != tc.err || (err == nil && (k.Method != tc.m || k.VR != tc.vr)) {
			t.Errorf("ParseKind(%q) = %v, %v; want %v, %v, error %v", tc.name, k, err, tc.m, tc.vr, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), "vr-rrmlmc") {
			t.Errorf("ParseKind(%q) error %q does not list the valid names", tc.name, err)
		}
		if err == nil && k.String() != strings.ToLower(tc.name) {
			t.Errorf("ParseKind(%q).String() = %q, want the name back", tc.name, k)
		}
	}
	// The paper's five and their vr- versions, in the table's order (a
	// test of this binary may register more after them).
	want := []string{"lsgd", "vmlmc", "rtmlmc", "rumlmc", "rrmlmc"}
	names := Names()
	for i, n := range want {
		if !slices.Contains(names, n) || !slices.Contains(names, "vr-"+n) || names[i] != n {
			t.Errorf("Names() = %v, want %v first and each with its vr- version", names, want)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []struct {
		name      string
		estimator string
		cfg       Config
		oracleMax int
		want      string
	}{
		{"max below min", "rtmlmc", Config{MinLevel: 3, MaxLevel: 2}, Unbounded, "maximum level 2 is below the minimum level 3"},
		{"max above oracle", "lsgd", Config{MinLevel: 1, MaxLevel: 10}, 8, "maximum level 10 is above the largest level the oracle serves (8)"},
		{"negative min", "vmlmc", Config{MinLevel: -1, MaxLevel: 2}, Unbounded, "minimum level -1 is negative"},
		{"bad D2", "vr-rtmlmc", Config{MaxLevel: 2, D2: -1}, Unbounded, "D2 = -1"},
		{"ru min above oracle", "rumlmc", Config{MinLevel: 9}, 8, "minimum level 9 is above the largest level the oracle serves (8)"},
		{"negative rate", "rtmlmc", Config{MaxLevel: 2, B: -1}, Unbounded, "rates"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewSynthetic(2, 1, 1, 1, 1)
			o.Max = tc.oracleMax
			_, err := New(mustKind(tc.estimator), tc.cfg, Float64Ops{Dim: 2}, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestVMLMCDefaultN(t *testing.T) {
	// Default N = 2^((b+c)L/2): n_L = 1 and n_l = 2^((b+c)(L-l)/2) rounded up.
	cfg := Config{MinLevel: 1, MaxLevel: 5}.withDefaults()
	for l, want := range map[int]int{1: 16, 3: 4, 5: 1} {
		if got := VMLMCDraws(l, cfg.B, cfg.C, cfg.N); got != want {
			t.Errorf("n_%d = %d, want %d", l, got, want)
		}
	}
}

func TestExplicitLaw(t *testing.T) {
	law, err := Explicit(2, []float64{1, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]float64{2: 1.0 / 8, 3: 2.0 / 8, 4: 5.0 / 8}
	if law.Min != 2 || law.Max != 4 {
		t.Fatalf("levels %d..%d, want 2..4", law.Min, law.Max)
	}
	const n = 200000
	r := rand.New(rand.NewPCG(7, 1))
	counts := map[int]int{}
	for range n {
		counts[law.Draw(r)]++
	}
	tail := 1.0
	for l := 1; l <= 5; l++ {
		if got := law.Prob(l); math.Abs(got-want[l]) > 1e-12 {
			t.Errorf("Prob(%d) = %g, want %g", l, got, want[l])
		}
		if l >= 2 && l <= 4 {
			if got := law.Tail(l); math.Abs(got-tail) > 1e-12 {
				t.Errorf("Tail(%d) = %g, want %g", l, got, tail)
			}
			tail -= want[l]
		}
		freq := float64(counts[l]) / n
		if se := math.Sqrt(want[l] * (1 - want[l]) / n); math.Abs(freq-want[l]) > zTol*se+1e-9 {
			t.Errorf("level %d drawn with frequency %.5f, want %.5f (se %.5f)", l, freq, want[l], se)
		}
	}
	for _, bad := range []struct {
		min   int
		probs []float64
		says  string
	}{
		{1, nil, "need at least one"},
		{-1, []float64{1}, "non-negative level"},
		{1, []float64{1, 0}, "q at level 2 is 0"},
		{1, []float64{math.NaN()}, "q at level 1 is NaN"},
		{1, []float64{1, math.Inf(1)}, "q at level 2 is +Inf"},
	} {
		if _, err := Explicit(bad.min, bad.probs); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("Explicit(%d, %v): error %v, want one saying %q", bad.min, bad.probs, err, bad.says)
		}
	}
}

// TestExplicitAllocations checks that Config.LevelProbs and LevelDraws reach
// the estimators and the cost model: RT-MLMC draws its levels with the given
// probabilities, V-MLMC queries each level the given number of times, and
// ExpectedCost is sum_l q_l 2^l and sum_l n_l 2^l images.
func TestExplicitAllocations(t *testing.T) {
	o := NewSynthetic(2, 1, 2, 1, 3)
	probs := []float64{0.1, 0.2, 0.3, 0.4} // levels 2..5
	rt, err := New(mustKind("rtmlmc"), Config{MinLevel: 2, MaxLevel: 5, LevelProbs: probs, Seed: 9}, Float64Ops{Dim: 2}, o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40000
	out := make([]float64, 2)
	counts := map[int]int{}
	for it := range n {
		step, err := rt.Estimate(it, out)
		if err != nil {
			t.Fatal(err)
		}
		counts[step.Levels[0]]++
	}
	wantImages := 0.0
	for i, q := range probs {
		l := 2 + i
		wantImages += q * math.Exp2(float64(l))
		freq := float64(counts[l]) / n
		if se := math.Sqrt(q * (1 - q) / n); math.Abs(freq-q) > zTol*se {
			t.Errorf("rtmlmc drew level %d with frequency %.4f, want %.4f (se %.4f)", l, freq, q, se)
		}
	}
	if got, _, err := ExpectedCost(mustKind("rtmlmc"), Config{MinLevel: 2, MaxLevel: 5, LevelProbs: probs}, Unbounded); err != nil || math.Abs(got-wantImages) > 1e-9 {
		t.Errorf("ExpectedCost(rtmlmc) = %g, %v; want %g images", got, err, wantImages)
	}

	draws := []int{5, 1, 3, 2}
	vm, err := New(mustKind("vmlmc"), Config{MinLevel: 2, MaxLevel: 5, LevelDraws: draws}, Float64Ops{Dim: 2}, o)
	if err != nil {
		t.Fatal(err)
	}
	step, err := vm.Estimate(0, out)
	if err != nil {
		t.Fatal(err)
	}
	per := map[int]int{}
	for _, l := range step.Levels {
		per[l]++
	}
	wantImages = 0
	for i, k := range draws {
		wantImages += float64(k) * math.Exp2(float64(2+i))
		if per[2+i] != k {
			t.Errorf("vmlmc queried level %d %d times, want %d", 2+i, per[2+i], k)
		}
	}
	if float64(step.Samples) != wantImages {
		t.Errorf("vmlmc step drew %d images, want %g", step.Samples, wantImages)
	}
	if got, _, err := ExpectedCost(mustKind("vmlmc"), Config{MinLevel: 2, MaxLevel: 5, LevelDraws: draws}, Unbounded); err != nil || got != wantImages {
		t.Errorf("ExpectedCost(vmlmc) = %g, %v; want %g images", got, err, wantImages)
	}

	for _, bad := range []struct {
		name string
		cfg  Config
		says string
	}{
		{"rtmlmc", Config{MinLevel: 2, MaxLevel: 5, LevelProbs: []float64{1, 1}}, "2 probabilities for the 4 levels 2..5"},
		{"vr-rtmlmc", Config{MinLevel: 2, MaxLevel: 5, LevelProbs: []float64{1, 1, -1, 1}}, "q at level 4 is -1"},
		{"vmlmc", Config{MinLevel: 2, MaxLevel: 5, LevelDraws: []int{1, 1, 1}}, "3 counts for the 4 levels 2..5"},
		{"vmlmc", Config{MinLevel: 2, MaxLevel: 5, LevelDraws: []int{1, 0, 1, 1}}, "n at level 3 is 0"},
	} {
		if _, err := New(mustKind(bad.name), bad.cfg, Float64Ops{Dim: 2}, o); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("New(%s, %+v): error %v, want one saying %q", bad.name, bad.cfg, err, bad.says)
		}
	}
}

// mustKind is the estimator a test names; a misspelt name is the test's
// own bug.
func mustKind(name string) Kind {
	k, err := ParseKind(name)
	if err != nil {
		panic(err)
	}
	return k
}
