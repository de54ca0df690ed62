package resnet18_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/model/resnet18"
)

// bnStats maps each running_mean / running_var tensor to its values.
func bnStats(m *resnet18.Model) map[string][]float32 {
	out := map[string][]float32{}
	for _, nt := range m.Params().Tensors() {
		if strings.HasSuffix(nt.Name, "running_mean") || strings.HasSuffix(nt.Name, "running_var") {
			out[nt.Name] = slices.Clone(cpu.Data(nt.Value))
		}
	}
	return out
}

// statsGap is the largest disagreement between two sets of running
// statistics: |mean - mean_ref| / sqrt(var_ref) and |var/var_ref - 1| over
// every layer and channel.
func statsGap(got, ref map[string][]float32) (meanGap, varGap float64, where string) {
	for name, r := range ref {
		if !strings.HasSuffix(name, "running_var") {
			continue
		}
		layer := strings.TrimSuffix(name, "running_var")
		g, gm, rm := got[name], got[layer+"running_mean"], ref[layer+"running_mean"]
		for c := range r {
			if d := math.Abs(float64(gm[c]-rm[c])) / math.Sqrt(float64(r[c])); d > meanGap {
				meanGap, where = d, layer
			}
			if d := math.Abs(float64(g[c]/r[c]) - 1); d > varGap {
				varGap = d
			}
		}
	}
	return meanGap, varGap, where
}

// Precise BN over 32 batches of 64 views must give the population
// statistics of the data: those of one training-mode pass over all 2,048
// views at once (momentum 1). The batches see the same views, so at the
// stem the means agree exactly and the variances up to the spread of the
// batch means (about 1/(64*256) relative); deeper layers normalise each
// batch by its own statistics, which moves their inputs by O(1/sqrt(batch
// positions)), a few per cent at the head (64 positions per channel per
// batch). The running statistics the trainer leaves (momentum 0.1 over
// 4-view batches) must fail the same check, so it can fail.
func TestRecalibrateBNMatchesPopulationStatistics(t *testing.T) {
	const total, batch = 2048, 64
	b := cpu.New()
	m := resnet18.New(b, tiny, 5)
	imgLen := m.InputLen()
	hw := tiny.InputSize * tiny.InputSize
	rng := rand.New(rand.NewPCG(5, 6))
	// Channel c has mean c - 1 and standard deviation 1 + c/2.
	all := make([]float32, total*imgLen)
	for v := range total {
		for c := range 3 {
			for i := range hw {
				all[v*imgLen+c*hw+i] = float32(float64(c-1) + (1+float64(c)/2)*rng.NormFloat64())
			}
		}
	}
	feeder := func(views int) func([]float32) {
		pos := 0
		return func(x []float32) {
			copy(x, all[pos*imgLen:(pos+views)*imgLen])
			pos += views
		}
	}
	// The trainer's running statistics: momentum updates from 4-view batches.
	for k := range 50 {
		x := b.Alloc(4 * imgLen)
		b.Upload(x, all[4*k*imgLen:4*(k+1)*imgLen])
		m.Forward(x, 4, true, true)
		b.Free(x)
	}
	momentum := bnStats(m)
	if err := m.RecalibrateBN(total, 1, feeder(total)); err != nil {
		t.Fatal(err)
	}
	ref := bnStats(m)
	if err := m.RecalibrateBN(batch, total/batch, feeder(batch)); err != nil {
		t.Fatal(err)
	}
	precise := bnStats(m)
	for _, bn := range m.BatchNorms() {
		if bn.Momentum != 0.1 {
			t.Fatalf("momentum %g after RecalibrateBN, want 0.1 restored", bn.Momentum)
		}
	}

	// The stem: exact up to float32 rounding and the batch-mean spread.
	stemMean, stemVar, _ := statsGap(map[string][]float32{"bn1.running_mean": precise["bn1.running_mean"], "bn1.running_var": precise["bn1.running_var"]},
		map[string][]float32{"bn1.running_mean": ref["bn1.running_mean"], "bn1.running_var": ref["bn1.running_var"]})
	if stemMean > 1e-4 || stemVar > 2e-3 {
		t.Errorf("stem: mean off by %.2g sd, variance by %.2g relative; want below 1e-4 and 2e-3", stemMean, stemVar)
	}
	meanGap, varGap, where := statsGap(precise, ref)
	t.Logf("precise BN against one 2,048-view batch: means within %.3f sd (worst %s), variances within %.1f%%", meanGap, where, 100*varGap)
	if meanGap > 0.05 || varGap > 0.06 {
		t.Errorf("precise BN: means off by up to %.3f sd (%s), variances by %.1f%%; want below 0.05 and 6%%", meanGap, where, 100*varGap)
	}
	mg, vg, w := statsGap(momentum, ref)
	t.Logf("momentum statistics from 4-view batches: means within %.3f sd (worst %s), variances within %.1f%%", mg, w, 100*vg)
	if mg <= 0.05 && vg <= 0.06 {
		t.Errorf("the trainer's momentum statistics pass the check (means %.3f sd, variances %.1f%%): it cannot fail", mg, 100*vg)
	}
}

func TestRecalibrateBNRejectsBadSizes(t *testing.T) {
	m := resnet18.New(cpu.New(), tiny, 1)
	for _, c := range [][2]int{{1, 4}, {8, 0}} {
		if err := m.RecalibrateBN(c[0], c[1], func([]float32) {}); err == nil {
			t.Errorf("RecalibrateBN(%d views, %d batches): no error", c[0], c[1])
		}
	}
}

// BatchNorms lists the 21 batch-norm layers of a batch-norm ResNet-18 (stem,
// two per block, three downsamples, head) and none of a group-norm one,
// whose only running statistics are its head's (HeadNorm).
func TestBatchNormsSkipsGroupNorm(t *testing.T) {
	b := cpu.New()
	for _, tc := range []struct {
		norm resnet18.Norm
		want int
	}{{resnet18.NormBatch, 21}, {resnet18.NormGroup, 0}} {
		cfg := tiny
		cfg.Norm = tc.norm
		m := resnet18.New(b, cfg, 1)
		if got := len(m.BatchNorms()); got != tc.want {
			t.Errorf("%s norm: BatchNorms() lists %d layers, want %d", tc.norm, got, tc.want)
		}
	}
}

// With group norm precise BN leaves the head's running statistics alone:
// they are part of the function being trained (an evaluation must not
// change the training), and evaluations use only the backbone.
func TestRecalibrateBNLeavesTheGroupNormHead(t *testing.T) {
	b := cpu.New()
	cfg := tiny
	cfg.Norm = resnet18.NormGroup
	const views = 16
	m := resnet18.New(b, cfg, 7)
	rng := rand.New(rand.NewPCG(7, 8))
	x, host := uploadRandom(b, rng, views*m.InputLen())
	if err := m.InitHeadFromData(x, views); err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(cpu.Data(m.Params().State()))
	calls := 0
	if err := m.RecalibrateBN(views, 3, func(dst []float32) { calls++; copy(dst, host) }); err != nil {
		t.Fatal(err)
	}
	if got := cpu.Data(m.Params().State()); !slices.Equal(got, before) || calls != 0 {
		t.Fatalf("precise BN of a group-norm network read %d batches and changed its state", calls)
	}
}
