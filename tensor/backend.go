package tensor

import "fmt"

// Buffer is a backend-owned array of float32 elements. A Buffer returned by
// Slice is a view that shares storage with its parent.
type Buffer interface {
	// Len is the number of float32 elements.
	Len() int
}

// ConvShape describes a 2-D convolution without bias, as torch.nn.Conv2d with
// bias=False, dilation 1 and groups 1.
type ConvShape struct {
	N, C, H, W int // input (N,C,H,W)
	K          int // output channels
	R, S       int // kernel rows and columns
	Stride     int
	Pad        int // zero padding on every side
}

// OutH is the output height: (H + 2 Pad - R) / Stride + 1.
func (s ConvShape) OutH() int { return (s.H+2*s.Pad-s.R)/s.Stride + 1 }

// OutW is the output width: (W + 2 Pad - S) / Stride + 1.
func (s ConvShape) OutW() int { return (s.W+2*s.Pad-s.S)/s.Stride + 1 }

// InLen, WeightLen and OutLen are the element counts of x, w and y.
func (s ConvShape) InLen() int     { return s.N * s.C * s.H * s.W }
func (s ConvShape) WeightLen() int { return s.K * s.C * s.R * s.S }
func (s ConvShape) OutLen() int    { return s.N * s.K * s.OutH() * s.OutW() }

// FLOPs is the multiply-add count of the forward pass times two.
func (s ConvShape) FLOPs() float64 {
	return 2 * float64(s.N) * float64(s.K) * float64(s.OutH()*s.OutW()) * float64(s.C*s.R*s.S)
}

func (s ConvShape) String() string {
	return fmt.Sprintf("conv(N=%d C=%d H=%d W=%d K=%d R=%d S=%d stride=%d pad=%d)",
		s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.Stride, s.Pad)
}

// BNShape describes batch normalisation over N images of C channels with HW
// positions each (HW = 1 for BatchNorm1d on an (N,C) matrix). Statistics are
// per channel over N*HW values.
type BNShape struct {
	N, C, HW int
	Eps      float32 // PyTorch default 1e-5
	Momentum float32 // PyTorch default 0.1: running = (1-m) running + m batch
}

// GNShape describes group normalisation as torch.nn.GroupNorm(G, C) over N
// images of C channels with HW positions each (HW = 1 for an (N,C)
// matrix). The C channels form G groups of C/G consecutive channels;
// statistics are per image and group over the (C/G)*HW values, so an
// image's output does not depend on the other images of the batch, and
// training and evaluation compute the same function.
type GNShape struct {
	N, C, HW, G int
	Eps         float32 // PyTorch default 1e-5
}

// SGDConfig is torch.optim.SGD for one parameter tensor:
//
//	g = grad + WeightDecay*w
//	v = Momentum*v + g        (v = g on the first step is the caller's concern: v starts at 0, which PyTorch matches when dampening is 0)
//	d = g + Momentum*v if Nesterov else v
//	w = w - LR*d
type SGDConfig struct {
	LR, Momentum, WeightDecay float32
	Nesterov                  bool
}

// LARSConfig is LARS as in SimCLR (Ginsburg/You et al.): for a tensor that is
// adapted, g = grad + WeightDecay*w, trust = Eta*||w||/||g|| (1 when either
// norm is 0), v = Momentum*v + LR*trust*g, w = w - v. A tensor that is not
// adapted (BN parameters, biases) uses trust = 1 and no weight decay.
type LARSConfig struct {
	LR, Momentum, WeightDecay, Eta float32
	Adapt                          bool
}

// LossResult is what the NT-Xent kernel reports.
type LossResult struct {
	// Loss is the value whose gradient was written: L_B, or for a multilevel
	// difference L_B - (L_B1 + L_B2)/2.
	Loss float64
	// Full is L_B, the loss of the whole batch (equal to Loss for a plain query).
	Full float64
}

// Backend executes kernels on its own buffers. Methods panic on shape
// mismatches (programmer errors); device failures surface from Sync.
//
// It is the union of small interfaces, one per kind of work, so that a
// package states the part it uses (optim.Backend, say) and a reader finds
// a kernel with its kin. Every backend implements them all; a kernel that
// not every backend has is an optional capability instead, found by a type
// assertion (capability.go), so that adding one touches only the backends
// that have it.
type Backend interface {
	Device
	Memory
	Vector
	Convolution
	Normalization
	Layers
	ContrastiveLoss
	OptimizerSteps
}

// Device names the backend and waits for its queued work.
type Device interface {
	// Name is "cpu" or "cuda"; Describe says which libraries are in use
	// (for example "cpu: OpenBLAS 0.3.21 (libopenblas.so.0), 2 threads").
	Name() string
	Describe() string
	// Sync waits for queued work and reports any asynchronous failure.
	Sync() error
}

// Memory allocates buffers and moves data between them and the host.
type Memory interface {
	// Alloc returns a zeroed buffer of n float32 elements.
	Alloc(n int) Buffer
	// Free releases a buffer from Alloc (not a Slice view).
	Free(b Buffer)
	// Slice returns the view b[off : off+n].
	Slice(b Buffer, off, n int) Buffer
	// Upload copies host data into dst (len(src) == dst.Len()); src may be
	// reused as soon as Upload returns.
	Upload(dst Buffer, src []float32)
	// Download copies src to the host after all queued work is done.
	Download(dst []float32, src Buffer)
}

