package resnet18_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/internal/ref"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

// The whole-model gradient check compares the backend's float32 gradient
// with central differences of a float64 transcription of the network
// (refNet below), in random directions, every trainable tensor separately:
//
//	fd = (L64(w + h u) - L64(w - h u)) / 2h   versus   <g, u>,
//
// u with independent standard normal entries over the tensor, so that for
// any vector e, <e, u> ~ N(0, |e|^2). A float32 loss cannot do this: batch
// norm over 8 views and some 70,000 ReLUs make the loss kinked at every
// scale above about 1e-7 (a step of 1e-6 already crosses a kink in about
// half of the directions, off by up to 1% of |g|), and float32 rounding of
// the loss (1e-7) divided by so small a step swamps the difference; that
// is why the old coordinate check needed 5% + 0.01 and a 90% pass rate. In
// float64, steps of 1e-8 and 1e-9 leave a rounding error of about 1e-6 |g|,
// and the first of gradSteps that agrees is taken (a kink inside the step
// only adds error, so a correct gradient agrees at one of them). What is
// left is the float32 rounding of the backward pass: at most 1.2e-4 |g_t|
// on any tensor in the four cases below (the test logs the worst; batch
// and group-norm biases and weights, sums over 2,048 terms that largely
// cancel, are the largest). So every tensor must pass, in every direction,
//
//	|fd - <g,u>| <= gradTol |g_t| + gradAbs,   gradTol = 1e-3, gradAbs = 1e-5.
//
// A wrong wiring changes a tensor's gradient by some e; one direction
// misses it only if |<e,u>| < gradTol |g_t|, which for |e| >= 0.1 |g_t| has
// probability P(|N(0,1)| < 0.01) < 0.8%, and both directions < 6.4e-5 —
// per tensor, while a mis-wired batch norm or shortcut corrupts every
// tensor before it. TestGradientCheckCatchesBrokenBackward shows such
// mis-wirings change the upstream gradients by 1% to 300% of their norm
// and fail. gradAbs covers tensors whose true gradient is zero
// (head.0.bias, cancelled by the batch norm after it), where the float32
// result is ~1e-7.
const (
	gradTol  = 1e-3
	gradAbs  = 1e-5
	gradDirs = 2
)

// gradSteps are the central-difference steps h, the safest first.
var gradSteps = []float64{1e-8, 1e-9, 1e-7}

// tiny is a narrow network small enough for finite differences.
var tiny = resnet18.Config{Width: 1.0 / 16, ProjDim: 16, InputSize: 16}

// gradTau is the NT-Xent temperature of the gradient checks.
const gradTau = 0.5

// refNet is the network of resnet18.go written again in float64 on the
// host, from docs/definitions.md, section 6 "Training recipe" (batch norm)
// and docs/definitions.md, section 4 "Contrastive learning as a biased
// oracle" (group norm with nn.Groups groups and a head that first normalises
// the features with the running statistics of head.0), reading the weights
// by tensor name.
type refNet struct {
	p      *nn.Params
	w      []float64 // all trainable weights, laid out as Params().Flat()
	state  []float32 // running statistics (used by the group-norm head only)
	views  int
	input  []float64 // (views, 3, size, size)
	size   int
	widths [4]int
	norm   resnet18.Norm
}

func newRefNet(m *resnet18.Model, x []float32, views int) *refNet {
	p := m.Params()
	w32 := cpu.Data(p.Flat())
	r := &refNet{p: p, w: make([]float64, len(w32)), views: views, size: m.Config().InputSize, norm: m.Config().Norm}
	for i, v := range w32 {
		r.w[i] = float64(v)
	}
	r.state = slices.Clone(cpu.Data(p.State()))
	r.input = make([]float64, len(x))
	for i, v := range x {
		r.input[i] = float64(v)
	}
	for i := range r.widths {
		r.widths[i] = p.Tensor(fmt.Sprintf("layer%d.0.conv1.weight", i+1)).Shape[0]
	}
	return r
}

