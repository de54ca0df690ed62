package resnet18_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

// With group norm the tensors are torchvision's resnet18(norm_layer=
// lambda c: nn.GroupNorm(min(32, c), c)) names: every norm keeps its weight
// and bias under the batch-norm name and has no running statistics. The
// head is PyTorch's Sequential(BatchNorm1d(512, affine=False), Linear,
// ReLU, Linear): head.0 holds only running statistics, head.1 and head.3
// are the linear layers.
func TestGroupNormTensorNamesMatchTorchvision(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{Norm: resnet18.NormGroup}, 1)
	p := m.Params()
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(torchvisionResNet18), "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "running_") || strings.Contains(line, "num_batches_tracked") || strings.HasPrefix(line, "head.") {
			continue
		}
		want = append(want, line)
	}
	want = append(want, "head.0.running_mean 512", "head.0.running_var 512", "head.0.num_batches_tracked",
		"head.1.weight 512 512", "head.1.bias 512", "head.3.weight 128 512", "head.3.bias 128")
	var got []string
	for _, tt := range p.Tensors() {
		dims := make([]string, len(tt.Shape))
		for i, d := range tt.Shape {
			dims[i] = strconv.Itoa(d)
		}
		got = append(got, strings.TrimSpace(tt.Name+" "+strings.Join(dims, " ")))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tensors with group norm:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	batch := resnet18.New(b, resnet18.Config{}, 1)
	if p.Len() != batch.Params().Len()-2*512 || p.StateLen() != 2*512+1 {
		t.Errorf("group norm: %d parameters and %d state values, want %d (batch norm's less the head norm's weight and bias) and %d (the head norm's running statistics)",
			p.Len(), p.StateLen(), batch.Params().Len()-2*512, 2*512+1)
	}
	for _, tt := range p.Tensors() {
		if len(tt.Shape) == 1 && tt.Kind != nn.NotDecayed && !strings.HasPrefix(tt.Name, "head.0.running_") {
			t.Errorf("%s is %v, want %v (norm weights and biases are not decayed)", tt.Name, tt.Kind, nn.NotDecayed)
		}
	}
	if err := (resnet18.Config{Norm: 7}).Validate(); err == nil || !strings.Contains(err.Error(), "group") {
		t.Errorf("Validate of norm \"layer\": %v, want an error naming the choices", err)
	}
}

func TestGroupCounts(t *testing.T) {
	for _, tc := range []struct{ c, groups int }{
		{512, 32},
		{256, 32},
		{64, 32},
		{32, 32},
		{8, 8},
		{1, 1},
		{38, 19}, // 32 does not divide 38
		{40, 20},
	} {
		if g := nn.Groups(tc.c); g != tc.groups {
			t.Errorf("nn.Groups(%d) = %d, want %d", tc.c, g, tc.groups)
		}
	}
}

// views uploads rows [lo, hi) of host (views of len in floats each).
func views(b tensor.Backend, host []float32, in, lo, hi int) tensor.Buffer {
	buf := b.Alloc((hi - lo) * in)
	b.Upload(buf, host[lo*in:hi*in])
	return buf
}

// With group norm a view's projection is the same in any batch, of any
// size (one view included), in training and in evaluation mode. A forward
// pass that updates the head's running statistics normalises with the
// statistics held before it, so its own projections do not depend on its
// batch either; the update shows only after CommitHeadStatistics.
func TestGroupNormViewsDoNotDependOnTheBatch(t *testing.T) {
	b := cpu.New()
	cfg := tiny
	cfg.Norm = resnet18.NormGroup
	m := resnet18.New(b, cfg, 5)
	in, pd := m.InputLen(), cfg.ProjDim
	rng := rand.New(rand.NewPCG(5, 6))
	_, host := uploadRandom(b, rng, 8*in)
	before := slices.Clone(cpu.Data(m.Forward(views(b, host, in, 0, 8), 8, true, false)))
	updating := slices.Clone(cpu.Data(m.Forward(views(b, host, in, 0, 8), 8, true, true)))
	uncommitted := slices.Clone(cpu.Data(m.Forward(views(b, host, in, 0, 8), 8, true, false)))
	m.CommitHeadStatistics()
	full := slices.Clone(cpu.Data(m.Forward(views(b, host, in, 0, 8), 8, true, false)))
	var moved float64
	for i := range before {
		if updating[i] != before[i] || uncommitted[i] != before[i] {
			t.Fatalf("projection %d: %g in the pass that updates the running statistics and %g after it, %g before: the update took effect before CommitHeadStatistics", i, updating[i], uncommitted[i], before[i])
		}
		moved = math.Max(moved, math.Abs(float64(full[i]-before[i])))
	}
	if moved < 1e-3 {
		t.Fatalf("the projections moved by %.3g after an update of the head's running statistics: the update did nothing", moved)
	}
	for _, tc := range []struct {
		lo, hi int
		train  bool
	}{{2, 5, true}, {7, 8, true}, {0, 8, false}, {3, 4, false}} {
		z := cpu.Data(m.Forward(views(b, host, in, tc.lo, tc.hi), tc.hi-tc.lo, tc.train, false))
		var worst float64
		for i, v := range z {
			worst = math.Max(worst, math.Abs(float64(v-full[tc.lo*pd+i])))
		}
		if worst > 1e-5 {
			t.Errorf("views %d..%d (train %v): projections differ from the batch of 8 by %.3g", tc.lo, tc.hi-1, tc.train, worst)
		}
	}
}

