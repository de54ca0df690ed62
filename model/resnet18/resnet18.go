// Package resnet18 is the SimCLR network of docs/definitions.md, section 6
// "Training recipe": a ResNet-18 for 32x32 inputs (3x3 stride-1 stem, no max
// pool, BasicBlock stages [2,2,2,2]) and the projection head Linear ->
// BatchNorm1d -> ReLU -> Linear, with an explicit forward and backward pass
// over a tensor.Backend.
//
// Tensor names are torchvision's resnet18 names (conv1.weight,
// layer2.0.downsample.1.running_mean, ...) plus head.0, head.1 and head.3
// for the head, so checkpoints load into PyTorch. With Config.Norm "group"
// every batch norm of the backbone is a GroupNorm under the same name (as
// torchvision's resnet18(norm_layer=...) names it), with weight and bias and
// no running statistics, and the head is RunningNorm -> Linear -> ReLU ->
// Linear (head.0, head.1, head.3), see Config.Norm. Activations are planned
// once per batch size, carved from one arena per mode (training,
// evaluation) that is as large as the largest plan, and reused, so a
// steady-state step allocates nothing on the Go heap.
package resnet18

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

// Config sets the size of the network. The zero value of each field takes
// its default.
type Config struct {
	// Width multiplies the stage widths 64, 128, 256, 512 (1.0 is
	// torchvision's resnet18; 0.0625 a tiny network for tests).
	Width float64
	// ProjDim is the output dimension of the projection head (128).
	ProjDim int
	// InputSize is the input height and width in pixels (32).
	InputSize int
	// Norm is the normalisation after every convolution and in the head:
	// "batch" (the default; BatchNorm2d, and BatchNorm1d in the head) or
	// "group": GroupNorm with nn.Groups(C) = min(32, C) groups after every
	// convolution, and a head that standardises the pooled features with
	// running statistics only (head.0, an nn.RunningNorm) before Linear ->
	// ReLU -> Linear (head.1, head.3); InitHeadFromData sets the statistics
	// at the start of a run. With group norm each view's output is
	// independent of its batch, which makes the one-forward multilevel
	// correction exact (docs/definitions.md, section 4 "Contrastive learning as
	// a biased oracle").
	//
	// Why the group-norm head normalises with running statistics: the
	// pooled backbone features of all images share a large common component
	// (they are averages of ReLU outputs; mean pairwise cosine 0.98 at
	// initialisation, width 1/8, real CIFAR images). Batch norm in the head
	// subtracts the batch mean and so removes it; a GroupNorm normalises
	// each image's features on their own and cannot, so every L2-normalised
	// projection was nearly the same vector and the network did not learn.
	// A fixed affine map fitted once removes it only until training moves
	// the common component: with 16-image steps it moved by more than the
	// images' spread within a few iterations and the projections collapsed
	// again. Running statistics follow it (HeadMomentum).
	Norm string
}

// HeadMomentum is the momentum of the group-norm head's running
// statistics (head.0): 0.5, so that they follow the features within a few
// steps. With PyTorch's 0.1 they lag by about ten steps, and in that time
// 16-image steps move the features' common component by more than their
// spread: at batch 16 (width 1/8, lr 0.5) the network collapsed with 0.1
// and learned with 0.5 and 1 (BENCHMARKS.md, "Group norm at small batches").
const HeadMomentum = 0.5

// Normalisations Config.Norm accepts.
const (
	NormBatch = "batch"
	NormGroup = "group"
)

func (c Config) withDefaults() Config {
	if c.Width == 0 {
		c.Width = 1
	}
	if c.ProjDim == 0 {
		c.ProjDim = 128
	}
	if c.InputSize == 0 {
		c.InputSize = 32
	}
	if c.Norm == "" {
		c.Norm = NormBatch
	}
	return c
}

