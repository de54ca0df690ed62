package contrastive

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// BufferOps are mlmc.VecOps over backend buffers of n elements: the
// estimators combine gradients where they live (on a GPU for CUDA).
type BufferOps struct {
	b VectorBackend
	n int
}

// VectorBackend is the part of tensor.Backend BufferOps uses.
type VectorBackend interface {
	tensor.Memory
	tensor.Vector
}

// NewBufferOps are the vector operations over buffers of n elements of b.
func NewBufferOps(b VectorBackend, n int) BufferOps { return BufferOps{b: b, n: n} }

func (o BufferOps) New() tensor.Buffer                   { return o.b.Alloc(o.n) }
func (o BufferOps) Zero(v tensor.Buffer)                 { o.b.Zero(v) }
func (o BufferOps) Copy(dst, src tensor.Buffer)          { o.b.Copy(dst, src) }
func (o BufferOps) Scale(alpha float64, v tensor.Buffer) { o.b.Scale(v, float32(alpha)) }
func (o BufferOps) Axpy(alpha float64, x, y tensor.Buffer) {
	o.b.Axpy(y, float32(alpha), x)
}

// The mlmc.DiagOps of the per-level diagnostics: inner products on the
// device, random directions drawn on the host and uploaded once.
func (o BufferOps) Dot(x, y tensor.Buffer) float64 { return o.b.Dot(x, y) }
func (o BufferOps) Free(v tensor.Buffer)           { o.b.Free(v) }
func (o BufferOps) Normal(v tensor.Buffer, r *rand.Rand) {
	host := make([]float32, v.Len())
	for i := range host {
		host[i] = float32(r.NormFloat64())
	}
	o.b.Upload(v, host)
}

// ErrNonFinite is returned (wrapped) when a loss or gradient is NaN or Inf.
var ErrNonFinite = errors.New("loss is not finite")

// draw is one recorded query: its level and the augmented views of its
// 2^level images, kept on the host so that a VR correction can evaluate
// exactly the same views at x_{t-1}.
type draw struct {
	level   int
	views   []float32 // (2n, 3, H, W)
	indices []int     // the images' indices in the training set (SogCLR's u)
}

// Oracle is the SimCLR oracle of docs/definitions.md, section 4 "Contrastive
// learning as a biased oracle": a query at level l takes 2^l images from the
// loader stream, runs the network once in training mode on their 2^(l+1) views,
// computes the contrastive loss (NT-Xent's L_B for h^l, L_B - (L_B1 + L_B2)/2
// for H^l, or another Loss) and its gradient, and adds alpha times the
// gradient into the estimator's vector. Sharded splits its draws over ranks.
type Oracle struct {
	b        tensor.Backend
	model    *resnet18.Model
	stream   *loader.Stream
	viewLen  int
	maxLevel int

	// prev holds x_{t-1} (the trainer copies it before each step); cur is
	// scratch holding x_t while the network evaluates at x_{t-1}.
	prev, cur tensor.Buffer

	inputs map[int]tensor.Buffer // views -> device input buffer
	dz     map[int]tensor.Buffer // views -> loss gradient buffer
	pool   map[int][]*draw       // level -> released draws, for reuse

	// separate computes H^l from three passes (--halves separate).
	separate bool
	// passes counts forward/backward passes through the network, the
	// oracle evaluations of docs/definitions.md, section 3 "Cost accounting":
	// one per Eval with shared halves, three per H^l with separate ones.
	passes int64

	// Loss bookkeeping for the metrics: the full-batch losses L_B of the
	// evaluations at the current parameters since the last Losses call,
	// raw and less the loss's Chance (see Losses).
	lossSum, excessSum float64
	lossN              int

	// loss is the contrastive loss of every query (NT-Xent unless SetLoss).
	loss Loss

	// graphImages is the largest batch whose pass runs as a recorded
	// graph on a backend with tensor.StepGraphs (SetStepGraphs).
	graphImages int
}

// DefaultGraphImages is the largest level batch, in images, whose query
// runs as a recorded graph where the backend can (tensor.StepGraphs): the
// small levels, where the host's cost per kernel outweighs the kernels'.
const DefaultGraphImages = 32

