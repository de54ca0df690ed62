package resnet18_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/optim"
	"github.com/simclr-go/simclr/tensor"
)

// torchvisionResNet18 is the state_dict of torchvision.models.resnet18 with
// the CIFAR stem (conv1 3x3) and fc replaced by the SimCLR head, in
// state_dict order: "name dim dim ..." (no dims: a scalar).
const torchvisionResNet18 = `
	conv1.weight 64 3 3 3
	bn1.weight 64
	bn1.bias 64
	bn1.running_mean 64
	bn1.running_var 64
	bn1.num_batches_tracked
	layer1.0.conv1.weight 64 64 3 3
	layer1.0.bn1.weight 64
	layer1.0.bn1.bias 64
	layer1.0.bn1.running_mean 64
	layer1.0.bn1.running_var 64
	layer1.0.bn1.num_batches_tracked
	layer1.0.conv2.weight 64 64 3 3
	layer1.0.bn2.weight 64
	layer1.0.bn2.bias 64
	layer1.0.bn2.running_mean 64
	layer1.0.bn2.running_var 64
	layer1.0.bn2.num_batches_tracked
	layer1.1.conv1.weight 64 64 3 3
	layer1.1.bn1.weight 64
	layer1.1.bn1.bias 64
	layer1.1.bn1.running_mean 64
	layer1.1.bn1.running_var 64
	layer1.1.bn1.num_batches_tracked
	layer1.1.conv2.weight 64 64 3 3
	layer1.1.bn2.weight 64
	layer1.1.bn2.bias 64
	layer1.1.bn2.running_mean 64
	layer1.1.bn2.running_var 64
	layer1.1.bn2.num_batches_tracked
	layer2.0.conv1.weight 128 64 3 3
	layer2.0.bn1.weight 128
	layer2.0.bn1.bias 128
	layer2.0.bn1.running_mean 128
	layer2.0.bn1.running_var 128
	layer2.0.bn1.num_batches_tracked
	layer2.0.conv2.weight 128 128 3 3
	layer2.0.bn2.weight 128
	layer2.0.bn2.bias 128
	layer2.0.bn2.running_mean 128
	layer2.0.bn2.running_var 128
	layer2.0.bn2.num_batches_tracked
	layer2.0.downsample.0.weight 128 64 1 1
	layer2.0.downsample.1.weight 128
	layer2.0.downsample.1.bias 128
	layer2.0.downsample.1.running_mean 128
	layer2.0.downsample.1.running_var 128
	layer2.0.downsample.1.num_batches_tracked
	layer2.1.conv1.weight 128 128 3 3
	layer2.1.bn1.weight 128
	layer2.1.bn1.bias 128
	layer2.1.bn1.running_mean 128
	layer2.1.bn1.running_var 128
	layer2.1.bn1.num_batches_tracked
	layer2.1.conv2.weight 128 128 3 3
	layer2.1.bn2.weight 128
	layer2.1.bn2.bias 128
	layer2.1.bn2.running_mean 128
	layer2.1.bn2.running_var 128
	layer2.1.bn2.num_batches_tracked
	layer3.0.conv1.weight 256 128 3 3
	layer3.0.bn1.weight 256
	layer3.0.bn1.bias 256
	layer3.0.bn1.running_mean 256
	layer3.0.bn1.running_var 256
	layer3.0.bn1.num_batches_tracked
	layer3.0.conv2.weight 256 256 3 3
	layer3.0.bn2.weight 256
	layer3.0.bn2.bias 256
	layer3.0.bn2.running_mean 256
	layer3.0.bn2.running_var 256
	layer3.0.bn2.num_batches_tracked
	layer3.0.downsample.0.weight 256 128 1 1
	layer3.0.downsample.1.weight 256
	layer3.0.downsample.1.bias 256
	layer3.0.downsample.1.running_mean 256
	layer3.0.downsample.1.running_var 256
	layer3.0.downsample.1.num_batches_tracked
	layer3.1.conv1.weight 256 256 3 3
	layer3.1.bn1.weight 256
	layer3.1.bn1.bias 256
	layer3.1.bn1.running_mean 256
	layer3.1.bn1.running_var 256
	layer3.1.bn1.num_batches_tracked
	layer3.1.conv2.weight 256 256 3 3
	layer3.1.bn2.weight 256
	layer3.1.bn2.bias 256
	layer3.1.bn2.running_mean 256
	layer3.1.bn2.running_var 256
	layer3.1.bn2.num_batches_tracked
	layer4.0.conv1.weight 512 256 3 3
	layer4.0.bn1.weight 512
	layer4.0.bn1.bias 512
	layer4.0.bn1.running_mean 512
	layer4.0.bn1.running_var 512
	layer4.0.bn1.num_batches_tracked
	layer4.0.conv2.weight 512 512 3 3
	layer4.0.bn2.weight 512
	layer4.0.bn2.bias 512
	layer4.0.bn2.running_mean 512
	layer4.0.bn2.running_var 512
	layer4.0.bn2.num_batches_tracked
	layer4.0.downsample.0.weight 512 256 1 1
	layer4.0.downsample.1.weight 512
	layer4.0.downsample.1.bias 512
	layer4.0.downsample.1.running_mean 512
	layer4.0.downsample.1.running_var 512
	layer4.0.downsample.1.num_batches_tracked
	layer4.1.conv1.weight 512 512 3 3
	layer4.1.bn1.weight 512
	layer4.1.bn1.bias 512
	layer4.1.bn1.running_mean 512
	layer4.1.bn1.running_var 512
	layer4.1.bn1.num_batches_tracked
	layer4.1.conv2.weight 512 512 3 3
	layer4.1.bn2.weight 512
	layer4.1.bn2.bias 512
	layer4.1.bn2.running_mean 512
	layer4.1.bn2.running_var 512
	layer4.1.bn2.num_batches_tracked
	head.0.weight 512 512
	head.0.bias 512
	head.1.weight 512
	head.1.bias 512
	head.1.running_mean 512
	head.1.running_var 512
	head.1.num_batches_tracked
	head.3.weight 128 512
	head.3.bias 128
`

