package contrastive

import (
	"math"

	"github.com/simclr-go/simclr/tensor"
)

// NT-Xent answers every query: plain and multilevel, at x_t and x_{t-1};
// it keeps no state.
var ntXentSupport = Support{Levels: true, Previous: true}

// ntXent is SimCLR's loss (docs/definitions.md, section 4).
type ntXent struct {
	b   tensor.Backend
	tau float32
}

func newNTXent(b tensor.Backend, tau float64) *ntXent { return &ntXent{b: b, tau: float32(tau)} }

func (*ntXent) Kind() LossKind { return NTXent }

func (l *ntXent) Eval(batch Batch, z, dz tensor.Buffer) (tensor.LossResult, error) {
	return l.b.NTXent(batch.N, batch.Proj, l.tau, batch.Diff, z, dz), nil
}

func (*ntXent) Chance(n int) float64  { return LossScale(n) }
func (*ntXent) ChanceFormula() string { return "log(2N-1)" }
func (*ntXent) Free()                 {}

// LossScale is log(2N - 1), the SimCLR loss L_B of a batch of N images
// whose 2N embeddings are all alike (each view's positive is one of its
// 2N - 1 candidates): the loss of a network that has learnt nothing. L_B
// grows with it, so losses of batches of different sizes (MLMC levels, or
// runs with different L) compare only after subtracting it.
func LossScale(n int) float64 { return math.Log(float64(2*n - 1)) }
