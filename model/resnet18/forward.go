package resnet18

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

func (m *Model) checkInput(x tensor.Buffer, views int) {
	if views < 1 || x.Len() != views*m.InputLen() {
		panic(fmt.Sprintf("resnet18: input has %d elements, want views*3*%d*%d = %d*%d", x.Len(), m.cfg.InputSize, m.cfg.InputSize, views, m.InputLen()))
	}
}

// backbone runs the stem and the four stages on x and pools into pl.feat.
func (m *Model) backbone(pl *activationPlan, x tensor.Buffer, train, updateRunning bool) {
	b := m.backend
	pl.x = x
	m.conv1.Forward(b, pl.stemS, x, pl.c0)
	if train {
		// Batch norm and ReLU in one pass over the output.
		m.bn1.ForwardTrainAddReLU(b, pl.stemBN, pl.c0, nil, pl.out0, pl.stemSaved, updateRunning)
	} else {
		m.bn1.ForwardEval(b, pl.stemBN, pl.c0, pl.out0)
		b.ReLUForward(pl.out0, pl.out0)
	}
	for i, bl := range m.blocks {
		a := &pl.blocks[i]
		bl.conv1.Forward(b, a.s1, a.in, a.c1)
		if train {
			bl.bn1.ForwardTrainAddReLU(b, a.bnS, a.c1, nil, a.r1, a.saved1, updateRunning)
		} else {
			bl.bn1.ForwardEval(b, a.bnS, a.c1, a.r1)
			b.ReLUForward(a.r1, a.r1)
		}
		bl.conv2.Forward(b, a.s2, a.r1, a.c2)
		if !train {
			// Evaluation shares one buffer among c2 and cd (activationplan.go), so
			// bn2 reads c2 before the downsample convolution writes cd.
			bl.bn2.ForwardEval(b, a.bnS, a.c2, a.out)
		}
		shortcut := a.in
		if bl.down != nil {
			bl.down.Forward(b, a.sd, a.in, a.cd)
			if train {
				bl.downBN.ForwardTrain(b, a.bnS, a.cd, a.dsOut, a.savedD, updateRunning)
			} else {
				bl.downBN.ForwardEval(b, a.bnS, a.cd, a.dsOut)
			}
			shortcut = a.dsOut
		}
		if train {
			// In training every activation has its own buffer: bn2, the
			// residual add and the ReLU go in one pass once the shortcut
			// is ready.
			bl.bn2.ForwardTrainAddReLU(b, a.bnS, a.c2, shortcut, a.out, a.saved2, updateRunning)
		} else {
			b.Add(a.out, a.out, shortcut)
			b.ReLUForward(a.out, a.out)
		}
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
	pl := m.activationPlanFor(views, train)
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
func (m *Model) headInput(pl *activationPlan, train, updateRunning bool) tensor.Buffer {
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
	pl := m.activationPlanFor(n, false)
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
