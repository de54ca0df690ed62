package optim

import (
	"fmt"

	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

// Kind is an optimizer: SGD (torch.optim.SGD, the zero value) or LARS
// (as in SimCLR).
type Kind int

const (
	SGD Kind = iota
	LARS
)

// kindNames are the kinds' names, as --optimizer and config.json write them.
var kindNames = [...]string{SGD: "sgd", LARS: "lars"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// ParseKind reads an optimizer's name (sgd or lars).
func ParseKind(name string) (Kind, error) {
	for k, n := range kindNames {
		if n == name {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("optimizer %q: use sgd or lars", name)
}

// Backend is the part of tensor.Backend an optimizer uses: its momentum's
// memory and the update kernels.
type Backend interface {
	tensor.Memory
	tensor.Vector
	tensor.OptimizerSteps
}

// Config chooses and tunes an optimizer. The learning rate is given per
// step (see Schedule).
type Config struct {
	Kind        Kind
	Momentum    float32 // 0.9 in the reference recipe
	WeightDecay float32 // 5e-4 in the reference recipe (SGD); 1e-6 for LARS in SimCLR
	Nesterov    bool    // SGD only
	Eta         float32 // LARS trust coefficient; 0 means 1e-3
}

// Optimizer applies SGD or LARS to every trainable tensor of an nn.Params
// through its backend. Tensors of Kind nn.NotDecayed (batch-norm parameters
// and biases) get no weight decay and no LARS adaptation. The momentum of
// all tensors is one flat buffer, laid out as Params.Flat, so a checkpoint
// can save and restore it in one piece.
type Optimizer struct {
	cfg      Config
	backend  Backend
	params   *nn.Params
	momentum tensor.Buffer
	tensors  []stepTensor
}

// stepTensor holds the views of one trainable tensor, computed once.
type stepTensor struct {
	w, g, v tensor.Buffer
	decayed bool
}

// New returns an optimizer over the trainable tensors of p (allocated on
// b), with zero momentum.
func New(b Backend, p *nn.Params, cfg Config) (*Optimizer, error) {
	if cfg.Kind != SGD && cfg.Kind != LARS {
		return nil, fmt.Errorf("optimizer %v: unknown; use optim.SGD or optim.LARS", cfg.Kind)
	}
	if cfg.Eta == 0 {
		cfg.Eta = 1e-3
	}
	o := &Optimizer{cfg: cfg, backend: b, params: p, momentum: b.Alloc(max(p.Len(), 1))}
	for _, t := range p.Tensors() {
		if !t.Trainable() {
			continue
		}
		o.tensors = append(o.tensors, stepTensor{
			w: t.Value, g: t.Grad,
			v:       b.Slice(o.momentum, t.Offset, t.Len),
			decayed: t.Kind == nn.Decayed,
		})
	}
	return o, nil
}

// Config is the configuration the optimizer runs with (defaults filled in).
func (o *Optimizer) Config() Config { return o.cfg }

// Step updates every trainable tensor from Params.Grad with learning rate lr.
func (o *Optimizer) Step(lr float32) {
	for _, t := range o.tensors {
		switch o.cfg.Kind {
		case SGD:
			c := tensor.SGDConfig{LR: lr, Momentum: o.cfg.Momentum, Nesterov: o.cfg.Nesterov}
			if t.decayed {
				c.WeightDecay = o.cfg.WeightDecay
			}
			o.backend.SGDStep(c, t.w, t.g, t.v)
		case LARS:
			c := tensor.LARSConfig{LR: lr, Momentum: o.cfg.Momentum, WeightDecay: o.cfg.WeightDecay, Eta: o.cfg.Eta, Adapt: t.decayed}
			o.backend.LARSStep(c, t.w, t.g, t.v)
		}
	}
}

// State is the momentum buffer (laid out as Params.Flat), for checkpoints:
// Download it to save, Upload into it to resume.
func (o *Optimizer) State() tensor.Buffer { return o.momentum }

// Reset zeroes the momentum.
func (o *Optimizer) Reset() { o.backend.Zero(o.momentum) }

// Free releases the momentum buffer.
func (o *Optimizer) Free() { o.backend.Free(o.momentum) }