// stateOf is a state tensor (running statistics) by name.
func (r *refNet) stateOf(name string) []float32 {
	t := r.p.Tensor(name)
	if t == nil || t.Kind != nn.State {
		panic("refNet: no state tensor " + name)
	}
	return r.state[t.Offset : t.Offset+t.Len]
}

func (r *refNet) param(name string) []float64 {
	t := r.p.Tensor(name)
	if t == nil {
		panic("refNet: no tensor " + name)
	}
	return r.w[t.Offset : t.Offset+t.Len]
}

// conv is a 2-D convolution without bias: x (n,c,h,h), w (k,c,f,f).
func conv(x []float64, n, c, h int, w []float64, k, f, stride, pad int) ([]float64, int) {
	oh := (h+2*pad-f)/stride + 1
	y := make([]float64, n*k*oh*oh)
	for img := 0; img < n; img++ {
		for o := 0; o < k; o++ {
			for r := 0; r < oh; r++ {
				for col := 0; col < oh; col++ {
					var s float64
					for ch := 0; ch < c; ch++ {
						for dr := 0; dr < f; dr++ {
							for dc := 0; dc < f; dc++ {
								rr, cc := r*stride+dr-pad, col*stride+dc-pad
								if rr < 0 || cc < 0 || rr >= h || cc >= h {
									continue
								}
								s += x[((img*c+ch)*h+rr)*h+cc] * w[((o*c+ch)*f+dr)*f+dc]
							}
						}
					}
					y[((img*k+o)*oh+r)*oh+col] = s
				}
			}
		}
	}
	return y, oh
}

// batchNorm normalises x (n,c,hw) in place with the batch mean and biased
// variance, eps 1e-5, then scales by gamma and shifts by beta.
func batchNorm(x []float64, n, c, hw int, gamma, beta []float64) {
	for ch := 0; ch < c; ch++ {
		var sum, sq float64
		for img := 0; img < n; img++ {
			for _, v := range x[(img*c+ch)*hw : (img*c+ch+1)*hw] {
				sum += v
			}
		}
		mean := sum / float64(n*hw)
		for img := 0; img < n; img++ {
			for _, v := range x[(img*c+ch)*hw : (img*c+ch+1)*hw] {
				sq += (v - mean) * (v - mean)
			}
		}
		inv := 1 / math.Sqrt(sq/float64(n*hw)+1e-5)
		for img := 0; img < n; img++ {
			seg := x[(img*c+ch)*hw : (img*c+ch+1)*hw]
			for i, v := range seg {
				seg[i] = gamma[ch]*(v-mean)*inv + beta[ch]
			}
		}
	}
}

// groupNorm normalises x (n,c,hw) in place per image over each of g
// groups of c/g channels, eps 1e-5, then scales and shifts per channel.
func groupNorm(x []float64, n, c, hw, g int, gamma, beta []float64) {
	per := c / g * hw // values in one group of one image, contiguous
	for img := 0; img < n; img++ {
		for grp := 0; grp < g; grp++ {
			seg := x[(img*c+grp*(c/g))*hw : (img*c+grp*(c/g))*hw+per]
			var sum, sq float64
			for _, v := range seg {
				sum += v
			}
			mean := sum / float64(per)
			for _, v := range seg {
				sq += (v - mean) * (v - mean)
			}
			inv := 1 / math.Sqrt(sq/float64(per)+1e-5)
			for i, v := range seg {
				ch := grp*(c/g) + i/hw
				seg[i] = gamma[ch]*(v-mean)*inv + beta[ch]
			}
		}
	}
}

func relu(x []float64) {
	for i, v := range x {
		x[i] = max(v, 0)
	}
}

// linear is y = x W^T + b, x (n,in), W (out,in).
func linear(x []float64, n, in int, w, b []float64, out int) []float64 {
	y := make([]float64, n*out)
	for i := 0; i < n; i++ {
		for o := 0; o < out; o++ {
			s := b[o]
			for k := 0; k < in; k++ {
				s += x[i*in+k] * w[o*in+k]
			}
			y[i*out+o] = s
		}
	}
	return y
}

