package cpu

import "github.com/simclr-go/simclr/tensor"

// convAlgo is how a convolution is computed.
type convAlgo int

const (
	// algoAuto lets convAlgorithm choose per shape.
	algoAuto convAlgo = iota
	// algoIm2col lowers the input to an im2col matrix and multiplies.
	algoIm2col
	// algoWinograd uses Winograd F(2x2,3x3) (winograd.go).
	algoWinograd
)

// convAlgorithm is the one place that chooses the algorithm of a
// convolution. Winograd F(2x2,3x3) needs 16 multiplications per 2x2
// output tile and input channel where im2col's GEMM needs 36, and its
// transformed tiles (16 values per 4 outputs) are smaller than an im2col
// matrix (9 per output), so it wins on the 3x3 stride-1 pad-1 layers
// when its 16 GEMMs are long and deep enough. BenchmarkConvAlgorithms
// runs every layer both ways; its figures, which set the two thresholds
// below, are in studies/engine-speed/README.md ("The figures behind the CPU convolution
// constants"). It needs
//   - at least minWinogradChannels input channels: the stem (3 channels)
//     writes 16 x K transformed outputs per tile through memory to save a
//     27-deep GEMM little (ahead of im2col at a few views, behind at more;
//     the stem is 0.3% of the FLOPs either way);
//   - at least minWinogradTiles tiles in the batch (N x tiles per image):
//     each of the 16 GEMMs streams its whole (K,C) share of the
//     transformed filters, 16/9 the size of the weights, for T columns,
//     and the filter transforms cost the same whatever T, so a few tiles
//     make them memory-bound (the 4x4 layer loses at 4 and 8 views, T = 16
//     and 32).
//
// Stride-2 and 1x1 layers stay on im2col, which Winograd F(2,3) does not
// compute. Tests and benchmarks may force either algorithm (b.convAlgo);
// forcing Winograd on a shape it cannot compute falls back to im2col.
func (b *Backend) convAlgorithm(s tensor.ConvShape) convAlgo {
	if !winogradEligible(s) || b.convAlgo == algoIm2col {
		return algoIm2col
	}
	if b.convAlgo == algoWinograd {
		return algoWinograd
	}
	tiles := s.N * newWinoGeometry(s.H, s.W).tiles()
	if s.C >= minWinogradChannels && tiles >= minWinogradTiles {
		return algoWinograd
	}
	return algoIm2col
}

// minWinogradChannels and minWinogradTiles bound the shapes convAlgorithm
// sends to Winograd (see there).
const (
	minWinogradChannels = 8
	minWinogradTiles    = 64
)

// pointwise reports whether col for one image is x itself (1x1 kernel,
// stride 1, no padding) and planes are large enough that a GEMM per image
// is efficient.
func pointwise(s tensor.ConvShape) bool {
	return s.R == 1 && s.S == 1 && s.Stride == 1 && s.Pad == 0 && s.H*s.W >= 256
}