// Validate reports a configuration the network cannot be built with.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Width <= 0 || c.Width > 16:
		return fmt.Errorf("width %g: must be in (0, 16]; 1 is the standard ResNet-18", c.Width)
	case c.ProjDim < 1:
		return fmt.Errorf("projection dimension %d: must be positive (128 is standard)", c.ProjDim)
	case c.InputSize < 8:
		return fmt.Errorf("input size %d: must be at least 8 pixels (three stride-2 stages)", c.InputSize)
	case c.Norm != NormBatch && c.Norm != NormGroup:
		return fmt.Errorf("normalisation %q: use %q or %q", c.Norm, NormBatch, NormGroup)
	}
	return nil
}

// block is a torchvision BasicBlock: conv3x3(stride) -> BN -> ReLU ->
// conv3x3 -> BN, plus the shortcut (identity, or 1x1 stride conv -> BN),
// then ReLU.
type block struct {
	conv1, conv2, down *nn.Conv2d
	bn1, bn2, downBN   nn.Norm
	in, out, stride    int
	hIn, hOut          int // input and output spatial size (square)
}

// Model is the backbone plus projection head on one backend.
type Model struct {
	backend tensor.Backend
	cfg     Config
	params  *nn.Params

	conv1  *nn.Conv2d
	bn1    nn.Norm
	blocks []*block
	fc1    *nn.Linear
	headBN nn.Norm // nil with group norm (see headIn)
	// headIn is the group-norm head's first layer (head.0): the pooled
	// features normalised with running statistics only; nil with batch
	// norm.
	headIn *nn.RunningNorm
	fc2    *nn.Linear

	stem     int // stem channels
	featDim  int // backbone output channels
	lastHW   int // spatial size of the last stage (4 for 32x32 input)
	maxPerIm int // largest activation per view (elements)

	arenas [2]arena // evaluation, training
	last   *plan    // plan of the last training-mode Forward
}

// New builds the network on b with torchvision's initialisation drawn from
// seed. It panics on an invalid configuration (see Config.Validate).
func New(b tensor.Backend, cfg Config, seed uint64) *Model {
	if err := cfg.Validate(); err != nil {
		panic("resnet18.New: " + err.Error())
	}
	cfg = cfg.withDefaults()
	widths := [4]int{}
	for i, w := range [4]int{64, 128, 256, 512} {
		widths[i] = max(1, int(math.Round(float64(w)*cfg.Width)))
	}
	m := &Model{backend: b, cfg: cfg, params: nn.NewParams()}
	p := m.params
	newNorm := func(name string, c int) nn.Norm {
		if cfg.Norm == NormGroup {
			return nn.NewGroupNorm(p, name, c, nn.Groups(c))
		}
		return nn.NewBatchNorm(p, name, c)
	}
	m.stem = widths[0]
	m.conv1 = nn.NewConv2d(p, "conv1", 3, m.stem, 3, 1, 1)
	m.bn1 = newNorm("bn1", m.stem)
	in, h := m.stem, cfg.InputSize
	m.maxPerIm = m.stem * h * h
	for stage, out := range widths {
		for i := 0; i < 2; i++ {
			stride := 1
			if stage > 0 && i == 0 {
				stride = 2
			}
			name := fmt.Sprintf("layer%d.%d", stage+1, i)
			hOut := (h+2-3)/stride + 1
			bl := &block{in: in, out: out, stride: stride, hIn: h, hOut: hOut}
			bl.conv1 = nn.NewConv2d(p, name+".conv1", in, out, 3, stride, 1)
			bl.bn1 = newNorm(name+".bn1", out)
			bl.conv2 = nn.NewConv2d(p, name+".conv2", out, out, 3, 1, 1)
			bl.bn2 = newNorm(name+".bn2", out)
			if stride != 1 || in != out {
				bl.down = nn.NewConv2d(p, name+".downsample.0", in, out, 1, stride, 0)
				bl.downBN = newNorm(name+".downsample.1", out)
			}
			m.blocks = append(m.blocks, bl)
			m.maxPerIm = max(m.maxPerIm, out*hOut*hOut, in*h*h)
			in, h = out, hOut
		}
	}
	m.featDim, m.lastHW = in, h
	if cfg.Norm == NormBatch {
		m.fc1 = nn.NewLinear(p, "head.0", m.featDim, m.featDim)
		m.headBN = nn.NewBatchNorm(p, "head.1", m.featDim)
	} else {
		m.headIn = nn.NewRunningNorm(p, "head.0", m.featDim, HeadMomentum)
		m.fc1 = nn.NewLinear(p, "head.1", m.featDim, m.featDim)
	}
	m.fc2 = nn.NewLinear(p, "head.3", m.featDim, cfg.ProjDim)
	p.Allocate(b)
	p.Initialize(seed)
	if m.headIn != nil {
		m.headIn.Bind(b)
	}
	return m
}

