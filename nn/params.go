// Package nn holds the parameter storage of a network and its layers.
//
// Params keeps every trainable tensor in one flat backend buffer, their
// gradients in a second flat buffer of the same layout, and non-trainable
// state (batch-norm running statistics and batch counters) in a third, so
// that an optimizer steps over one allocation, a checkpoint writer walks one
// ordered list of named tensors, and a training step allocates nothing.
//
// The layers (Conv2d, BatchNorm, Linear) register their tensors in Params
// under torchvision's names and pair a forward with a backward call of the
// tensor.Backend, side by side, in the style of karpathy/llm.c.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/simclr-go/simclr/tensor"
)

// Kind says where a tensor lives and how an optimizer treats it.
type Kind int

const (
	// Decayed is a trainable tensor that gets weight decay and LARS
	// adaptation: convolution and linear weights.
	Decayed Kind = iota
	// NotDecayed is a trainable tensor excluded from weight decay and LARS
	// adaptation: batch-norm weights and biases, linear biases.
	NotDecayed
	// State is non-trainable: batch-norm running_mean, running_var and
	// num_batches_tracked (stored as a float).
	State
)

func (k Kind) String() string {
	switch k {
	case Decayed:
		return "decayed"
	case NotDecayed:
		return "not-decayed"
	case State:
		return "state"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// InitKind names an initialisation law.
type InitKind int

const (
	InitZero    InitKind = iota // all zeros
	InitOne                     // all ones
	InitNormal                  // N(0, Scale^2)
	InitUniform                 // U(-Scale, Scale)
)

// Init is how Params.Initialize fills a tensor.
type Init struct {
	Kind  InitKind
	Scale float64
}

// Tensor is one named tensor of a Params.
type Tensor struct {
	Name  string
	Shape []int
	Kind  Kind
	Init  Init
	// Offset is the first element in Flat and Grad (trainable tensors) or
	// in State (Kind State); Len is the element count.
	Offset, Len int
	// Value is the view of the tensor's data and Grad the view of its
	// gradient (nil for State); both are nil until Params.Allocate.
	Value, Grad tensor.Buffer
}

// Trainable reports whether the tensor has a gradient.
func (t *Tensor) Trainable() bool { return t.Kind != State }

// Params is the storage of a network's tensors. Register every tensor with
// Add (the layer constructors do), then call Allocate once.
type Params struct {
	backend   tensor.Backend
	tensors   []*Tensor
	byName    map[string]*Tensor
	paramLen  int
	stateLen  int
	flat      tensor.Buffer
	grad      tensor.Buffer
	state     tensor.Buffer
	one       tensor.Buffer
	allocated bool
}

// NewParams returns an empty Params.
func NewParams() *Params { return &Params{byName: map[string]*Tensor{}} }

// Add registers a tensor. Order matters: it is the order of Names, Tensors
// and checkpoints (for a network, torchvision's state_dict order), and the
// layout of the flat buffers.
func (p *Params) Add(name string, kind Kind, init Init, shape ...int) *Tensor {
	if p.allocated {
		panic(fmt.Sprintf("nn.Params.Add(%q) after Allocate", name))
	}
	if _, dup := p.byName[name]; dup {
		panic(fmt.Sprintf("nn.Params.Add: duplicate tensor name %q", name))
	}
	n := 1
	for _, d := range shape {
		if d < 1 {
			panic(fmt.Sprintf("nn.Params.Add(%q): bad shape %v", name, shape))
		}
		n *= d
	}
	t := &Tensor{Name: name, Shape: append([]int(nil), shape...), Kind: kind, Init: init, Len: n}
	if kind == State {
		t.Offset = p.stateLen
		p.stateLen += n
	} else {
		t.Offset = p.paramLen
		p.paramLen += n
	}
	p.tensors = append(p.tensors, t)
	p.byName[name] = t
	return t
}

// Allocate creates the three flat buffers on b and the views of every
// tensor. The buffers are zero until Initialize or a checkpoint load.
func (p *Params) Allocate(b tensor.Backend) {
	if p.allocated {
		panic("nn.Params.Allocate called twice")
	}
	p.backend = b
	p.flat = b.Alloc(max(p.paramLen, 1))
	p.grad = b.Alloc(max(p.paramLen, 1))
	p.state = b.Alloc(max(p.stateLen, 1))
	p.one = b.Alloc(1)
	b.Upload(p.one, []float32{1})
	for _, t := range p.tensors {
		if t.Kind == State {
			t.Value = b.Slice(p.state, t.Offset, t.Len)
		} else {
			t.Value = b.Slice(p.flat, t.Offset, t.Len)
			t.Grad = b.Slice(p.grad, t.Offset, t.Len)
		}
	}
	p.allocated = true
}

// Initialize fills every tensor from its Init law, drawing in registration
// order from a generator seeded with seed, so the same seed gives the same
// network on every backend.
func (p *Params) Initialize(seed uint64) {
	p.mustBeAllocated("Initialize")
	rng := rand.New(rand.NewPCG(seed, 0x5eed1417))
	flat := make([]float32, p.paramLen)
	state := make([]float32, p.stateLen)
	for _, t := range p.tensors {
		dst := flat
		if t.Kind == State {
			dst = state
		}
		dst = dst[t.Offset : t.Offset+t.Len]
		switch t.Init.Kind {
		case InitZero:
			clear(dst)
		case InitOne:
			for i := range dst {
				dst[i] = 1
			}
		case InitNormal:
			for i := range dst {
				dst[i] = float32(rng.NormFloat64() * t.Init.Scale)
			}
		case InitUniform:
			for i := range dst {
				dst[i] = float32((2*rng.Float64() - 1) * t.Init.Scale)
			}
		default:
			panic(fmt.Sprintf("nn.Params.Initialize: tensor %q has unknown init %d", t.Name, t.Init.Kind))
		}
	}
	if p.paramLen > 0 {
		p.backend.Upload(p.flat, flat)
	}
	if p.stateLen > 0 {
		p.backend.Upload(p.state, state)
	}
}

// KaimingNormalFanOut is torch.nn.init.kaiming_normal_(mode='fan_out',
// nonlinearity='relu'): N(0, 2/fanOut), fanOut = out channels * kernel area.
func KaimingNormalFanOut(fanOut int) Init {
	return Init{Kind: InitNormal, Scale: math.Sqrt(2 / float64(fanOut))}
}

// LinearDefault is PyTorch's default nn.Linear initialisation of both weight
// (kaiming_uniform_ with a = sqrt(5)) and bias: U(-1/sqrt(in), 1/sqrt(in)).
func LinearDefault(in int) Init {
	return Init{Kind: InitUniform, Scale: 1 / math.Sqrt(float64(in))}
}

func (p *Params) mustBeAllocated(op string) {
	if !p.allocated {
		panic("nn.Params." + op + " before Allocate")
	}
}

// Tensors returns every tensor, trainable and state, in registration order.
// The slice is shared: do not modify it.
func (p *Params) Tensors() []*Tensor { return p.tensors }

// Names returns every tensor name in registration order.
func (p *Params) Names() []string {
	names := make([]string, len(p.tensors))
	for i, t := range p.tensors {
		names[i] = t.Name
	}
	return names
}

// Tensor returns the named tensor, or nil.
func (p *Params) Tensor(name string) *Tensor { return p.byName[name] }

// Lookup returns the view and shape of the named tensor, or nil, nil.
func (p *Params) Lookup(name string) (view tensor.Buffer, shape []int) {
	t := p.byName[name]
	if t == nil {
		return nil, nil
	}
	return t.Value, t.Shape
}

// Flat is the buffer of all trainable tensors.
func (p *Params) Flat() tensor.Buffer { p.mustBeAllocated("Flat"); return p.flat }

// Grad is the gradient buffer, laid out as Flat.
func (p *Params) Grad() tensor.Buffer { p.mustBeAllocated("Grad"); return p.grad }

// State is the buffer of non-trainable tensors.
func (p *Params) State() tensor.Buffer { p.mustBeAllocated("State"); return p.state }

// Len is the number of trainable elements (the length of Flat and Grad).
func (p *Params) Len() int { return p.paramLen }

// StateLen is the number of non-trainable elements (the length of State).
func (p *Params) StateLen() int { return p.stateLen }

// Backend is the backend the buffers live on (nil before Allocate).
func (p *Params) Backend() tensor.Backend { return p.backend }

// One is a 1-element buffer holding 1, for adding a constant with Axpy
// (the batch-norm counters).
func (p *Params) One() tensor.Buffer { p.mustBeAllocated("One"); return p.one }

// Free releases the buffers; the Params must not be used afterwards.
func (p *Params) Free() {
	if !p.allocated {
		return
	}
	for _, b := range []tensor.Buffer{p.flat, p.grad, p.state, p.one} {
		p.backend.Free(b)
	}
	p.allocated = false
}