// gradOf runs one training-mode forward of the views [lo, hi) of host, the
// loss (multilevel or not) and the backward pass, and returns the loss and
// a copy of the gradient.
func gradOf(b *cpu.Backend, m *resnet18.Model, host []float32, lo, hi int, multilevel bool) (float64, []float64) {
	n := hi - lo
	pd := m.Config().ProjDim
	z := m.Forward(views(b, host, m.InputLen(), lo, hi), n, true, false)
	dz := b.Alloc(n * pd)
	l := b.NTXent(n/2, pd, 0.5, multilevel, z, dz).Loss
	m.Backward(dz)
	g := make([]float64, m.Params().Len())
	for i, v := range cpu.Data(m.Params().Grad()) {
		g[i] = float64(v)
	}
	return l, g
}

// TestMultilevelOneForwardIsExactWithGroupNorm is the exactness of
// docs/definitions.md, section 4 "Contrastive learning as a biased oracle": H^l
// from one forward and backward pass over the 2N views (loss L_B - (L_B1 +
// L_B2)/2) against grad L_B - (grad L_B1 + grad L_B2)/2 from three independent
// passes, B, B1 and B2 each with its own forward. With group norm the two agree
// to float32 rounding (measured: relative L2 difference 3.4e-6 and 3.7e-6, the
// loss to 6 digits); with batch norm the half-batch terms of the one forward
// see the statistics of all of B, and on this tiny network the two differ by as
// much as H^l itself (measured: relative L2 difference 0.97), which shows the
// comparison can fail.
func TestMultilevelOneForwardIsExactWithGroupNorm(t *testing.T) {
	for _, tc := range []struct {
		norm    resnet18.Norm
		images  int
		differs bool
	}{
		{resnet18.NormGroup, 4, false},
		{resnet18.NormGroup, 8, false},
		{resnet18.NormBatch, 4, true},
		{resnet18.NormBatch, 8, true},
	} {
		t.Run(fmt.Sprintf("%s/%d images", tc.norm, tc.images), func(t *testing.T) {
			b := cpu.New()
			cfg := tiny
			cfg.Norm = tc.norm
			m := resnet18.New(b, cfg, 11)
			rng := rand.New(rand.NewPCG(11, uint64(tc.images)))
			v := 2 * tc.images
			_, host := uploadRandom(b, rng, v*m.InputLen())

			lossOne, one := gradOf(b, m, host, 0, v, true)
			lossB, gB := gradOf(b, m, host, 0, v, false)
			lossB1, g1 := gradOf(b, m, host, 0, v/2, false)
			lossB2, g2 := gradOf(b, m, host, v/2, v, false)
			var num, den float64
			for i := range one {
				h := gB[i] - (g1[i]+g2[i])/2
				num += (one[i] - h) * (one[i] - h)
				den += h * h
			}
			rel := math.Sqrt(num / den)
			lossDiff := math.Abs(lossOne - (lossB - (lossB1+lossB2)/2))
			t.Logf("relative L2 difference of the gradients %.3g; loss %.6g against %.6g", rel, lossOne, lossB-(lossB1+lossB2)/2)
			if tc.differs {
				if rel < 0.05 {
					t.Fatalf("with batch norm the one-forward H^l matches three passes to %.3g: the test could not tell them apart", rel)
				}
				return
			}
			if rel > 1e-4 || lossDiff > 1e-5 {
				t.Fatalf("one-forward H^l differs from three independent passes: gradient by %.3g (relative L2), loss by %.3g", rel, lossDiff)
			}
		})
	}
}