// Config is the configuration with defaults filled in.
func (m *Model) Config() Config { return m.cfg }

// Params holds every tensor of the network.
func (m *Model) Params() *nn.Params { return m.params }

// FeatureDim is the size of the backbone features (512 x Width).
func (m *Model) FeatureDim() int { return m.featDim }

// InputLen is the number of floats of one view (3 x InputSize^2).
func (m *Model) InputLen() int { return 3 * m.cfg.InputSize * m.cfg.InputSize }

// FLOPs is the forward cost of views views in floating-point operations
// (2 x multiply-adds of the convolutions and linear layers); a training step
// costs about three times as much.
func (m *Model) FLOPs(views int) float64 {
	s := m.cfg.InputSize
	f := m.conv1.Shape(views, s, s).FLOPs()
	for _, bl := range m.blocks {
		f += bl.conv1.Shape(views, bl.hIn, bl.hIn).FLOPs()
		f += bl.conv2.Shape(views, bl.hOut, bl.hOut).FLOPs()
		if bl.down != nil {
			f += bl.down.Shape(views, bl.hIn, bl.hIn).FLOPs()
		}
	}
	return f + m.fc1.FLOPs(views) + m.fc2.FLOPs(views)
}

// blockActs are the activations of one block in one plan. In a training
// plan every buffer is distinct and kept for the backward pass; in an
// evaluation plan they rotate through four shared buffers.
type blockActs struct {
	in     tensor.Buffer // block input (the previous block's out)
	c1     tensor.Buffer // conv1 output = bn1 input
	r1     tensor.Buffer // relu(bn1(c1)), conv2 input
	c2     tensor.Buffer // conv2 output = bn2 input
	out    tensor.Buffer // relu(bn2(c2) + shortcut)
	cd     tensor.Buffer // downsample conv output = downsample BN input
	dsOut  tensor.Buffer // downsample BN output (scratch)
	s1, s2 tensor.ConvShape
	sd     tensor.ConvShape
	bnS    tensor.BNShape // bn1, bn2 and downsample BN share it
	saved1 nn.BNSaved
	saved2 nn.BNSaved
	savedD nn.BNSaved
	g      blockGrads // training plans only
}

// A training plan holds three gradient buffers of the largest activation
// size: two that alternate as a block's output gradient and its input
// gradient (block i's dIn is block i-1's dOut), and a scratch for the
// gradients inside a block. blockGrads are one block's views of them, each
// cut to its length; Backward's table says when each is written and read.
type blockGrads struct {
	// dOut is d(block output), in this block's "out" buffer.
	dOut tensor.Buffer
	// dC2, dC1 and dCD are d(conv2 output), d(conv1 output) and
	// d(downsample conv output), all in the scratch buffer: each is dead
	// before the next is written.
	dC2, dC1, dCD tensor.Buffer
	// dR1 is d(relu1 output) and dIn d(block input), both in this block's
	// "in" buffer: conv1's backward reads dC1, not dR1, when it writes dIn.
	dR1, dIn tensor.Buffer
	// dShortcut is the downsample conv's d(block input), in the "out"
	// buffer at input length: dOut is dead once the downsample BN's
	// backward has read it.
	dShortcut tensor.Buffer
}

