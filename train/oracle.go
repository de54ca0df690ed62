package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// bufferOps are mlmc.VecOps over backend buffers of n elements: the
// estimators combine gradients where they live (on a GPU for CUDA).
type bufferOps struct {
	b tensor.Backend
	n int
}

func (o bufferOps) New() tensor.Buffer                   { return o.b.Alloc(o.n) }
func (o bufferOps) Zero(v tensor.Buffer)                 { o.b.Zero(v) }
func (o bufferOps) Copy(dst, src tensor.Buffer)          { o.b.Copy(dst, src) }
func (o bufferOps) Scale(alpha float64, v tensor.Buffer) { o.b.Scale(v, float32(alpha)) }
func (o bufferOps) Axpy(alpha float64, x, y tensor.Buffer) {
	o.b.Axpy(y, float32(alpha), x)
}

// ErrNonFinite is returned (wrapped) when a loss or gradient is NaN or Inf.
var ErrNonFinite = errors.New("loss is not finite")

// draw is one recorded query: its level and the augmented views of its
// 2^level images, kept on the host so that a VR correction can evaluate
// exactly the same views at x_{t-1}.
type draw struct {
	level int
	views []float32 // (2n, 3, H, W)
}

// Oracle is SPEC section 2's SimCLR oracle: a query at level l takes 2^l
// images from the loader stream, runs the network once in training mode on
// their 2^(l+1) views, computes the NT-Xent loss (L_B for h^l, L_B - (L_B1 +
// L_B2)/2 for H^l) and its gradient, and adds alpha times the gradient
// into the estimator's vector.
type Oracle struct {
	b        tensor.Backend
	model    *resnet18.Model
	stream   *loader.Stream
	tau      float32
	viewLen  int
	maxLevel int

	// prev holds x_{t-1} (the trainer copies it before each step); cur is
	// scratch holding x_t while the network evaluates at x_{t-1}.
	prev, cur tensor.Buffer

	inputs map[int]tensor.Buffer // views -> device input buffer
	dz     map[int]tensor.Buffer // views -> loss gradient buffer
	pool   map[int][]*draw       // level -> released draws, for reuse

	// Loss bookkeeping for the metrics: the full-batch losses L_B of the
	// evaluations at the current parameters since the last Losses call,
	// raw and less log(2N - 1) (see Losses).
	lossSum, excessSum float64
	lossN              int
}

// NewOracle makes the oracle. maxLevel is the largest level it serves
// (2^maxLevel images must fit in the data set and in memory); prev is the
// buffer the trainer keeps x_{t-1} in (nil when no estimator evaluates at
// Previous).
func NewOracle(b tensor.Backend, m *resnet18.Model, stream *loader.Stream, tau float64, maxLevel int, prev tensor.Buffer) *Oracle {
	o := &Oracle{b: b, model: m, stream: stream, tau: float32(tau), viewLen: stream.ViewLen(), maxLevel: maxLevel,
		prev: prev, inputs: map[int]tensor.Buffer{}, dz: map[int]tensor.Buffer{}, pool: map[int][]*draw{}}
	if prev != nil {
		o.cur = b.Alloc(m.Params().Len())
	}
	return o
}

// MaxLevel is the largest servable level.
func (o *Oracle) MaxLevel() int { return o.maxLevel }

// Draw takes the next 2^level images of the stream with their two views.
func (o *Oracle) Draw(level int) (mlmc.Sample, int64, error) {
	if level < 1 || level > o.maxLevel {
		return nil, 0, fmt.Errorf("level %d is outside the servable levels 1..%d", level, o.maxLevel)
	}
	n := 1 << level
	var d *draw
	if free := o.pool[level]; len(free) > 0 {
		d = free[len(free)-1]
		o.pool[level] = free[:len(free)-1]
	} else {
		d = &draw{level: level, views: make([]float32, 2*n*o.viewLen)}
	}
	o.stream.Next(n, d.views)
	return d, int64(n), nil
}

// Eval adds alpha times h^l (diff false) or H^l (diff true) of the draw,
// at x_t or x_{t-1}, into out. At x_{t-1} the batch-norm running statistics
// are left alone.
func (o *Oracle) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out tensor.Buffer) error {
	d := s.(*draw)
	n := 1 << d.level
	views := 2 * n
	x := o.buffer(o.inputs, views*o.viewLen)
	dz := o.buffer(o.dz, views*o.model.Config().ProjDim)
	o.b.Upload(x, d.views)
	params := o.model.Params()
	if at == mlmc.Previous {
		if o.prev == nil {
			return fmt.Errorf("evaluation at x_{t-1} but the trainer keeps no previous parameters")
		}
		o.b.Copy(o.cur, params.Flat())
		o.b.Copy(params.Flat(), o.prev)
	}
	z := o.model.Forward(x, views, true, at == mlmc.Current)
	res := o.b.NTXent(n, o.model.Config().ProjDim, o.tau, diff, z, dz)
	o.model.Backward(dz)
	if at == mlmc.Previous {
		o.b.Copy(params.Flat(), o.cur)
	}
	if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) || math.IsNaN(res.Full) || math.IsInf(res.Full, 0) {
		// A device failure (the GPU out of memory while planning this
		// level's activations, say) makes the CUDA backend skip its kernels
		// and report NaN: name the failure and the level, not a NaN loss.
		if err := o.b.Sync(); err != nil {
			return fmt.Errorf("level %d (%d images, %d views) at %s parameters: %w", d.level, n, views, at, err)
		}
		return fmt.Errorf("level %d at %s parameters: %w (L_B = %g)", d.level, at, ErrNonFinite, res.Full)
	}
	if at == mlmc.Current {
		o.lossSum += res.Full
		o.excessSum += res.Full - LossScale(n)
		o.lossN++
	}
	o.b.Axpy(out, float32(alpha), params.Grad())
	return nil
}

// Release returns the draw's views to the pool.
func (o *Oracle) Release(s mlmc.Sample) {
	d := s.(*draw)
	o.pool[d.level] = append(o.pool[d.level], d)
}

// LossScale is log(2N - 1), the SimCLR loss L_B of a batch of N images
// whose 2N embeddings are all alike (each view's positive is one of its
// 2N - 1 candidates): the loss of a network that has learnt nothing. L_B
// grows with it, so losses of batches of different sizes (MLMC levels, or
// runs with different L) compare only after subtracting it.
func LossScale(n int) float64 { return math.Log(float64(2*n - 1)) }

// Losses returns, over the evaluations at x_t since the last call, the
// mean full-batch loss L_B and the mean of L_B - log(2N - 1) (LossScale of
// each batch's N), and resets both. The first mixes scales when the levels
// differ; the second compares across levels and runs.
func (o *Oracle) Losses() (raw, excess float64) {
	if o.lossN == 0 {
		return math.NaN(), math.NaN()
	}
	raw, excess = o.lossSum/float64(o.lossN), o.excessSum/float64(o.lossN)
	o.lossSum, o.excessSum, o.lossN = 0, 0, 0
	return raw, excess
}

func (o *Oracle) buffer(cache map[int]tensor.Buffer, n int) tensor.Buffer {
	buf := cache[n]
	if buf == nil {
		buf = o.b.Alloc(n)
		cache[n] = buf
	}
	return buf
}

// Free releases the oracle's device buffers.
func (o *Oracle) Free() {
	for _, cache := range []map[int]tensor.Buffer{o.inputs, o.dz} {
		for k, buf := range cache {
			o.b.Free(buf)
			delete(cache, k)
		}
	}
	if o.cur != nil {
		o.b.Free(o.cur)
		o.cur = nil
	}
}