// Halves is how H^l treats its two half-batch losses (--halves).
type Halves int

const (
	// HalvesShared (the zero value) is one forward and backward pass over
	// the 2^(l+1) views: the half-batch losses reuse the embeddings of the
	// whole batch, so with batch norm they see its statistics (not exact,
	// docs/definitions.md, section 4 "Contrastive learning as a biased
	// oracle").
	HalvesShared Halves = iota
	// HalvesSeparate is three passes: B, then B1 and B2 each through the
	// network on its own views with its own batch statistics. Exact.
	HalvesSeparate
)

func (h Halves) String() string {
	switch h {
	case HalvesShared:
		return "shared"
	case HalvesSeparate:
		return "separate"
	}
	return fmt.Sprintf("Halves(%d)", int(h))
}

// ParseHalves reads --halves: shared (or empty, as config files from
// before the setting have it) or separate.
func ParseHalves(name string) (Halves, error) {
	switch name {
	case "shared", "":
		return HalvesShared, nil
	case "separate":
		return HalvesSeparate, nil
	}
	return 0, fmt.Errorf("%q: use shared (one pass) or separate (three passes, exact with batch norm)", name)
}

// SetHalves chooses the construction of H^l: HalvesShared (the default) or
// HalvesSeparate.
func (o *Oracle) SetHalves(h Halves) {
	o.separate = h == HalvesSeparate
}

// Halves is the construction in use: HalvesShared or HalvesSeparate.
func (o *Oracle) Halves() Halves {
	if o.separate {
		return HalvesSeparate
	}
	return HalvesShared
}

// Passes is the number of forward/backward passes since the oracle was made
// plus what SetPasses restored.
func (o *Oracle) Passes() int64 { return o.passes }

// SetPasses restores the pass count of a resumed run.
func (o *Oracle) SetPasses(n int64) { o.passes = n }

// NewOracle makes the oracle, with the NT-Xent loss at temperature tau
// (SetLoss chooses another). maxLevel is the largest level it serves
// (2^maxLevel images must fit in the data set and in memory); prev is the
// buffer the trainer keeps x_{t-1} in (nil when no estimator evaluates at
// Previous).
func NewOracle(b tensor.Backend, m *resnet18.Model, stream *loader.Stream, tau float64, maxLevel int, prev tensor.Buffer) *Oracle {
	o := &Oracle{b: b, model: m, stream: stream, viewLen: stream.ViewLen(), maxLevel: maxLevel,
		prev: prev, inputs: map[int]tensor.Buffer{}, dz: map[int]tensor.Buffer{},
		pool: map[int][]*draw{}, loss: newNTXent(b, tau), graphImages: DefaultGraphImages}
	if prev != nil {
		o.cur = b.Alloc(m.Params().Len())
	}
	return o
}

// SetStepGraphs sets the largest batch, in images, whose query runs as a
// recorded graph on a backend that can (tensor.StepGraphs); 0 runs every
// query eagerly. The default is DefaultGraphImages. Only NT-Xent queries
// with shared halves run as graphs; the others always run eagerly.
func (o *Oracle) SetStepGraphs(maxImages int) { o.graphImages = maxImages }

// SetLoss chooses the loss of every query; the oracle frees it with its
// own buffers. Call it before the first Draw.
func (o *Oracle) SetLoss(l Loss) {
	o.loss.Free()
	o.loss = l
}

// Loss is the loss the queries compute.
func (o *Oracle) Loss() Loss { return o.loss }

// SetIteration tells a loss whose settings follow the run (Scheduled) that
// iteration iter (0-based) of total comes next; other losses need nothing.
func (o *Oracle) SetIteration(iter, total int) {
	if s, ok := o.loss.(Scheduled); ok {
		s.SetIteration(iter, total)
	}
}

// MaxLevel is the largest servable level.
func (o *Oracle) MaxLevel() int { return o.maxLevel }

// Draw takes the next 2^level images of the stream with their two views.
func (o *Oracle) Draw(level int) (mlmc.Sample, int64, error) {
	return o.drawShare(level, 1)
}