// plan is every buffer a pass over views views needs.
type plan struct {
	views int
	train bool
	x     tensor.Buffer // the caller's input of the last Forward

	stemS     tensor.ConvShape
	stemBN    tensor.BNShape
	c0, out0  tensor.Buffer
	stemSaved nn.BNSaved
	blocks    []blockActs

	feat, h1, r, z tensor.Buffer // (N,F), (N,F), (N,F), (N,P)
	// u is the group-norm head's normalised features (N,F), the input of
	// its first linear layer, and du its gradient (training plans).
	u, du       tensor.Buffer
	headInS     tensor.BNShape
	headInSaved nn.BNSaved
	headBNS     tensor.BNShape
	headSaved   nn.BNSaved
	dr, dh1, df tensor.Buffer // head gradients (training plans)
	// dStem is d(stem output) = block 0's dIn cut to the stem length, and
	// dStemC d(stem conv output) in the scratch buffer (training plans).
	dStem, dStemC tensor.Buffer
}

// carver hands out consecutive pieces of an arena. With a nil arena it
// only counts, so a plan can be measured before its arena exists.
type carver struct {
	b     tensor.Backend
	arena tensor.Buffer
	used  int
}

func (c *carver) take(n int) tensor.Buffer {
	off := c.used
	c.used += n
	if c.arena == nil {
		return nil
	}
	return c.b.Slice(c.arena, off, n)
}

func (c *carver) saved(norm nn.Norm, views int) nn.BNSaved {
	n := norm.SavedLen(views)
	return nn.BNSaved{Mean: c.take(n), InvStd: c.take(n)}
}

// arena is the backend memory that every plan of one mode (training or
// evaluation) carves its buffers from: only one pass runs at a time, so
// plans of different sizes share it, and the memory is that of the largest
// plan rather than the sum.
type arena struct {
	buf   tensor.Buffer
	plans map[int]*plan
}