func uploadRandom(b tensor.Backend, rng *rand.Rand, n int) (tensor.Buffer, []float32) {
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(rng.NormFloat64())
	}
	buf := b.Alloc(n)
	b.Upload(buf, host)
	return buf, host
}

func TestTensorNamesShapesAndKindsMatchTorchvision(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{}, 1)
	p := m.Params()
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(torchvisionResNet18), "\n") {
		want = append(want, strings.TrimSpace(line))
	}
	var got []string
	for _, tt := range p.Tensors() {
		dims := make([]string, len(tt.Shape))
		for i, d := range tt.Shape {
			dims[i] = strconv.Itoa(d)
		}
		got = append(got, strings.TrimSpace(tt.Name+" "+strings.Join(dims, " ")))
	}
	if !slices.Equal(got, want) {
		for i := 0; i < max(len(got), len(want)); i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Fatalf("tensor %d: got %q, want %q (%d tensors, want %d)", i, g, w, len(got), len(want))
			}
		}
	}
	// 11,168,832 backbone parameters (torchvision's 11,689,512 with a 3x3
	// stem and no fc) plus the head 262,656 + 1,024 + 65,664.
	if got, want := p.Len(), 11168832+329344; got != want {
		t.Errorf("trainable parameters %d, want %d", got, want)
	}
	for _, tt := range p.Tensors() {
		var want nn.Kind
		switch {
		case strings.Contains(tt.Name, "running_") || strings.HasSuffix(tt.Name, "num_batches_tracked"):
			want = nn.State
		case len(tt.Shape) >= 2:
			want = nn.Decayed // conv and linear weights
		default:
			want = nn.NotDecayed // BN weight and bias, linear bias
		}
		if tt.Kind != want {
			t.Errorf("%s is %v, want %v", tt.Name, tt.Kind, want)
		}
	}
	if m.FeatureDim() != 512 {
		t.Errorf("FeatureDim %d, want 512", m.FeatureDim())
	}
}

