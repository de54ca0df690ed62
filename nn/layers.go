package nn

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

// Conv2d is torch.nn.Conv2d(In, Out, Kernel, Stride, Pad, bias=False) with
// torchvision's initialisation (kaiming normal, fan_out, relu). Its weight
// is registered as name+".weight", shape (Out, In, Kernel, Kernel).
type Conv2d struct {
	Weight                       *Tensor
	In, Out, Kernel, Stride, Pad int
}

// NewConv2d registers the layer's weight in p.
func NewConv2d(p *Params, name string, in, out, kernel, stride, pad int) *Conv2d {
	w := p.Add(name+".weight", Decayed, KaimingNormalFanOut(out*kernel*kernel), out, in, kernel, kernel)
	return &Conv2d{Weight: w, In: in, Out: out, Kernel: kernel, Stride: stride, Pad: pad}
}

// Shape is the convolution of n images of h x w pixels.
func (c *Conv2d) Shape(n, h, w int) tensor.ConvShape {
	return tensor.ConvShape{N: n, C: c.In, H: h, W: w, K: c.Out, R: c.Kernel, S: c.Kernel, Stride: c.Stride, Pad: c.Pad}
}

// Forward: x is (N,In,H,W), y is (N,Out,OH,OW).
func (c *Conv2d) Forward(b tensor.Backend, s tensor.ConvShape, x, y tensor.Buffer) {
	b.Conv2dForward(s, x, c.Weight.Value, y)
}

// Backward: from dy (N,Out,OH,OW) and the forward input x, writes dx
// (N,In,H,W) unless nil and the weight gradient.
func (c *Conv2d) Backward(b tensor.Backend, s tensor.ConvShape, x, dy, dx tensor.Buffer) {
	b.Conv2dBackward(s, x, c.Weight.Value, dy, dx, c.Weight.Grad)
}

// BatchNorm is torch.nn.BatchNorm2d (or BatchNorm1d with HW = 1) with eps
// 1e-5 and momentum 0.1, registered as name+".weight", ".bias",
// ".running_mean", ".running_var" and ".num_batches_tracked".
type BatchNorm struct {
	Weight, Bias                               *Tensor
	RunningMean, RunningVar, NumBatchesTracked *Tensor
	C                                          int
	Eps, Momentum                              float32
	params                                     *Params // for the constant 1 that counts batches
}

// NewBatchNorm registers the layer's tensors in p.
func NewBatchNorm(p *Params, name string, c int) *BatchNorm {
	return &BatchNorm{
		Weight:            p.Add(name+".weight", NotDecayed, Init{Kind: InitOne}, c),
		Bias:              p.Add(name+".bias", NotDecayed, Init{Kind: InitZero}, c),
		RunningMean:       p.Add(name+".running_mean", State, Init{Kind: InitZero}, c),
		RunningVar:        p.Add(name+".running_var", State, Init{Kind: InitOne}, c),
		NumBatchesTracked: p.Add(name+".num_batches_tracked", State, Init{Kind: InitZero}),
		C:                 c,
		Eps:               1e-5,
		Momentum:          0.1,
		params:            p,
	}
}

// Shape is the normalisation of n images of hw positions.
func (bn *BatchNorm) Shape(n, hw int) tensor.BNShape {
	return tensor.BNShape{N: n, C: bn.C, HW: hw, Eps: bn.Eps, Momentum: bn.Momentum}
}

// SavedLen is C: batch statistics are per channel.
func (bn *BatchNorm) SavedLen(int) int { return bn.C }

// BNSaved holds the mean and 1/sqrt(var+eps) of one training-mode forward
// pass, which the backward pass needs: per channel (C each) for BatchNorm,
// per image and group for GroupNorm (Norm.SavedLen each).
type BNSaved struct{ Mean, InvStd tensor.Buffer }

// NewBNSaved allocates the saved statistics of bn on b.
func (bn *BatchNorm) NewBNSaved(b tensor.Backend) BNSaved {
	return BNSaved{Mean: b.Alloc(bn.C), InvStd: b.Alloc(bn.C)}
}

// Free releases the buffers of s.
func (s BNSaved) Free(b tensor.Backend) {
	b.Free(s.Mean)
	b.Free(s.InvStd)
}

