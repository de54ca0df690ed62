package train

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"hash/fnv"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/simclr-go/simclr/runfolder"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden-losses.json from this code")

// goldenRun is what a short fixed-seed run computes: every iteration's
// loss and excess loss, and a hash of the final state file's tensors
// (parameters, optimizer state, SogCLR's u).
type goldenRun struct {
	Loss   []float64 `json:"loss"`
	Excess []float64 `json:"excess"`
	State  uint64    `json:"state_fnv64"`
}

// goldenCases are the runs of TestEveryLossTrainsAsRecorded: each loss,
// NT-Xent also under estimators that query H^l (with either halves) and
// x_{t-1}, and the old estimator names of the decoupled losses, which must
// train as the runs recorded under the same name (record).
var goldenCases = []struct {
	name, record string
	set          func(*Settings)
}{
	{"ntxent-lsgd", "", func(s *Settings) { s.Estimator = "lsgd" }},
	{"ntxent-vr-rtmlmc", "", func(s *Settings) { s.Estimator = "vr-rtmlmc" }},
	{"ntxent-vmlmc-separate", "", func(s *Settings) { s.Estimator, s.Halves = "vmlmc", "separate" }},
	{"dcl", "", func(s *Settings) { s.Estimator, s.Loss = "lsgd", "dcl" }},
	{"sogclr-cosine", "", func(s *Settings) { s.Loss, s.SogCLRGamma, s.SogCLRGammaDecay = "sogclr", 0.5, "cosine" }},
	{"dcl as --estimator dcl", "dcl", func(s *Settings) { s.Estimator = "dcl" }},
	{"sogclr as --estimator sogclr", "sogclr-cosine", func(s *Settings) {
		s.Estimator, s.Loss, s.SogCLRGamma, s.SogCLRGammaDecay = "sogclr", "", 0.5, "cosine"
	}},
}

// TestEveryLossTrainsAsRecorded trains each loss for a few fixed-seed
// iterations on the CPU and compares every metric and the final state, bit
// for bit, with testdata/golden-losses.json, recorded before the losses
// became a choice of their own: how the loss is chosen must not change
// what a run computes.
func TestEveryLossTrainsAsRecorded(t *testing.T) {
	splits := syntheticSplits(64, 32, 16, 4)
	got := map[string]goldenRun{}
	for _, tc := range goldenCases {
		cfg := tinyConfig(t, "lsgd")
		cfg.Workers = 1
		tc.set(&cfg)
		if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		lines, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
		if err != nil {
			t.Fatal(err)
		}
		var run goldenRun
		for _, m := range lines {
			run.Loss = append(run.Loss, m.Loss)
			run.Excess = append(run.Excess, *m.LossMinusLog2NMinus1)
		}
		run.State = stateHash(t, cfg.Out)
		got[tc.name] = run
	}
	path := filepath.Join("testdata", "golden-losses.json")
	if *updateGolden {
		recorded := map[string]goldenRun{}
		for _, tc := range goldenCases {
			if tc.record == "" {
				recorded[tc.name] = got[tc.name]
			}
		}
		b, _ := json.MarshalIndent(recorded, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]goldenRun
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, tc := range goldenCases {
		g, w := got[tc.name], want[cmp.Or(tc.record, tc.name)]
		if len(w.Loss) == 0 {
			t.Errorf("%s: %s records no run", tc.name, path)
			continue
		}
		if !slices.EqualFunc(g.Loss, w.Loss, sameBits) || !slices.EqualFunc(g.Excess, w.Excess, sameBits) || g.State != w.State {
			t.Errorf("%s: losses %v excess %v state %x, recorded %v, %v, %x", tc.name, g.Loss, g.Excess, g.State, w.Loss, w.Excess, w.State)
		}
	}
}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// stateHash is an FNV-64 hash of every tensor of the run's state file, in
// name order.
func stateHash(t *testing.T, dir string) uint64 {
	t.Helper()
	state := paramsOf(t, dir)
	h := fnv.New64a()
	for _, name := range slices.Sorted(maps.Keys(state)) {
		h.Write([]byte(name))
		for _, v := range state[name] {
			bits := math.Float32bits(v)
			h.Write([]byte{byte(bits), byte(bits >> 8), byte(bits >> 16), byte(bits >> 24)})
		}
	}
	return h.Sum64()
}