func TestInitialisationFollowsTorchvision(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{}, 7)
	p := m.Params()
	values := func(name string) []float64 {
		view, _ := p.Lookup(name)
		if view == nil {
			t.Fatalf("no tensor %s", name)
		}
		out := make([]float64, view.Len())
		for i, v := range cpu.Data(view) {
			out[i] = float64(v)
		}
		return out
	}
	moments := func(x []float64) (mean, sd float64) {
		for _, v := range x {
			mean += v
		}
		mean /= float64(len(x))
		for _, v := range x {
			sd += (v - mean) * (v - mean)
		}
		return mean, math.Sqrt(sd / float64(len(x)))
	}
	// kaiming_normal_(fan_out, relu): sd = sqrt(2 / (out * kh * kw)). With
	// n samples the sample sd has relative sd 1/sqrt(2n); allow 6 of them.
	for _, tc := range []struct {
		name   string
		fanOut int
	}{{"conv1.weight", 64 * 9}, {"layer1.0.conv1.weight", 64 * 9}, {"layer3.1.conv2.weight", 256 * 9}, {"layer4.0.downsample.0.weight", 512}} {
		x := values(tc.name)
		mean, sd := moments(x)
		want := math.Sqrt(2 / float64(tc.fanOut))
		tol := 6 / math.Sqrt(2*float64(len(x)))
		if math.Abs(sd/want-1) > tol || math.Abs(mean) > 6*want/math.Sqrt(float64(len(x))) {
			t.Errorf("%s: mean %.5f sd %.5f, want 0 and %.5f (rel tol %.3f)", tc.name, mean, sd, want, tol)
		}
	}
	// Linear: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias; sd = bound/sqrt(3).
	for _, tc := range []struct {
		name string
		in   int
	}{{"head.0.weight", 512}, {"head.3.weight", 512}, {"head.0.bias", 512}} {
		x := values(tc.name)
		bound := 1 / math.Sqrt(float64(tc.in))
		for _, v := range x {
			if math.Abs(v) > bound {
				t.Fatalf("%s: |%g| exceeds the bound %g", tc.name, v, bound)
			}
		}
		if len(x) > 1000 {
			_, sd := moments(x)
			if math.Abs(sd/(bound/math.Sqrt(3))-1) > 0.02 {
				t.Errorf("%s: sd %.5f, want %.5f", tc.name, sd, bound/math.Sqrt(3))
			}
		}
	}
	for name, want := range map[string]float64{"bn1.weight": 1, "bn1.bias": 0, "layer2.0.downsample.1.running_var": 1,
		"layer2.0.downsample.1.running_mean": 0, "head.1.weight": 1, "head.1.num_batches_tracked": 0} {
		for _, v := range values(name) {
			if v != want {
				t.Fatalf("%s holds %g, want all %g", name, v, want)
			}
		}
	}
	// Deterministic from the seed.
	again := resnet18.New(b, resnet18.Config{}, 7).Params()
	other := resnet18.New(b, resnet18.Config{}, 8).Params()
	if !slices.Equal(cpu.Data(p.Flat()), cpu.Data(again.Flat())) {
		t.Error("two models from seed 7 differ")
	}
	if slices.Equal(cpu.Data(p.Flat()), cpu.Data(other.Flat())) {
		t.Error("models from seeds 7 and 8 are equal")
	}
}

// convStem computes conv1 (3x3, stride 1, pad 1, no bias) of the first
// layer on the host in float64: x is (N,3,H,W), w (K,3,3,3).
func convStem(x, w []float32, n, k, h int) []float64 {
	y := make([]float64, n*k*h*h)
	for img := 0; img < n; img++ {
		for o := 0; o < k; o++ {
			for r := 0; r < h; r++ {
				for c := 0; c < h; c++ {
					var s float64
					for ch := 0; ch < 3; ch++ {
						for dr := -1; dr <= 1; dr++ {
							for dc := -1; dc <= 1; dc++ {
								rr, cc := r+dr, c+dc
								if rr < 0 || cc < 0 || rr >= h || cc >= h {
									continue
								}
								s += float64(x[((img*3+ch)*h+rr)*h+cc]) * float64(w[((o*3+ch)*3+dr+1)*3+dc+1])
							}
						}
					}
					y[((img*k+o)*h+r)*h+c] = s
				}
			}
		}
	}
	return y
}

