package nn

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

// Norm is a normalisation layer over (N,C,HW) activations as a network uses
// it: *BatchNorm or *GroupNorm. The shape is the activation's (N, C, HW) in
// a tensor.BNShape, so that the two are interchangeable; a GroupNorm
// ignores its Momentum.
type Norm interface {
	// Shape is the normalisation of n images of hw positions.
	Shape(n, hw int) tensor.BNShape
	// SavedLen is the length of each of the two buffers of statistics a
	// training-mode forward pass over n images saves for the backward pass.
	SavedLen(n int) int
	// ForwardTrain normalises x into y as in training mode, saving the
	// statistics in saved; updateRunning updates running statistics, if
	// the layer keeps any.
	ForwardTrain(b tensor.Backend, s tensor.BNShape, x, y tensor.Buffer, saved BNSaved, updateRunning bool)
	// ForwardTrainAddReLU is ForwardTrain followed by y += residual
	// (unless residual is nil) and y = max(y, 0).
	ForwardTrainAddReLU(b tensor.Backend, s tensor.BNShape, x, residual, y tensor.Buffer, saved BNSaved, updateRunning bool)
	// ForwardEval normalises x into y as in evaluation mode.
	ForwardEval(b tensor.Backend, s tensor.BNShape, x, y tensor.Buffer)
	// Backward writes dx and the weight and bias gradients from dy, the
	// forward input x and the statistics ForwardTrain saved.
	Backward(b tensor.Backend, s tensor.BNShape, x, dy, dx tensor.Buffer, saved BNSaved)
}

var (
	_ Norm = (*BatchNorm)(nil)
	_ Norm = (*GroupNorm)(nil)
)

// GroupNorm is torch.nn.GroupNorm(G, C) with eps 1e-5 and a per-channel
// weight and bias, registered as name+".weight" (ones) and name+".bias"
// (zeros), as torchvision initialises it. It keeps no running statistics:
// each image is normalised with the statistics of its own channel groups,
// in training and evaluation alike, so an image's output never depends on
// the rest of its batch.
type GroupNorm struct {
	Weight, Bias *Tensor
	C, G         int
	Eps          float32
}

// NewGroupNorm registers the layer's tensors in p; groups must divide c.
func NewGroupNorm(p *Params, name string, c, groups int) *GroupNorm {
	if groups < 1 || c%groups != 0 {
		panic(fmt.Sprintf("nn.NewGroupNorm(%q): %d groups do not divide %d channels", name, groups, c))
	}
	return &GroupNorm{
		Weight: p.Add(name+".weight", NotDecayed, Init{Kind: InitOne}, c),
		Bias:   p.Add(name+".bias", NotDecayed, Init{Kind: InitZero}, c),
		C:      c,
		G:      groups,
		Eps:    1e-5,
	}
}

// Groups is the number of groups for c channels: min(32, c)
// (docs/definitions.md, section 4 "Contrastive learning as a biased oracle"),
// or when that does not divide c, the largest divisor of c below it, since
// torch.nn.GroupNorm needs equal groups. For the power-of-two widths of
// ResNet-18 (width 1, 1/2, 1/4, ...) it is always min(32, c).
func Groups(c int) int { return GroupsAtMost(c, 32) }

// GroupsAtMost is the largest divisor of c that is at most most (and at
// least 1).
func GroupsAtMost(c, most int) int {
	g := max(1, min(most, c))
	for c%g != 0 {
		g--
	}
	return g
}

// Shape is the normalisation of n images of hw positions.
func (gn *GroupNorm) Shape(n, hw int) tensor.BNShape {
	return tensor.BNShape{N: n, C: gn.C, HW: hw, Eps: gn.Eps}
}

// GNShape is the backend's shape for the activation shape s.
func (gn *GroupNorm) GNShape(s tensor.BNShape) tensor.GNShape {
	return tensor.GNShape{N: s.N, C: gn.C, HW: s.HW, G: gn.G, Eps: gn.Eps}
}

// SavedLen is n*G: statistics are per image and group.
func (gn *GroupNorm) SavedLen(n int) int { return n * gn.G }

// ForwardTrain normalises x (N,C,HW) into y, saving the (N,G) means and
// inverse standard deviations in saved; updateRunning has nothing to update.
func (gn *GroupNorm) ForwardTrain(b tensor.Backend, s tensor.BNShape, x, y tensor.Buffer, saved BNSaved, _ bool) {
	b.GroupNormForward(gn.GNShape(s), x, gn.Weight.Value, gn.Bias.Value, y, saved.Mean, saved.InvStd)
}

// ForwardTrainAddReLU is ForwardTrain, then the residual add and the ReLU
// as separate kernels (the backends fuse them for batch norm only).
func (gn *GroupNorm) ForwardTrainAddReLU(b tensor.Backend, s tensor.BNShape, x, residual, y tensor.Buffer, saved BNSaved, updateRunning bool) {
	gn.ForwardTrain(b, s, x, y, saved, updateRunning)
	if residual != nil {
		b.Add(y, y, residual)
	}
	b.ReLUForward(y, y)
}

// ForwardEval computes the same function as ForwardTrain, saving nothing.
func (gn *GroupNorm) ForwardEval(b tensor.Backend, s tensor.BNShape, x, y tensor.Buffer) {
	b.GroupNormForward(gn.GNShape(s), x, gn.Weight.Value, gn.Bias.Value, y, nil, nil)
}

// Backward writes dx and the weight and bias gradients from dy, the forward
// input x and the statistics saved by ForwardTrain.
func (gn *GroupNorm) Backward(b tensor.Backend, s tensor.BNShape, x, dy, dx tensor.Buffer, saved BNSaved) {
	b.GroupNormBackward(gn.GNShape(s), x, dy, gn.Weight.Value, saved.Mean, saved.InvStd, dx, gn.Weight.Grad, gn.Bias.Grad)
}
