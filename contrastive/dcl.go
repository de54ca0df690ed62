package contrastive

import (
	"math"

	"github.com/simclr-go/simclr/tensor"
)

// DCL answers plain queries at x_t only: no multilevel form of it is
// defined (docs/definitions.md, section 10 "Decoupled losses"), and VR's
// corrections of it are not checked, so L-SGD alone serves it. It keeps no
// state.
var dclSupport = Support{}

// dcl is the decoupled loss: the positive left out of each view's
// denominator.
type dcl struct {
	dl  tensor.DecoupledLoss
	tau float32
}

func newDCL(b tensor.Backend, tau float64) (*dcl, error) {
	dl, err := decoupledBackend(b, DCL)
	if err != nil {
		return nil, err
	}
	return &dcl{dl: dl, tau: float32(tau)}, nil
}

func (*dcl) Kind() LossKind { return DCL }

func (l *dcl) Eval(batch Batch, z, dz tensor.Buffer) (tensor.LossResult, error) {
	if err := checkDecoupledBatch(DCL, batch.N); err != nil {
		return tensor.LossResult{}, err
	}
	return l.dl.Decoupled(batch.N, batch.Proj, l.tau, 0, nil, z, dz), nil
}

// Chance is log(2n - 2): the denominators leave the positive out.
func (*dcl) Chance(n int) float64  { return decoupledChance(n) }
func (*dcl) ChanceFormula() string { return "log(2N-2)" }
func (*dcl) Free()                 {}

// decoupledChance is the loss of a batch of n images whose embeddings are
// all alike under a decoupled loss, whose denominators hold the 2n - 2
// negatives.
func decoupledChance(n int) float64 { return math.Log(float64(2*n - 2)) }