func TestBatchNormStatistics(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, tiny, 3)
	p := m.Params()
	const views = 6
	rng := rand.New(rand.NewPCG(3, 3))
	x, xHost := uploadRandom(b, rng, views*m.InputLen())
	state := func() []float32 { return slices.Clone(cpu.Data(p.State())) }

	before := state()
	m.Forward(x, views, true, false)
	if !slices.Equal(before, state()) {
		t.Fatal("training-mode Forward with updateRunning=false changed the running statistics")
	}
	m.Forward(x, views, true, true)
	// One update from the initial (0, 1): running_mean = 0.1 batch mean,
	// running_var = 0.9 + 0.1 unbiased batch variance, as PyTorch.
	h, k := tiny.InputSize, 4
	wStem, _ := p.Lookup("conv1.weight")
	y := convStem(xHost, cpu.Data(wStem), views, k, h)
	runMean, _ := p.Lookup("bn1.running_mean")
	runVar, _ := p.Lookup("bn1.running_var")
	for c := 0; c < k; c++ {
		var sum, sumSq float64
		cnt := float64(views * h * h)
		for img := 0; img < views; img++ {
			for _, v := range y[(img*k+c)*h*h : (img*k+c+1)*h*h] {
				sum += v
			}
		}
		mean := sum / cnt
		for img := 0; img < views; img++ {
			for _, v := range y[(img*k+c)*h*h : (img*k+c+1)*h*h] {
				sumSq += (v - mean) * (v - mean)
			}
		}
		unbiased := sumSq / (cnt - 1)
		if got := float64(cpu.Data(runMean)[c]); math.Abs(got-0.1*mean) > 1e-5 {
			t.Errorf("bn1.running_mean[%d] = %.6f, want %.6f", c, got, 0.1*mean)
		}
		if got := float64(cpu.Data(runVar)[c]); math.Abs(got-(0.9+0.1*unbiased)) > 1e-4 {
			t.Errorf("bn1.running_var[%d] = %.6f, want %.6f", c, got, 0.9+0.1*unbiased)
		}
	}
	for _, tt := range p.Tensors() {
		if strings.HasSuffix(tt.Name, "num_batches_tracked") {
			if v := cpu.Data(tt.Value)[0]; v != 1 {
				t.Errorf("%s = %g after one update, want 1", tt.Name, v)
			}
		}
	}
}

func TestEvalModeUsesRunningStatistics(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, tiny, 4)
	const views = 4
	rng := rand.New(rand.NewPCG(4, 4))
	x, xHost := uploadRandom(b, rng, views*m.InputLen())
	for i := 0; i < 3; i++ { // non-trivial running statistics
		m.Forward(x, views, true, true)
	}
	in := m.InputLen()
	// Image 1 alone, in evaluation and in training mode (training mode
	// needs 2 views: pair it with image 0).
	one := b.Alloc(in)
	b.Upload(one, xHost[in:2*in])
	pair := b.Alloc(2 * in)
	b.Upload(pair, xHost[:2*in])

	featBatch := slices.Clone(cpu.Data(m.Features(x, views)))
	featOne := cpu.Data(m.Features(one, 1))
	f := m.FeatureDim()
	for j := 0; j < f; j++ {
		if d := math.Abs(float64(featBatch[f+j] - featOne[j])); d > 1e-5 {
			t.Fatalf("evaluation features of image 1 depend on the batch: %g vs %g", featBatch[f+j], featOne[j])
		}
	}
	zBatch := slices.Clone(cpu.Data(m.Forward(x, views, false, false)))
	zOne := cpu.Data(m.Forward(one, 1, false, false))
	pd := tiny.ProjDim
	for j := 0; j < pd; j++ {
		if d := math.Abs(float64(zBatch[pd+j] - zOne[j])); d > 1e-5 {
			t.Fatalf("evaluation projection of image 1 depends on the batch: %g vs %g", zBatch[pd+j], zOne[j])
		}
	}
	// Training mode, by contrast, normalises with batch statistics, so the
	// same image gives another output in another batch.
	zTrainBatch := slices.Clone(cpu.Data(m.Forward(x, views, true, false)))
	zTrainPair := cpu.Data(m.Forward(pair, 2, true, false))
	var diff float64
	for j := 0; j < pd; j++ {
		diff = math.Max(diff, math.Abs(float64(zTrainBatch[pd+j]-zTrainPair[pd+j])))
	}
	if diff < 1e-3 {
		t.Fatalf("training-mode output did not depend on the batch (max diff %g)", diff)
	}
	// Changing a running variance changes evaluation features.
	rv, _ := m.Params().Lookup("layer4.1.bn2.running_var")
	for i := range cpu.Data(rv) {
		cpu.Data(rv)[i] *= 4
	}
	featChanged := cpu.Data(m.Features(x, views))
	if slices.Equal(featChanged, featBatch) {
		t.Fatal("evaluation features ignore layer4.1.bn2.running_var")
	}
}