// newPlan lays out the activations of views views. A training plan keeps
// every activation the backward pass reads (conv inputs, BN inputs, ReLU
// outputs) plus three gradient buffers of the largest activation size (see
// blockGrads); an evaluation plan keeps only four rotating buffers.
func (m *Model) newPlan(views int, train bool, c *carver) *plan {
	b, s := m.backend, m.cfg.InputSize
	pl := &plan{views: views, train: train}
	pl.stemS = m.conv1.Shape(views, s, s)
	pl.stemBN = m.bn1.Shape(views, s*s)
	stemLen := pl.stemS.OutLen()
	maxLen := views * m.maxPerIm
	cut := func(buf tensor.Buffer, n int) tensor.Buffer {
		if buf == nil { // measuring
			return nil
		}
		return b.Slice(buf, 0, n)
	}

	var ring [4]tensor.Buffer // evaluation: rotating activations
	// Training: the two alternating block-gradient buffers and the scratch.
	var pingPong [2]tensor.Buffer
	var scratch tensor.Buffer
	if train {
		pingPong[0], pingPong[1], scratch = c.take(maxLen), c.take(maxLen), c.take(maxLen)
		pl.c0 = c.take(stemLen)
		pl.out0 = c.take(stemLen)
		pl.stemSaved = c.saved(m.bn1, views)
	} else {
		for i := range ring {
			ring[i] = c.take(maxLen)
		}
		pl.c0 = cut(ring[0], stemLen)
		pl.out0 = cut(ring[1], stemLen)
	}
	in, inRing := pl.out0, 1
	for i, bl := range m.blocks {
		a := blockActs{in: in}
		a.s1 = bl.conv1.Shape(views, bl.hIn, bl.hIn)
		a.s2 = bl.conv2.Shape(views, bl.hOut, bl.hOut)
		a.bnS = bl.bn1.Shape(views, bl.hOut*bl.hOut)
		outLen, inLen := a.s1.OutLen(), a.s1.InLen()
		if bl.down != nil {
			a.sd = bl.down.Shape(views, bl.hIn, bl.hIn)
		}
		if train {
			a.c1 = c.take(outLen)
			a.r1 = c.take(outLen)
			a.c2 = c.take(outLen)
			a.out = c.take(outLen)
			a.saved1 = c.saved(bl.bn1, views)
			a.saved2 = c.saved(bl.bn2, views)
			if bl.down != nil {
				a.cd = c.take(outLen)
				a.savedD = c.saved(bl.downBN, views)
				// The downsample BN output is consumed at once by the
				// residual sum; the gradient buffers are idle in forward.
				a.dsOut = cut(scratch, outLen)
			}
			// The last block's dOut is pingPong[0]; going back, each
			// block's dIn is the other buffer, its predecessor's dOut.
			back := len(m.blocks) - 1 - i
			gOut, gIn := pingPong[back%2], pingPong[(back+1)%2]
			a.g = blockGrads{
				dOut: cut(gOut, outLen),
				dC2:  cut(scratch, outLen), dC1: cut(scratch, outLen), dCD: cut(scratch, outLen),
				dR1: cut(gIn, outLen), dIn: cut(gIn, inLen),
				dShortcut: cut(gOut, inLen),
			}
		} else {
			// With the input in ring[inRing] and the others o0, o1, o2:
			// c1, c2, cd -> o0; r1, dsOut -> o1; out -> o2. Each buffer is
			// overwritten only after its last reader ran.
			var o []int
			for i := range ring {
				if i != inRing {
					o = append(o, i)
				}
			}
			a.c1, a.c2, a.cd = cut(ring[o[0]], outLen), cut(ring[o[0]], outLen), cut(ring[o[0]], outLen)
			a.r1, a.dsOut = cut(ring[o[1]], outLen), cut(ring[o[1]], outLen)
			a.out = cut(ring[o[2]], outLen)
			inRing = o[2]
		}
		pl.blocks = append(pl.blocks, a)
		in = a.out
	}
	f, pd := m.featDim, m.cfg.ProjDim
	pl.feat = c.take(views * f)
	if m.headIn != nil {
		pl.u = c.take(views * f)
		pl.headInS = m.headIn.Shape(views)
		if train {
			pl.du = c.take(views * f)
			n := m.headIn.SavedLen(views)
			pl.headInSaved = nn.BNSaved{Mean: c.take(n), InvStd: c.take(n)}
		}
	}
	pl.h1 = c.take(views * f)
	pl.r = c.take(views * f)
	pl.z = c.take(views * pd)
	if m.headBN != nil {
		pl.headBNS = m.headBN.Shape(views, 1)
		if train {
			pl.headSaved = c.saved(m.headBN, views)
		}
	}
	if train {
		pl.dr = c.take(views * f)
		pl.dh1 = c.take(views * f)
		pl.df = c.take(views * f)
		pl.dStem = cut(pingPong[len(m.blocks)%2], stemLen)
		pl.dStemC = cut(scratch, stemLen)
	}
	return pl
}

// planFor returns the plan of views views in the given mode, carving it
// from the mode's arena; a plan larger than the arena replaces the arena
// and drops the plans that lived in the old one.
func (m *Model) planFor(views int, train bool) *plan {
	ar := &m.arenas[0]
	if train {
		ar = &m.arenas[1]
	}
	if pl := ar.plans[views]; pl != nil {
		return pl
	}
	measure := carver{b: m.backend}
	m.newPlan(views, train, &measure)
	if ar.buf == nil || ar.buf.Len() < measure.used {
		if ar.buf != nil {
			m.backend.Free(ar.buf)
		}
		ar.buf = m.backend.Alloc(measure.used)
		ar.plans = map[int]*plan{}
		if train {
			m.last = nil
		}
	}
	pl := m.newPlan(views, train, &carver{b: m.backend, arena: ar.buf})
	ar.plans[views] = pl
	return pl
}