// loss is the training-mode forward pass and NT-Xent loss (multilevel:
// L_B - (L_B1 + L_B2)/2) in float64.
func (r *refNet) loss(multilevel bool) float64 {
	n, h := r.views, r.size
	cbn := func(x []float64, c, hw int, name string) {
		gamma, beta := r.param(name+".weight"), r.param(name+".bias")
		switch {
		case r.norm != resnet18.NormGroup:
			batchNorm(x, n, c, hw, gamma, beta)
		default:
			groupNorm(x, n, c, hw, nn.Groups(c), gamma, beta)
		}
	}
	stem := r.widths[0]
	x, _ := conv(r.input, n, 3, h, r.param("conv1.weight"), stem, 3, 1, 1)
	cbn(x, stem, h*h, "bn1")
	relu(x)
	in := stem
	for s, out := range r.widths {
		for i := 0; i < 2; i++ {
			name := fmt.Sprintf("layer%d.%d", s+1, i)
			stride := 1
			if s > 0 && i == 0 {
				stride = 2
			}
			a, oh := conv(x, n, in, h, r.param(name+".conv1.weight"), out, 3, stride, 1)
			cbn(a, out, oh*oh, name+".bn1")
			relu(a)
			a, _ = conv(a, n, out, oh, r.param(name+".conv2.weight"), out, 3, 1, 1)
			cbn(a, out, oh*oh, name+".bn2")
			short := x
			if stride != 1 || in != out {
				short, _ = conv(x, n, in, h, r.param(name+".downsample.0.weight"), out, 1, stride, 0)
				cbn(short, out, oh*oh, name+".downsample.1")
			}
			for j := range a {
				a[j] += short[j]
			}
			relu(a)
			x, in, h = a, out, oh
		}
	}
	feat := make([]float64, n*in)
	for j := range feat {
		for _, v := range x[j*h*h : (j+1)*h*h] {
			feat[j] += v / float64(h*h)
		}
	}
	var z []float64
	if r.norm != resnet18.NormGroup {
		z = linear(feat, n, in, r.param("head.0.weight"), r.param("head.0.bias"), in)
		cbn(z, in, 1, "head.1")
	} else {
		// head.0: the running statistics are constants of the function.
		mean, variance := r.stateOf("head.0.running_mean"), r.stateOf("head.0.running_var")
		for j := range feat {
			c := j % in
			feat[j] = (feat[j] - float64(mean[c])) / math.Sqrt(float64(variance[c])+1e-5)
		}
		z = linear(feat, n, in, r.param("head.1.weight"), r.param("head.1.bias"), in)
	}
	relu(z)
	proj := len(r.param("head.3.bias"))
	z = linear(z, n, in, r.param("head.3.weight"), r.param("head.3.bias"), proj)
	return ref.NTXentLoss64(n/2, proj, gradTau, multilevel, z)
}

// tensorCheck is one tensor's worst direction.
type tensorCheck struct {
	name          string
	worst, gnorm  float64 // max |fd - <g,u>| over the directions; |g_t|
	fd, predicted float64 // in the worst direction
}

func (c tensorCheck) pass() bool { return c.worst <= gradTol*c.gnorm+gradAbs }

// directionalCheck runs gradDirs directions per trainable tensor of ref's
// network against grad (the backend's gradient, laid out as Flat). Each
// direction is tried at the step sizes gradSteps in turn until one agrees:
// an error above tolerance at every step is a wrong gradient, not a kink.
// With firstFailure it stops at the first tensor that fails.
func directionalCheck(ref *refNet, grad []float32, multilevel, firstFailure bool, rng *rand.Rand) []tensorCheck {
	var out []tensorCheck
	for _, t := range ref.p.Tensors() {
		if !t.Trainable() {
			continue
		}
		w := ref.w[t.Offset : t.Offset+t.Len]
		g := grad[t.Offset : t.Offset+t.Len]
		orig := slices.Clone(w)
		c := tensorCheck{name: t.Name}
		for _, v := range g {
			c.gnorm += float64(v) * float64(v)
		}
		c.gnorm = math.Sqrt(c.gnorm)
		u := make([]float64, len(w))
		for dir := 0; dir < gradDirs; dir++ {
			var predicted float64
			for i := range u {
				u[i] = rng.NormFloat64()
				predicted += float64(g[i]) * u[i]
			}
			best, bestFD := math.Inf(1), 0.0
			for _, h := range gradSteps {
				for i := range w {
					w[i] = orig[i] + h*u[i]
				}
				up := ref.loss(multilevel)
				for i := range w {
					w[i] = orig[i] - h*u[i]
				}
				down := ref.loss(multilevel)
				copy(w, orig)
				fd := (up - down) / (2 * h)
				if e := math.Abs(fd - predicted); e < best {
					best, bestFD = e, fd
				}
				if best <= gradTol*c.gnorm+gradAbs {
					break
				}
			}
			if best >= c.worst {
				c.worst, c.fd, c.predicted = best, bestFD, predicted
			}
		}
		out = append(out, c)
		if firstFailure && !c.pass() {
			break
		}
	}
	return out
}