func TestInitialLossOfRandomImagesIsNearLog2NMinus1(t *testing.T) {
	// At initialisation the two views of an "image" are independent random
	// inputs, so positives are no closer than negatives and the expected
	// loss is log(2N-1) plus a small gap from the spread of the
	// similarities (measured: within 0.3% at width 1/8); we accept 3%.
	b := cpu.New()
	cfg := resnet18.Config{Width: 1.0 / 8, InputSize: 32}
	for _, seed := range []uint64{1, 2} {
		m := resnet18.New(b, cfg, seed)
		const n = 16
		rng := rand.New(rand.NewPCG(seed, 5))
		x, _ := uploadRandom(b, rng, 2*n*m.InputLen())
		dz := b.Alloc(2 * n * 128)
		z := m.Forward(x, 2*n, true, false)
		got := b.NTXent(n, 128, 0.5, false, z, dz).Loss
		t.Logf("seed %d: initial loss %.4f, log(2N-1) = %.4f", seed, got, math.Log(2*n-1))
		if want := math.Log(2*n - 1); math.Abs(got-want) > 0.03*want {
			t.Errorf("seed %d: initial loss %.4f, want log(2N-1) = %.4f within 3%%", seed, got, want)
		}
	}
}

func TestSGDOverfitsOneBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for a few seconds")
	}
	b := cpu.New()
	m := resnet18.New(b, tiny, 5)
	const n, steps = 8, 150
	rng := rand.New(rand.NewPCG(5, 5))
	x, _ := uploadRandom(b, rng, 2*n*m.InputLen())
	dz := b.Alloc(2 * n * tiny.ProjDim)
	opt, err := optim.New(b, m.Params(), optim.Config{Kind: optim.SGD, Momentum: 0.9, WeightDecay: 5e-4})
	if err != nil {
		t.Fatal(err)
	}
	var first, last float64
	for step := 0; step < steps; step++ {
		z := m.Forward(x, 2*n, true, true)
		res := b.NTXent(n, tiny.ProjDim, 0.5, false, z, dz)
		if step == 0 {
			first = res.Loss
		}
		last = res.Loss
		m.Backward(dz)
		opt.Step(0.2)
	}
	// The start is ~log(2N-1) = 2.7. The loss has a floor: each term is
	// log(1 + sum over the 2N-2 negatives of e^((s_neg - s_pos)/tau)),
	// smallest with s_pos = 1 and, by convexity, the N images at the
	// vertices of a regular simplex (mean negative similarity -1/(N-1)):
	// log(1 + (2N-2) e^((-1/(N-1) - 1)/tau)) = 0.8853 for N = 8, tau = 0.5.
	// Memorising the batch must get within 0.05 of it.
	floor := math.Log(1 + (2*n-2)*math.Exp((-1.0/(n-1)-1)/0.5))
	if last > floor+0.05 || last < floor-1e-3 {
		t.Fatalf("loss %.4f after %d steps on one batch (start %.4f); want within 0.05 above the floor %.4f", last, steps, first, floor)
	}
	t.Logf("loss %.4f -> %.4f in %d steps", first, last, steps)
}

func TestTrainingStepAllocatesNoActivations(t *testing.T) {
	b := cpu.New()
	cfg := resnet18.Config{Width: 1.0 / 8, ProjDim: 16, InputSize: 32}
	m := resnet18.New(b, cfg, 6)
	const n = 4
	rng := rand.New(rand.NewPCG(6, 6))
	x, _ := uploadRandom(b, rng, 2*n*m.InputLen())
	dz := b.Alloc(2 * n * cfg.ProjDim)
	step := func() {
		z := m.Forward(x, 2*n, true, true)
		b.NTXent(n, cfg.ProjDim, 0.5, false, z, dz)
		m.Backward(dz)
	}
	step() // plans the activations
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const steps = 5
	for i := 0; i < steps; i++ {
		step()
	}
	runtime.ReadMemStats(&after)
	// The activations of one step are ~5 MB here; what remains (the
	// loss's scratch, goroutines and messages of the backend kernels) does
	// not grow with the activations and must be far less.
	perStep := float64(after.TotalAlloc-before.TotalAlloc) / steps
	if perStep > 512<<10 {
		t.Fatalf("a training step allocates %.0f bytes on the Go heap, want < 512 KiB", perStep)
	}
	t.Logf("%.0f bytes allocated per step", perStep)
}

