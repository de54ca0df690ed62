// Package resnet18 is the SimCLR network of docs/definitions.md,
// section 6 "Training recipe": a ResNet-18 for
// 32x32 inputs (3x3 stride-1 stem, no max pool, BasicBlock stages [2,2,2,2])
// and the projection head Linear -> BatchNorm1d -> ReLU -> Linear, with an
// explicit forward and backward pass over a tensor.Backend.
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
//
// Files: config.go (Config and its checks), resnet18.go (construction),
// activationplan.go (activation memory planning), forward.go (forward and backward),
// inithead.go (the group-norm head's data-dependent initialisation),
// precisebn.go (precise batch norm), io.go (Save and Load).
package resnet18

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

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

	arenas [2]arena        // evaluation, training
	last   *activationPlan // plan of the last training-mode Forward
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

// Free releases the plans and the parameters; the model must not be used
// afterwards.
func (m *Model) Free() {
	m.FreePlans()
	if m.headIn != nil {
		m.headIn.Free(m.backend)
	}
	m.params.Free()
}