// PlanFloats is the size, in floats, of the activation plan of views views
// in training mode (every activation the backward pass reads and the
// gradient buffers) or evaluation mode, measured without allocating: what a
// forward and backward pass of that many views needs beyond the parameters.
func (m *Model) PlanFloats(views int, train bool) int {
	measure := carver{b: m.backend}
	m.newPlan(views, train, &measure)
	return measure.used
}

// FreePlans releases the activation memory (it is allocated again on
// demand), for example after a one-off large batch.
func (m *Model) FreePlans() {
	for i := range m.arenas {
		if m.arenas[i].buf != nil {
			m.backend.Free(m.arenas[i].buf)
		}
		m.arenas[i] = arena{}
	}
	m.last = nil
}

// FreeEvalPlans releases only the evaluation-mode activations (Features),
// keeping the training plans: a kNN monitor in the middle of training then
// leaves the next training step nothing to re-plan.
func (m *Model) FreeEvalPlans() {
	if m.arenas[0].buf != nil {
		m.backend.Free(m.arenas[0].buf)
	}
	m.arenas[0] = arena{}
}

// Free releases the plans and the parameters; the model must not be used
// afterwards.
func (m *Model) Free() {
	m.FreePlans()
	if m.headIn != nil {
		m.headIn.Free(m.backend)
	}
	m.params.Free()
}

func (m *Model) checkInput(x tensor.Buffer, views int) {
	if views < 1 || x.Len() != views*m.InputLen() {
		panic(fmt.Sprintf("resnet18: input has %d elements, want views*3*%d*%d = %d*%d", x.Len(), m.cfg.InputSize, m.cfg.InputSize, views, m.InputLen()))
	}
}

// backbone runs the stem and the four stages on x and pools into pl.feat.
func (m *Model) backbone(pl *plan, x tensor.Buffer, train, updateRunning bool) {
	b := m.backend
	pl.x = x
	m.conv1.Forward(b, pl.stemS, x, pl.c0)
	if train {
		m.bn1.ForwardTrain(b, pl.stemBN, pl.c0, pl.out0, pl.stemSaved, updateRunning)
	} else {
		m.bn1.ForwardEval(b, pl.stemBN, pl.c0, pl.out0)
	}
	b.ReLUForward(pl.out0, pl.out0)
	for i, bl := range m.blocks {
		a := &pl.blocks[i]
		bl.conv1.Forward(b, a.s1, a.in, a.c1)
		if train {
			bl.bn1.ForwardTrain(b, a.bnS, a.c1, a.r1, a.saved1, updateRunning)
		} else {
			bl.bn1.ForwardEval(b, a.bnS, a.c1, a.r1)
		}
		b.ReLUForward(a.r1, a.r1)
		bl.conv2.Forward(b, a.s2, a.r1, a.c2)
		if train {
			bl.bn2.ForwardTrain(b, a.bnS, a.c2, a.out, a.saved2, updateRunning)
		} else {
			bl.bn2.ForwardEval(b, a.bnS, a.c2, a.out)
		}
		if bl.down != nil {
			bl.down.Forward(b, a.sd, a.in, a.cd)
			if train {
				bl.downBN.ForwardTrain(b, a.bnS, a.cd, a.dsOut, a.savedD, updateRunning)
			} else {
				bl.downBN.ForwardEval(b, a.bnS, a.cd, a.dsOut)
			}
			b.Add(a.out, a.out, a.dsOut)
		} else {
			b.Add(a.out, a.out, a.in)
		}
		b.ReLUForward(a.out, a.out)
	}
	last := pl.blocks[len(pl.blocks)-1].out
	b.GlobalAvgPoolForward(pl.views, m.featDim, m.lastHW*m.lastHW, last, pl.feat)
}