// A group-norm model saves and loads back bit for bit; its checkpoint
// records the norm, and a network of the other norm refuses it (and a
// batch-norm checkpoint), naming --norm.
func TestGroupNormSaveLoad(t *testing.T) {
	b := cpu.New()
	dir := t.TempDir()
	cfg := resnet18.Config{Width: 0.125, ProjDim: 16, InputSize: 32, Norm: resnet18.NormGroup}
	src := resnet18.New(b, cfg, 1)
	groupPath := filepath.Join(dir, "group.safetensors")
	if err := src.Save(groupPath, map[string]string{"width": "0.125"}); err != nil {
		t.Fatal(err)
	}
	dst := resnet18.New(b, cfg, 2)
	f, err := dst.Load(groupPath)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["norm"] != resnet18.NormGroup.String() || f.Metadata["width"] != "0.125" || f.Metadata["head"] != "runningnorm-linear-relu-linear" {
		t.Errorf("metadata %v, want norm group, width 0.125 and head runningnorm-linear-relu-linear", f.Metadata)
	}
	if !slices.Equal(cpu.Data(src.Params().Flat()), cpu.Data(dst.Params().Flat())) {
		t.Fatal("loaded parameters differ from the saved ones")
	}
	if !slices.Equal(cpu.Data(src.Params().State()), cpu.Data(dst.Params().State())) {
		t.Fatal("loaded running statistics of the head differ from the saved ones")
	}
	batchCfg := cfg
	batchCfg.Norm = resnet18.NormBatch
	batch := resnet18.New(b, batchCfg, 1)
	batchPath := filepath.Join(dir, "batch.safetensors")
	if err := batch.Save(batchPath, nil); err != nil {
		t.Fatal(err)
	}
	// Group-norm checkpoints of the earlier versions (GroupNorm head.1,
	// "head_groups" metadata; Linear-ReLU-Linear head) are refused: their
	// head would load wrongly.
	oldGroupPath := filepath.Join(dir, "old-group.safetensors")
	if err := checkpoint.Write(oldGroupPath, []checkpoint.Tensor{{Name: "head.1.weight", Shape: []int{64}, Data: make([]float32, 64)}},
		map[string]string{"norm": resnet18.NormGroup.String(), "head_groups": "4"}); err != nil {
		t.Fatal(err)
	}
	linearHeadPath := filepath.Join(dir, "linear-head-group.safetensors")
	if err := checkpoint.Write(linearHeadPath, []checkpoint.Tensor{{Name: "head.0.weight", Shape: []int{64, 64}, Data: make([]float32, 64*64)}},
		map[string]string{"norm": resnet18.NormGroup.String(), "head": "linear-relu-linear"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    *resnet18.Model
		path string
		want string
	}{{batch, groupPath, "--norm group"}, {dst, batchPath, "--norm batch"}, {dst, oldGroupPath, "train the network again"},
		{dst, linearHeadPath, "Linear-ReLU-Linear, written by an earlier simclr"}} {
		if _, err := tc.m.Load(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("loading %s into a %s-norm network: error %v, want one naming %s", filepath.Base(tc.path), tc.m.Config().Norm, err, tc.want)
		}
	}
}

// BenchmarkTrainStepNorm times one training step (forward, multilevel loss,
// backward) of a width-1/8 network on 64 images (128 views) with each
// normalisation, for the cost of --norm group against batch; run with
// -benchtime 3x.
func BenchmarkTrainStepNorm(b *testing.B) {
	for _, norm := range []resnet18.Norm{resnet18.NormBatch, resnet18.NormGroup} {
		b.Run(norm.String(), func(b *testing.B) {
			be := cpu.New()
			cfg := resnet18.Config{Width: 0.125, Norm: norm}
			m := resnet18.New(be, cfg, 1)
			const n = 64
			rng := rand.New(rand.NewPCG(1, 1))
			x, _ := uploadRandom(be, rng, 2*n*m.InputLen())
			dz := be.Alloc(2 * n * 128)
			step := func() {
				z := m.Forward(x, 2*n, true, true)
				be.NTXent(n, 128, 0.5, true, z, dz)
				m.Backward(dz)
			}
			step() // plans the activations and grows the backend's workspace
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(2*n*b.N)/b.Elapsed().Seconds(), "views/s")
		})
	}
}

// The group-norm head's momentum is HeadMomentum whatever the environment:
// it is part of the trained function, and neither config.json nor the
// checkpoints record it, so a setting read from the environment would
// make a run unreproducible and a resume silently train another function
// (an unparsable value became momentum 0: statistics that never move).
func TestGroupNormHeadMomentumIgnoresTheEnvironment(t *testing.T) {
	b := cpu.New()
	cfg := tiny
	cfg.Norm = resnet18.NormGroup
	for _, v := range []string{"0.1", "1", "not-a-number"} {
		t.Setenv("HEAD_MOM", v)
		m := resnet18.New(b, cfg, 1)
		if got := m.HeadNorm().Momentum; got != resnet18.HeadMomentum {
			t.Errorf("HEAD_MOM=%s: head momentum %g, want %g", v, got, resnet18.HeadMomentum)
		}
		m.Free()
	}
}