// gradientOf runs the backend forward and backward on x (views images) and
// returns the loss and a copy of the gradient.
func gradientOf(b tensor.Backend, m *resnet18.Model, x tensor.Buffer, views int, multilevel bool) (float64, []float32) {
	proj := m.Config().ProjDim
	dz := b.Alloc(views * proj)
	defer b.Free(dz)
	z := m.Forward(x, views, true, false)
	loss := b.NTXent(views/2, proj, gradTau, multilevel, z, dz).Loss
	m.Backward(dz)
	return loss, slices.Clone(cpu.Data(m.Params().Grad()))
}

// gradCase builds the tiny network with norm on b with a random batch of 8
// views.
func gradCase(b tensor.Backend, norm resnet18.Norm, seed uint64) (*resnet18.Model, tensor.Buffer, []float32, *rand.Rand) {
	cfg := tiny
	cfg.Norm = norm
	m := resnet18.New(b, cfg, seed)
	rng := rand.New(rand.NewPCG(seed, 99))
	x, host := uploadRandom(b, rng, 8*m.InputLen())
	// With group norm, running statistics of the head's norm that are not
	// the identity's (mean 0, variance 1), so that the check sees a wrong
	// scale or offset: those of the batch itself.
	if err := m.InitHeadFromData(x, 8); err != nil {
		panic(err)
	}
	return m, x, host, rng
}

func TestGradientMatchesFiniteDifferences(t *testing.T) {
	// With group norm the same check covers GroupNorm's backward in every
	// position (stem, blocks, downsample, head).
	for _, tc := range []struct {
		name       string
		norm       resnet18.Norm
		multilevel bool
		seed       uint64
	}{
		{"plain", resnet18.NormBatch, false, 1}, {"multilevel", resnet18.NormBatch, true, 2},
		{"group/plain", resnet18.NormGroup, false, 3}, {"group/multilevel", resnet18.NormGroup, true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := cpu.New()
			m, x, host, rng := gradCase(b, tc.norm, tc.seed)
			loss, grad := gradientOf(b, m, x, 8, tc.multilevel)
			ref := newRefNet(m, host, 8)
			// The transcription computes the same function: float32
			// against float64 on the same weights.
			if want := ref.loss(tc.multilevel); math.Abs(loss-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("backend loss %.7f, float64 reference %.7f: the reference is not the model's network", loss, want)
			}
			var worstRel float64
			var worstName string
			for _, c := range directionalCheck(ref, grad, tc.multilevel, false, rng) {
				if !c.pass() {
					t.Errorf("%s: <g,u> = %.8g, finite differences %.8g: off by %.3g, allowed %.3g (|g| = %.4g)",
						c.name, c.predicted, c.fd, c.worst, gradTol*c.gnorm+gradAbs, c.gnorm)
				}
				if c.gnorm > 1e-3 && c.worst/c.gnorm > worstRel {
					worstRel, worstName = c.worst/c.gnorm, c.name
				}
			}
			t.Logf("worst |fd - <g,u>| / |g| over all tensors and %d directions each: %.2g, %s (tolerance %g)", gradDirs, worstRel, worstName, gradTol)
		})
	}
}

