package resnet18

import (
	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

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

// activationPlan is every buffer a pass over views views needs.
type activationPlan struct {
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
	plans map[int]*activationPlan
}

// newActivationPlan lays out the activations of views views. A training plan keeps
// every activation the backward pass reads (conv inputs, BN inputs, ReLU
// outputs) plus three gradient buffers of the largest activation size (see
// blockGrads); an evaluation plan keeps only four rotating buffers.
func (m *Model) newActivationPlan(views int, train bool, c *carver) *activationPlan {
	b, s := m.backend, m.cfg.InputSize
	pl := &activationPlan{views: views, train: train}
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

// activationPlanFor returns the plan of views views in the given mode, carving it
// from the mode's arena; a plan larger than the arena replaces the arena
// and drops the plans that lived in the old one.
func (m *Model) activationPlanFor(views int, train bool) *activationPlan {
	ar := &m.arenas[0]
	if train {
		ar = &m.arenas[1]
	}
	if pl := ar.plans[views]; pl != nil {
		return pl
	}
	measure := carver{b: m.backend}
	m.newActivationPlan(views, train, &measure)
	if ar.buf == nil || ar.buf.Len() < measure.used {
		if ar.buf != nil {
			m.backend.Free(ar.buf)
		}
		ar.buf = m.backend.Alloc(measure.used)
		ar.plans = map[int]*activationPlan{}
		if train {
			m.last = nil
		}
	}
	pl := m.newActivationPlan(views, train, &carver{b: m.backend, arena: ar.buf})
	ar.plans[views] = pl
	return pl
}

// ActivationPlanFloats is the size, in floats, of the activation plan of views views
// in training mode (every activation the backward pass reads and the
// gradient buffers) or evaluation mode, measured without allocating: what a
// forward and backward pass of that many views needs beyond the parameters.
func (m *Model) ActivationPlanFloats(views int, train bool) int {
	measure := carver{b: m.backend}
	m.newActivationPlan(views, train, &measure)
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