// drawShare takes the next 2^level/ranks images of the stream with their
// two views: one rank's share of a draw split over ranks.
func (o *Oracle) drawShare(level, ranks int) (mlmc.Sample, int64, error) {
	if level < 1 || level > o.maxLevel {
		return nil, 0, fmt.Errorf("level %d is outside the servable levels 1..%d", level, o.maxLevel)
	}
	n := (1 << level) / ranks
	if n < 1 {
		return nil, 0, fmt.Errorf("level %d has %d images, fewer than the %d ranks to split them over", level, 1<<level, ranks)
	}
	var d *draw
	if free := o.pool[level]; len(free) > 0 {
		d = free[len(free)-1]
		o.pool[level] = free[:len(free)-1]
	} else {
		d = &draw{level: level, views: make([]float32, 2*n*o.viewLen)}
	}
	got := o.stream.Next(n, d.views)
	d.indices = append(d.indices[:0], got.Indices...)
	return d, int64(n), nil
}

// Eval adds alpha times h^l (diff false) or H^l (diff true) of the draw,
// at x_t or x_{t-1}, into out. At x_{t-1} the batch-norm running statistics
// are left alone.
func (o *Oracle) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out tensor.Buffer) error {
	d := s.(*draw)
	if err := o.serves(diff, at); err != nil {
		return err
	}
	return o.atParams(at, func() error {
		if diff && o.separate {
			return o.evalSeparate(d, at, alpha, out)
		}
		n := 1 << d.level
		x, views := o.upload(d)
		res, err := o.pass(x, views, Batch{N: n, Proj: o.proj(), Diff: diff, Images: d.indices}, at)
		if err != nil {
			return err
		}
		o.passes++
		if err := o.record(d, at, views, res); err != nil {
			return err
		}
		o.b.Axpy(out, float32(alpha), o.model.Params().Grad())
		return nil
	})
}

// evalSeparate adds alpha times H^l of the draw into out from three
// passes: grad L_B goes in first; each half then runs on its own views (the
// first n/2 images are the first n views) with its own batch statistics,
// without touching the running statistics: the query is one batch of 2^l
// images as far as they go.
func (o *Oracle) evalSeparate(d *draw, at mlmc.Point, alpha float64, out tensor.Buffer) error {
	n, proj := 1<<d.level, o.proj()
	grad := o.model.Params().Grad()
	x, views := o.upload(d)
	z := o.model.Forward(x, views, true, at == mlmc.Current)
	dz := o.buffer(o.dz, views*proj)
	res, err := o.loss.Eval(Batch{N: n, Proj: proj, Images: d.indices}, z, dz)
	if err != nil {
		return err
	}
	o.model.Backward(dz)
	o.passes++
	o.b.Axpy(out, float32(alpha), grad)
	half := views / 2
	dzHalf := o.buffer(o.dz, half*proj)
	halfLoss := 0.0
	for k := range 2 {
		xh := o.b.Slice(x, k*half*o.viewLen, half*o.viewLen)
		zh := o.model.Forward(xh, half, true, false)
		r, err := o.loss.Eval(Batch{N: n / 2, Proj: proj, Images: d.indices[k*n/2 : (k+1)*n/2]}, zh, dzHalf)
		if err != nil {
			return err
		}
		o.model.Backward(dzHalf)
		o.passes++
		halfLoss += r.Full / 2
		o.b.Axpy(out, float32(-alpha/2), grad)
	}
	res.Loss = res.Full - halfLoss
	return o.record(d, at, views, res)
}