// ForwardTrain normalises x (N,C,HW) with batch statistics into y, saving
// them in saved; with updateRunning it also updates the running statistics
// and adds 1 to num_batches_tracked, as PyTorch does in training mode.
func (bn *BatchNorm) ForwardTrain(b tensor.Backend, s tensor.BNShape, x, y tensor.Buffer, saved BNSaved, updateRunning bool) {
	var runMean, runVar tensor.Buffer
	// The layer's momentum, not the one planned into s: precise BN changes
	// it between batches (see resnet18's RecalibrateBN).
	s.Momentum = bn.Momentum
	if updateRunning {
		runMean, runVar = bn.RunningMean.Value, bn.RunningVar.Value
		b.Axpy(bn.NumBatchesTracked.Value, 1, bn.params.One())
	}
	b.BatchNormForwardTrain(s, x, bn.Weight.Value, bn.Bias.Value, y, saved.Mean, saved.InvStd, runMean, runVar)
}

// ForwardTrainAddReLU is ForwardTrain followed by y += residual (unless
// residual is nil) and y = max(y, 0), fused into the pass that writes y
// (tensor.Backend.BatchNormAddReLUForwardTrain).
func (bn *BatchNorm) ForwardTrainAddReLU(b tensor.Backend, s tensor.BNShape, x, residual, y tensor.Buffer, saved BNSaved, updateRunning bool) {
	var runMean, runVar tensor.Buffer
	s.Momentum = bn.Momentum // as ForwardTrain
	if updateRunning {
		runMean, runVar = bn.RunningMean.Value, bn.RunningVar.Value
		b.Axpy(bn.NumBatchesTracked.Value, 1, bn.params.One())
	}
	b.BatchNormAddReLUForwardTrain(s, x, bn.Weight.Value, bn.Bias.Value, residual, y, saved.Mean, saved.InvStd, runMean, runVar)
}

// ForwardEval normalises x with the running statistics into y.
func (bn *BatchNorm) ForwardEval(b tensor.Backend, s tensor.BNShape, x, y tensor.Buffer) {
	b.BatchNormForwardEval(s, x, bn.Weight.Value, bn.Bias.Value, bn.RunningMean.Value, bn.RunningVar.Value, y)
}

// Backward writes dx and the weight and bias gradients from dy, the forward
// input x and the statistics saved by ForwardTrain.
func (bn *BatchNorm) Backward(b tensor.Backend, s tensor.BNShape, x, dy, dx tensor.Buffer, saved BNSaved) {
	b.BatchNormBackward(s, x, dy, bn.Weight.Value, saved.Mean, saved.InvStd, dx, bn.Weight.Grad, bn.Bias.Grad)
}

// Linear is torch.nn.Linear(In, Out) with bias and PyTorch's default
// initialisation, registered as name+".weight" (Out, In) and name+".bias".
type Linear struct {
	Weight, Bias *Tensor
	In, Out      int
}

// NewLinear registers the layer's tensors in p.
func NewLinear(p *Params, name string, in, out int) *Linear {
	if in < 1 || out < 1 {
		panic(fmt.Sprintf("nn.NewLinear(%q): bad size %d -> %d", name, in, out))
	}
	return &Linear{
		Weight: p.Add(name+".weight", Decayed, LinearDefault(in), out, in),
		Bias:   p.Add(name+".bias", NotDecayed, LinearDefault(in), out),
		In:     in, Out: out,
	}
}

// Forward: x is (N,In), y is (N,Out) = x W^T + b.
func (l *Linear) Forward(b tensor.Backend, n int, x, y tensor.Buffer) {
	b.LinearForward(n, l.In, l.Out, x, l.Weight.Value, l.Bias.Value, y)
}

// Backward writes dx (N,In) unless nil and the weight and bias gradients
// from dy (N,Out) and the forward input x.
func (l *Linear) Backward(b tensor.Backend, n int, x, dy, dx tensor.Buffer) {
	b.LinearBackward(n, l.In, l.Out, x, l.Weight.Value, dy, dx, l.Weight.Grad, l.Bias.Grad)
}

// FLOPs is the forward multiply-add count times two for n rows.
func (l *Linear) FLOPs(n int) float64 { return 2 * float64(n) * float64(l.In) * float64(l.Out) }
