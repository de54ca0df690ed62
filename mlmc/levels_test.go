package mlmc

import (
	"math"
	"math/rand/v2"
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

func TestParseName(t *testing.T) {
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
		m, vr, err := ParseName(tc.name)
		if (err != nil) != tc.err || (err == nil && (m != tc.m || vr != tc.vr)) {
			t.Errorf("ParseName(%q) = %v, %v, %v; want %v, %v, error %v", tc.name, m, vr, err, tc.m, tc.vr, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), "vr-rrmlmc") {
			t.Errorf("ParseName(%q) error %q does not list the valid names", tc.name, err)
		}
	}
	if len(Names()) != 10 {
		t.Errorf("Names() = %v, want 10 names", Names())
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
		{"unknown", "mlmc", Config{MaxLevel: 2}, Unbounded, "unknown estimator"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewSynthetic(2, 1, 1, 1, 1)
			o.Max = tc.oracleMax
			_, err := New(tc.estimator, tc.cfg, Float64Ops{Dim: 2}, o)
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