// pass runs the network forward on views views of x, the loss and the
// backward pass, leaving the gradient in the model's parameters. An
// NT-Xent batch of at most graphImages images on a backend with
// tensor.StepGraphs runs as a graph recorded once per shape and kind of
// query and replayed: the same kernels, bit for bit, at the cost of one
// launch instead of one host call each.
func (o *Oracle) pass(x tensor.Buffer, views int, batch Batch, at mlmc.Point) (tensor.LossResult, error) {
	update := at == mlmc.Current
	dz := o.buffer(o.dz, views*o.proj())
	g, graphs := o.b.(tensor.StepGraphs)
	nt, isNTXent := o.loss.(*ntXent)
	if !graphs || !isNTXent || batch.N > o.graphImages {
		z := o.model.Forward(x, views, true, update)
		res, err := o.loss.Eval(batch, z, dz)
		if err != nil {
			return res, err
		}
		o.model.Backward(dz)
		return res, nil
	}
	// Everything that decides the work queued: the graph holds this
	// oracle's buffers, the model's, and the host state of both.
	key := graphKey{o: o, views: views, diff: batch.Diff, at: at, tau: nt.tau, model: o.model.GraphState(update)}
	err := g.GraphStep(key, func() {
		z := o.model.Forward(x, views, true, update)
		g.QueueNTXent(batch.N, batch.Proj, nt.tau, batch.Diff, z, dz)
		o.model.Backward(dz)
	})
	if err != nil {
		// A device failure: NaN, which record turns into the failure
		// with the level named, as for an eager pass.
		return tensor.LossResult{Loss: math.NaN(), Full: math.NaN()}, nil
	}
	return g.ReadNTXent(batch.Diff), nil
}

// graphKey identifies the graph of one kind of query (pass).
type graphKey struct {
	o     *Oracle
	views int
	diff  bool
	at    mlmc.Point
	tau   float32
	model any
}

// serves refuses a query the loss does not support.
func (o *Oracle) serves(diff bool, at mlmc.Point) error {
	sup := o.loss.Kind().Supports()
	switch {
	case diff && !sup.Levels:
		return fmt.Errorf("the %s loss has no multilevel queries H^l (L-SGD's single level needs none)", o.loss.Kind())
	case at == mlmc.Previous && !sup.Previous:
		return fmt.Errorf("the %s loss has no queries at x_{t-1} (no VR estimator)", o.loss.Kind())
	}
	return nil
}

// atParams runs eval with the network at the parameters of at: x_t as they
// are, or x_{t-1} swapped in, with the head statistics of x_{t-1} (group
// norm, so that VR's corrections telescope although the statistics move),
// and x_t always swapped back, whatever eval returns.
func (o *Oracle) atParams(at mlmc.Point, eval func() error) error {
	if at != mlmc.Previous {
		return eval()
	}
	if o.prev == nil {
		return fmt.Errorf("evaluation at x_{t-1} but the trainer keeps no previous parameters")
	}
	params := o.model.Params()
	o.b.Copy(o.cur, params.Flat())
	o.b.Copy(params.Flat(), o.prev)
	o.model.UsePreviousHeadStatistics(true)
	defer func() {
		o.b.Copy(params.Flat(), o.cur)
		o.model.UsePreviousHeadStatistics(false)
	}()
	return eval()
}

// upload copies the draw's views to the device: the input buffer and its
// number of views.
func (o *Oracle) upload(d *draw) (tensor.Buffer, int) {
	views := len(d.views) / o.viewLen
	x := o.buffer(o.inputs, views*o.viewLen)
	o.b.Upload(x, d.views)
	return x, views
}

// proj is the projections' dimension.
func (o *Oracle) proj() int { return o.model.Config().ProjDim }

// record checks the query's losses and adds those at x_t to the metrics.
func (o *Oracle) record(d *draw, at mlmc.Point, views int, res tensor.LossResult) error {
	n := 1 << d.level
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
		o.excessSum += res.Full - o.loss.Chance(n)
		o.lossN++
	}
	return nil
}

// Release returns the draw's views to the pool.
func (o *Oracle) Release(s mlmc.Sample) {
	d := s.(*draw)
	o.pool[d.level] = append(o.pool[d.level], d)
}

// Losses returns, over the evaluations at x_t since the last call, the
// mean full-batch loss L_B and the mean of L_B less the loss's Chance of
// each batch's N (log(2N - 1) for NT-Xent, LossScale), and resets both. The first mixes scales when the levels
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

// Free releases the oracle's device buffers and its loss's.
func (o *Oracle) Free() {
	for _, cache := range []map[int]tensor.Buffer{o.inputs, o.dz} {
		for k, buf := range cache {
			o.b.Free(buf)
			delete(cache, k)
		}
	}
	o.loss.Free()
	if o.cur != nil {
		o.b.Free(o.cur)
		o.cur = nil
	}
}