// Forward runs the network on x, views images of (3, InputSize, InputSize)
// normalised floats in NCHW order, and returns the projections z (views,
// ProjDim). With train, batch norm uses the batch statistics (and updates
// the running statistics when updateRunning), and the activations are kept
// for Backward; without, batch norm uses the running statistics. Group
// norm computes the same function in both modes. z belongs
// to the model: it is overwritten by the next Forward in the same mode, of
// any size, since all sizes share one activation arena per mode.
func (m *Model) Forward(x tensor.Buffer, views int, train, updateRunning bool) tensor.Buffer {
	m.checkInput(x, views)
	if train && views < 2 && m.cfg.Norm == NormBatch {
		panic(fmt.Sprintf("resnet18: training-mode batch norm needs at least 2 views, got %d (group norm does not)", views))
	}
	b := m.backend
	pl := m.planFor(views, train)
	m.backbone(pl, x, train, updateRunning)
	m.fc1.Forward(b, views, m.headInput(pl, train, updateRunning), pl.h1)
	switch {
	case m.headBN == nil:
		b.Copy(pl.r, pl.h1)
	case train:
		m.headBN.ForwardTrain(b, pl.headBNS, pl.h1, pl.r, pl.headSaved, updateRunning)
	default:
		m.headBN.ForwardEval(b, pl.headBNS, pl.h1, pl.r)
	}
	if train {
		m.last = pl
	}
	b.ReLUForward(pl.r, pl.r)
	m.fc2.Forward(b, views, pl.r, pl.z)
	return pl.z
}

// headInput is the input of the head's first linear layer: the pooled
// features, normalised by head.0 with group norm.
func (m *Model) headInput(pl *plan, train, updateRunning bool) tensor.Buffer {
	switch {
	case m.headIn == nil:
		return pl.feat
	case train:
		m.headIn.ForwardTrain(m.backend, pl.headInS, pl.feat, pl.u, pl.headInSaved, updateRunning)
	default:
		m.headIn.ForwardEval(m.backend, pl.headInS, pl.feat, pl.u)
	}
	return pl.u
}

// Features returns the pooled backbone features (n, FeatureDim) of x in
// evaluation mode (batch norm with running statistics), for linear probes
// and kNN. The buffer belongs to the model and is overwritten by the next
// Features or evaluation-mode Forward. Evaluation keeps
// four activation buffers of the largest layer (4 x n x 64K floats at full
// width, 32x32 input), so choose n accordingly.
func (m *Model) Features(x tensor.Buffer, n int) tensor.Buffer {
	m.checkInput(x, n)
	pl := m.planFor(n, false)
	m.backbone(pl, x, false, false)
	return pl.feat
}