// faultyBackend is the CPU backend with one mis-wired backward step, to
// show that the gradient check catches it.
type faultyBackend struct {
	tensor.Backend
	inBackward bool
	// bnGamma, when set, is the gamma of the batch norm whose backward drops
	// the x_hat * mean(dy x_hat) term of dx (dgamma and dbeta stay right).
	bnGamma *float32
	// dropAdd > 0 makes the dropAdd-th Add of the backward pass return its
	// first operand: a residual gradient that is not added.
	dropAdd, adds int
}

func (f *faultyBackend) Add(out, a, b tensor.Buffer) {
	if f.inBackward {
		f.adds++
		if f.adds == f.dropAdd {
			f.Backend.Copy(out, a)
			return
		}
	}
	f.Backend.Add(out, a, b)
}

func (f *faultyBackend) BatchNormBackward(s tensor.BNShape, x, dy, gamma, mean, invStd, dx, dgamma, dbeta tensor.Buffer) {
	f.Backend.BatchNormBackward(s, x, dy, gamma, mean, invStd, dx, dgamma, dbeta)
	gd := cpu.Data(gamma)
	if f.bnGamma == nil || &gd[0] != f.bnGamma {
		return
	}
	xd, dyd, dxd, md, id := cpu.Data(x), cpu.Data(dy), cpu.Data(dx), cpu.Data(mean), cpu.Data(invStd)
	for c := 0; c < s.C; c++ {
		var m float64 // mean over the channel of dy * x_hat
		for n := 0; n < s.N; n++ {
			for j := (n*s.C + c) * s.HW; j < (n*s.C+c+1)*s.HW; j++ {
				m += float64(dyd[j]) * float64(xd[j]-md[c]) * float64(id[c])
			}
		}
		m /= float64(s.N * s.HW)
		for n := 0; n < s.N; n++ {
			for j := (n*s.C + c) * s.HW; j < (n*s.C+c+1)*s.HW; j++ {
				xhat := float64(xd[j]-md[c]) * float64(id[c])
				dxd[j] += float32(float64(gd[c]) * float64(id[c]) * xhat * m)
			}
		}
	}
}

func TestGradientCheckCatchesBrokenBackward(t *testing.T) {
	for _, tc := range []struct {
		name string
		// bn names the batch norm whose dx drops a term; dropAdd the
		// backward Add (counted from the last block) that is skipped;
		// scale names a tensor whose gradient is multiplied by 1.02.
		bn, scale string
		dropAdd   int
	}{
		{name: "batch norm dx without the x_hat term", bn: "layer3.0.bn2"},
		{name: "stem batch norm dx without the x_hat term", bn: "bn1"},
		{name: "residual gradient of the last block not added", dropAdd: 1},
		{name: "residual gradient of a middle block not added", dropAdd: 4},
		{name: "one tensor's gradient 2% too large", scale: "layer2.1.conv2.weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &faultyBackend{Backend: cpu.New(), dropAdd: tc.dropAdd}
			m, x, host, rng := gradCase(f, resnet18.NormBatch, 3)
			if tc.bn != "" {
				gt := m.Params().Tensor(tc.bn + ".weight")
				f.bnGamma = &cpu.Data(m.Params().Flat())[gt.Offset]
			}
			proj := m.Config().ProjDim
			dz := f.Alloc(8 * proj)
			z := m.Forward(x, 8, true, false)
			f.NTXent(4, proj, gradTau, false, z, dz)
			f.inBackward = true
			m.Backward(dz)
			f.inBackward = false
			grad := slices.Clone(cpu.Data(m.Params().Grad()))
			if tc.scale != "" {
				st := m.Params().Tensor(tc.scale)
				for i := st.Offset; i < st.Offset+st.Len; i++ {
					grad[i] *= 1.02
				}
			}
			var failed []string
			for _, c := range directionalCheck(newRefNet(m, host, 8), grad, false, true, rng) {
				if !c.pass() {
					failed = append(failed, fmt.Sprintf("%s (off by %.2g |g|)", c.name, c.worst/c.gnorm))
				}
			}
			if len(failed) == 0 {
				t.Fatal("every tensor passed the gradient check with a broken backward pass")
			}
			t.Logf("%d tensors fail: %s", len(failed), strings.Join(failed, ", "))
		})
	}
}