// Vector holds the element-wise kernels over equal-length buffers and
// their reductions.
type Vector interface {
	Zero(x Buffer)
	Copy(dst, src Buffer)
	Scale(x Buffer, alpha float32)          // x = alpha x
	Axpy(y Buffer, alpha float32, x Buffer) // y += alpha x
	Add(out, a, b Buffer)                   // out = a + b (out may alias a or b)
	Dot(a, b Buffer) float64                // sum a_i b_i, accumulated in float64; synchronises
	SumSquares(x Buffer) float64            // sum x_i^2, accumulated in float64; synchronises
	AllFinite(x Buffer) bool                // no NaN or Inf; synchronises
}

// Convolution holds the 2-D convolution and its gradients.
type Convolution interface {
	// Conv2dForward: x is (N,C,H,W), w is (K,C,R,S), y is (N,K,OH,OW).
	Conv2dForward(s ConvShape, x, w, y Buffer)
	// Conv2dBackward: given dy (N,K,OH,OW), writes dx (N,C,H,W) unless dx is
	// nil (the network input needs none) and dw (K,C,R,S).
	Conv2dBackward(s ConvShape, x, w, dy, dx, dw Buffer)
}

// Normalization holds batch norm and group norm, forward and backward.
type Normalization interface {
	// BatchNormForwardTrain normalises x (N,C,HW) with batch statistics into
	// y, saves the batch mean and 1/sqrt(var+eps) (biased var) per channel in
	// mean and invStd (C each) for the backward pass, and when runMean and
	// runVar are non-nil updates them with Momentum and the unbiased variance,
	// as torch.nn.BatchNorm2d does in training mode. Statistics accumulate in
	// float64.
	BatchNormForwardTrain(s BNShape, x, gamma, beta, y, mean, invStd, runMean, runVar Buffer)
	// BatchNormAddReLUForwardTrain is BatchNormForwardTrain into y
	// followed, in the same pass over y, by y += residual (unless residual
	// is nil) and y = max(y, 0): the batch norm, residual add and ReLU
	// after a ResNet convolution. y must not alias x or residual.
	BatchNormAddReLUForwardTrain(s BNShape, x, gamma, beta, residual, y, mean, invStd, runMean, runVar Buffer)
	// BatchNormForwardEval uses the running statistics: y = gamma (x - runMean) / sqrt(runVar + eps) + beta.
	BatchNormForwardEval(s BNShape, x, gamma, beta, runMean, runVar, y Buffer)
	// BatchNormBackward writes dx, dgamma and dbeta (C each) from dy, the
	// forward input x and the saved mean and invStd.
	BatchNormBackward(s BNShape, x, dy, gamma, mean, invStd, dx, dgamma, dbeta Buffer)

	// GroupNormForward normalises x (N,C,HW) per image and group into y,
	// y = gamma_c (x - mean_ng) / sqrt(var_ng + eps) + beta_c with the biased
	// variance, and saves mean and 1/sqrt(var+eps) in mean and invStd ((N,G)
	// each) for the backward pass unless they are nil (evaluation).
	// Statistics accumulate in float64.
	GroupNormForward(s GNShape, x, gamma, beta, y, mean, invStd Buffer)
	// GroupNormBackward writes dx (N,C,HW) and dgamma, dbeta (C each) from dy,
	// the forward input x and the saved mean and invStd (dx may alias dy).
	GroupNormBackward(s GNShape, x, dy, gamma, mean, invStd, dx, dgamma, dbeta Buffer)
}

// Layers holds the other layers of the network: ReLU, global average
// pooling and the fully connected layer.
type Layers interface {
	// ReLUForward: y = max(x, 0) (y may alias x).
	ReLUForward(x, y Buffer)
	// ReLUBackward: dx = dy where y > 0, else 0; y is the forward output (dx may alias dy).
	ReLUBackward(y, dy, dx Buffer)

	// GlobalAvgPoolForward: x (N,C,HW) -> y (N,C), the mean over HW.
	GlobalAvgPoolForward(n, c, hw int, x, y Buffer)
	// GlobalAvgPoolBackward: dy (N,C) -> dx (N,C,HW), dx = dy/HW.
	GlobalAvgPoolBackward(n, c, hw int, dy, dx Buffer)

	// LinearForward: x (N,In), w (Out,In), b (Out) or nil, y (N,Out) = x w^T + b.
	LinearForward(n, in, out int, x, w, b, y Buffer)
	// LinearBackward writes dx (N,In) unless nil, dw (Out,In) and db (Out) unless nil.
	LinearBackward(n, in, out int, x, w, dy, dx, dw, db Buffer)
}

// ContrastiveLoss is the SimCLR loss (the decoupled losses are the optional
// DecoupledLoss).
type ContrastiveLoss interface {
	// NTXent computes the SimCLR loss of docs/definitions.md, section 4
	// "Contrastive learning as a biased oracle" on z, the 2n x d projections of
	// n images (rows 2k and 2k+1 are the two views of image k, 0-based),
	// L2-normalising each row first, with temperature tau. When multilevel is
	// true (n even) the loss is L_B - (L_B1 + L_B2)/2 with B1 the first n/2
	// images. dz (2n x d) receives the gradient of Loss with respect to z
	// (through the normalisation). Reductions are float64; the scalars are
	// returned to the host (this synchronises).
	NTXent(n, d int, tau float32, multilevel bool, z, dz Buffer) LossResult
}

// OptimizerSteps are the optimizers' update kernels.
type OptimizerSteps interface {
	// SGDStep updates w and the momentum buffer v in place from gradient g.
	SGDStep(c SGDConfig, w, g, v Buffer)
	// LARSStep updates w and v in place from g (the norms are computed on the
	// backend).
	LARSStep(c LARSConfig, w, g, v Buffer)
}