func TestPlansOfDifferentSizesShareTheArenaSafely(t *testing.T) {
	// Sizes 2, 6 (grows the arena), 2 again, 4: each pass must give the
	// gradient a fresh model gives for the same input.
	b := cpu.New()
	rng := rand.New(rand.NewPCG(8, 8))
	shared := resnet18.New(b, tiny, 8)
	in := shared.InputLen()
	inputs := map[int][]float32{}
	for _, n := range []int{1, 2, 3} {
		_, host := uploadRandom(b, rng, 2*n*in)
		inputs[n] = host
	}
	gradient := func(m *resnet18.Model, n int) ([]float32, float64) {
		x := b.Alloc(2 * n * in)
		b.Upload(x, inputs[n])
		dz := b.Alloc(2 * n * tiny.ProjDim)
		z := m.Forward(x, 2*n, true, false)
		loss := b.NTXent(n, tiny.ProjDim, 0.5, false, z, dz).Loss
		m.Backward(dz)
		return slices.Clone(cpu.Data(m.Params().Grad())), loss
	}
	for i, n := range []int{1, 3, 1, 2} {
		got, gotLoss := gradient(shared, n)
		want, wantLoss := gradient(resnet18.New(b, tiny, 8), n)
		if gotLoss != wantLoss || !slices.Equal(got, want) {
			t.Fatalf("pass %d (%d images): loss %g and gradient differ from a fresh model's (%g)", i, n, gotLoss, wantLoss)
		}
	}
}

func TestPanicsOnBadInput(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, tiny, 1)
	cases := map[string]func(){
		"short input":        func() { m.Forward(b.Alloc(10), 2, true, false) },
		"one training view":  func() { m.Forward(b.Alloc(m.InputLen()), 1, true, false) },
		"backward first":     func() { resnet18.New(b, tiny, 1).Backward(b.Alloc(2 * tiny.ProjDim)) },
		"dz of another size": func() { m.Forward(b.Alloc(2*m.InputLen()), 2, true, false); m.Backward(b.Alloc(3)) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no panic")
				} else if !strings.Contains(fmt.Sprint(r), "resnet18") {
					t.Fatalf("panic %q does not name the package", r)
				}
			}()
			f()
		})
	}
	if err := (resnet18.Config{Width: -1}).Validate(); err == nil {
		t.Error("Validate accepted width -1")
	}
}

// BenchmarkTrainStep times one training step (forward, loss, backward, SGD)
// of a quarter-width network on 16 images (32 views); run with
// -benchtime 3x. `simclr bench` times the full network.
func BenchmarkTrainStep(b *testing.B) {
	be := cpu.New()
	cfg := resnet18.Config{Width: 0.25}
	m := resnet18.New(be, cfg, 1)
	const n = 16
	rng := rand.New(rand.NewPCG(1, 1))
	x, _ := uploadRandom(be, rng, 2*n*m.InputLen())
	dz := be.Alloc(2 * n * 128)
	opt, err := optim.New(be, m.Params(), optim.Config{Kind: optim.SGD, Momentum: 0.9, WeightDecay: 5e-4})
	if err != nil {
		b.Fatal(err)
	}
	step := func() {
		z := m.Forward(x, 2*n, true, true)
		be.NTXent(n, 128, 0.5, true, z, dz)
		m.Backward(dz)
		opt.Step(0.01)
	}
	step() // plans the activations and grows the backend's workspace
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(2*n*b.N)/b.Elapsed().Seconds(), "views/s")
}

// A kNN monitor between a training forward and its backward (or between
// two steps) frees only the evaluation activations: the training pass's
// saved activations survive and its gradient is unchanged.
func TestFreeEvalPlansKeepsTrainingActivations(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, tiny, 3)
	const n = 4
	rng := rand.New(rand.NewPCG(3, 4))
	x, _ := uploadRandom(b, rng, 2*n*m.InputLen())
	dz := b.Alloc(2 * n * tiny.ProjDim)
	gradient := func(evalBetween bool) []float32 {
		z := m.Forward(x, 2*n, true, false)
		b.NTXent(n, tiny.ProjDim, 0.5, false, z, dz)
		if evalBetween {
			m.Features(x, 2*n)
			m.FreeEvalPlans()
		}
		m.Backward(dz)
		return slices.Clone(cpu.Data(m.Params().Grad()))
	}
	want := gradient(false)
	got := gradient(true)
	if !slices.Equal(want, got) {
		t.Fatal("the gradient changed when evaluation activations were planned and freed between forward and backward")
	}
}