// Backward writes the gradient of the loss with respect to every trainable
// tensor into Params().Grad() (overwriting it), given dz (views, ProjDim),
// the gradient with respect to the z of the last training-mode Forward.
func (m *Model) Backward(dz tensor.Buffer) {
	pl := m.last
	if pl == nil {
		panic("resnet18: Backward without a training-mode Forward")
	}
	if dz.Len() != pl.views*m.cfg.ProjDim {
		panic(fmt.Sprintf("resnet18: dz has %d elements, want views*ProjDim = %d*%d", dz.Len(), pl.views, m.cfg.ProjDim))
	}
	b, n := m.backend, pl.views
	// Head, last layer first.
	m.fc2.Backward(b, n, pl.r, dz, pl.dr)
	if m.headBN == nil {
		b.ReLUBackward(pl.r, pl.dr, pl.dh1)
	} else {
		b.ReLUBackward(pl.r, pl.dr, pl.dr)
		m.headBN.Backward(b, pl.headBNS, pl.h1, pl.dr, pl.dh1, pl.headSaved)
	}
	if m.headIn == nil {
		m.fc1.Backward(b, n, pl.feat, pl.dh1, pl.df)
	} else {
		m.fc1.Backward(b, n, pl.u, pl.dh1, pl.du)
		m.headIn.Backward(b, pl.headInS, pl.du, pl.df, pl.headInSaved)
	}
	lastBlock := &pl.blocks[len(pl.blocks)-1]
	b.GlobalAvgPoolBackward(n, m.featDim, m.lastHW*m.lastHW, pl.df, lastBlock.g.dOut)
	// The blocks, last first. Each step, the gradient it reads and the one
	// it writes, and the buffer that holds it ("out" and "in" alternate
	// between blocks, see blockGrads):
	//
	//	step                     reads           writes
	//	relu(out) backward       dOut (out)      dOut (out), in place
	//	bn2 backward             dOut (out)      dC2 (scratch)
	//	conv2 backward           dC2 (scratch)   dR1 (in)
	//	relu(r1) backward        dR1 (in)        dR1 (in), in place
	//	bn1 backward             dR1 (in)        dC1 (scratch)
	//	conv1 backward           dC1 (scratch)   dIn (in)           dR1 is dead
	//	downsample BN backward   dOut (out)      dCD (scratch)      dC1 is dead
	//	downsample conv backward dCD (scratch)   dShortcut (out)    dOut is dead
	//	residual                 dShortcut/dOut  dIn += shortcut gradient
	for i := len(m.blocks) - 1; i >= 0; i-- {
		bl, a := m.blocks[i], &pl.blocks[i]
		g := &a.g
		b.ReLUBackward(a.out, g.dOut, g.dOut) // d(bn2 output + shortcut)
		bl.bn2.Backward(b, a.bnS, a.c2, g.dOut, g.dC2, a.saved2)
		bl.conv2.Backward(b, a.s2, a.r1, g.dC2, g.dR1)
		b.ReLUBackward(a.r1, g.dR1, g.dR1)
		bl.bn1.Backward(b, a.bnS, a.c1, g.dR1, g.dC1, a.saved1)
		bl.conv1.Backward(b, a.s1, a.in, g.dC1, g.dIn) // the main branch's d(block input)
		shortcut := g.dOut                             // identity shortcut
		if bl.down != nil {
			bl.downBN.Backward(b, a.bnS, a.cd, g.dOut, g.dCD, a.savedD)
			bl.down.Backward(b, a.sd, a.in, g.dCD, g.dShortcut)
			shortcut = g.dShortcut
		}
		b.Add(g.dIn, g.dIn, shortcut)
	}
	// The stem: dStem is block 0's dIn.
	b.ReLUBackward(pl.out0, pl.dStem, pl.dStem)
	m.bn1.Backward(b, pl.stemBN, pl.c0, pl.dStem, pl.dStemC, pl.stemSaved)
	m.conv1.Backward(b, pl.stemS, pl.x, pl.dStemC, nil)
}

// InitHeadFromData is the data-dependent initialisation of the group-norm
// network's head (see Config.Norm): it runs x, views normalised images,
// through the backbone and sets head.0's running mean and variance to the
// mean and unbiased variance of their pooled features, so that the first
// training steps already see centred, unit-variance features (the running
// statistics then follow the training batches). With batch norm it does
// nothing (the head's batch norm standardises every batch). views must be
// at least 2.
func (m *Model) InitHeadFromData(x tensor.Buffer, views int) error {
	if m.headIn == nil {
		return nil
	}
	m.checkInput(x, views)
	if views < 2 {
		return fmt.Errorf("resnet18: the head's data-dependent initialisation needs at least 2 images, got %d", views)
	}
	b, f := m.backend, m.featDim
	pl := m.planFor(views, false)
	m.backbone(pl, x, false, false)
	feat := make([]float32, views*f)
	b.Download(feat, pl.feat)
	mean := make([]float32, f)
	variance := make([]float32, f)
	for j := 0; j < f; j++ {
		var sum, sq float64
		for i := 0; i < views; i++ {
			sum += float64(feat[i*f+j])
		}
		mu := sum / float64(views)
		for i := 0; i < views; i++ {
			d := float64(feat[i*f+j]) - mu
			sq += d * d
		}
		// The unbiased variance, as the running statistics hold.
		mean[j], variance[j] = float32(mu), float32(sq/float64(views-1))
	}
	b.Upload(m.headIn.RunningMean.Value, mean)
	b.Upload(m.headIn.RunningVar.Value, variance)
	return nil
}
