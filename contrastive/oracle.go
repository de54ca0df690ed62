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
// computes the NT-Xent loss (L_B for h^l, L_B - (L_B1 + L_B2)/2 for H^l) and
// its gradient, and adds alpha times the gradient into the estimator's vector.
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

	inputs   map[int]tensor.Buffer // views -> device input buffer
	dz       map[int]tensor.Buffer // views -> loss gradient buffer
	gathered map[int]tensor.Buffer // views -> projections of all ranks' shares

	// shard, when set, splits every draw over its ranks (L-SGD on several
	// ranks): this rank draws and evaluates 2^l/P of the 2^l images, the
	// projections of all shares are gathered so that the loss is the one
	// of all 2^l images, and the gradient of this rank's share is scaled
	// by P, so that the ranks' mean (the trainer's all-reduce) is the
	// gradient of the whole draw.
	shard Shard
	pool  map[int][]*draw // level -> released draws, for reuse

	// separate computes H^l from three passes (--halves separate).
	separate bool
	// passes counts forward/backward passes through the network, the
	// oracle evaluations of docs/definitions.md, section 3 "Cost accounting":
	// one per Eval with shared halves, three per H^l with separate ones.
	passes int64

	// Loss bookkeeping for the metrics: the full-batch losses L_B of the
	// evaluations at the current parameters since the last Losses call,
	// raw and less log(2N - 1) (see Losses).
	lossSum, excessSum float64
	lossN              int

	// loss is the contrastive loss of every query (SetLoss); sogU holds
	// SogCLR's u, one per training image, and gamma its step; sogBuf
	// caches the device buffers of a batch's u (decoupled.go).
	loss   Loss
	sogU   []float32
	gamma  float64
	sogBuf map[int]tensor.Buffer
}

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

// NewOracle makes the oracle. maxLevel is the largest level it serves
// (2^maxLevel images must fit in the data set and in memory); prev is the
// buffer the trainer keeps x_{t-1} in (nil when no estimator evaluates at
// Previous).
func NewOracle(b tensor.Backend, m *resnet18.Model, stream *loader.Stream, tau float64, maxLevel int, prev tensor.Buffer) *Oracle {
	o := &Oracle{b: b, model: m, stream: stream, tau: float32(tau), viewLen: stream.ViewLen(), maxLevel: maxLevel,
		prev: prev, inputs: map[int]tensor.Buffer{}, dz: map[int]tensor.Buffer{}, gathered: map[int]tensor.Buffer{},
		pool: map[int][]*draw{}, sogBuf: map[int]tensor.Buffer{}}
	if prev != nil {
		o.cur = b.Alloc(m.Params().Len())
	}
	return o
}

// MaxLevel is the largest servable level.
func (o *Oracle) MaxLevel() int { return o.maxLevel }

// Shard is what a split draw needs of the communicator between ranks
// (collective.Comm has it).
type Shard interface {
	// Rank is this process's rank, 0..Size()-1.
	Rank() int
	// Size is the number of ranks.
	Size() int
	// AllReduceSum replaces buf, on every rank, with the element-wise sum
	// of buf over the ranks.
	AllReduceSum(buf tensor.Buffer) error
}

// SetShard splits every draw over the ranks of c (L-SGD on several ranks;
// see the shard field). Call it before the first Draw.
func (o *Oracle) SetShard(c Shard) { o.shard = c }

// Sharded says whether draws are split over ranks.
func (o *Oracle) Sharded() bool { return o.shard != nil }

// share is the number of a draw's images at level this rank takes: all
// of them, or its 1/P part when draws are split over P ranks.
func (o *Oracle) share(level int) int {
	if o.shard != nil {
		return (1 << level) / o.shard.Size()
	}
	return 1 << level
}

// Draw takes the next 2^level images of the stream with their two views
// (this rank's share of them when draws are split).
func (o *Oracle) Draw(level int) (mlmc.Sample, int64, error) {
	if level < 1 || level > o.maxLevel {
		return nil, 0, fmt.Errorf("level %d is outside the servable levels 1..%d", level, o.maxLevel)
	}
	n := o.share(level)
	if n < 1 {
		return nil, 0, fmt.Errorf("level %d has %d images, fewer than the %d ranks to split them over", level, 1<<level, o.shard.Size())
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
	n := 1 << d.level
	views := 2 * o.share(d.level)
	if o.loss != NTXent && (diff || at == mlmc.Previous) {
		return fmt.Errorf("the %s loss answers plain queries at the current parameters only, not H^l or x_{t-1} (use --estimator lsgd's single level)", o.loss)
	}
	proj := o.model.Config().ProjDim
	x := o.buffer(o.inputs, views*o.viewLen)
	o.b.Upload(x, d.views)
	params := o.model.Params()
	if at == mlmc.Previous {
		if o.prev == nil {
			return fmt.Errorf("evaluation at x_{t-1} but the trainer keeps no previous parameters")
		}
		o.b.Copy(o.cur, params.Flat())
		o.b.Copy(params.Flat(), o.prev)
		// x_{t-1} with its own head statistics (group norm), so that VR's
		// corrections telescope although the statistics move.
		o.model.UsePreviousHeadStatistics(true)
	}
	added := false // the gradient is already in out
	var err error
	z := o.model.Forward(x, views, true, at == mlmc.Current)
	var res tensor.LossResult
	switch {
	case o.shard != nil:
		// Gather: each rank writes its share's rows (its images are
		// images r*n/P.. of the draw) into zeros, and the sum over ranks
		// is every row. Split draws are L-SGD's, which never asks for H^l.
		all := o.buffer(o.gathered, 2*n*proj)
		dzAll := o.buffer(o.dz, 2*n*proj)
		mine := o.shard.Rank() * views * proj
		o.b.Zero(all)
		o.b.Copy(o.b.Slice(all, mine, views*proj), z)
		if err := o.shard.AllReduceSum(all); err != nil {
			if at == mlmc.Previous {
				o.b.Copy(params.Flat(), o.cur)
				o.model.UsePreviousHeadStatistics(false)
			}
			return fmt.Errorf("gather the projections of level %d: %w", d.level, err)
		}
		if o.loss == NTXent {
			res = o.b.NTXent(n, proj, o.tau, diff, all, dzAll)
		} else {
			indices := d.indices
			if o.loss == SogCLR {
				if indices, err = o.gatherIndices(n, d.indices); err != nil {
					return err
				}
			}
			if res, err = o.decoupled(n, proj, indices, all, dzAll); err != nil {
				return err
			}
		}
		o.model.Backward(o.b.Slice(dzAll, mine, views*proj))
		o.passes++
		alpha *= float64(o.shard.Size())
	default:
		dz := o.buffer(o.dz, views*proj)
		if o.loss == NTXent {
			res = o.b.NTXent(n, proj, o.tau, diff && !o.separate, z, dz)
		} else if res, err = o.decoupled(n, proj, d.indices, z, dz); err != nil {
			return err
		}
		o.model.Backward(dz)
		o.passes++
		if diff && o.separate {
			// grad L_B goes in now; each half then runs on its own views (the
			// first n/2 images are the first n views) with its own batch
			// statistics, without touching the running statistics: the query
			// is one batch of 2^l images as far as they go.
			o.b.Axpy(out, float32(alpha), params.Grad())
			half := views / 2
			dzHalf := o.buffer(o.dz, half*proj)
			halfLoss := 0.0
			for k := range 2 {
				xh := o.b.Slice(x, k*half*o.viewLen, half*o.viewLen)
				zh := o.model.Forward(xh, half, true, false)
				r := o.b.NTXent(n/2, proj, o.tau, false, zh, dzHalf)
				o.model.Backward(dzHalf)
				o.passes++
				halfLoss += r.Full / 2
				o.b.Axpy(out, float32(-alpha/2), params.Grad())
			}
			res.Loss = res.Full - halfLoss
			added = true
		}
	}
	if at == mlmc.Previous {
		o.b.Copy(params.Flat(), o.cur)
		o.model.UsePreviousHeadStatistics(false)
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
		o.excessSum += res.Full - o.lossScale(n)
		o.lossN++
	}
	if !added {
		o.b.Axpy(out, float32(alpha), params.Grad())
	}
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
	for _, cache := range []map[int]tensor.Buffer{o.inputs, o.dz, o.gathered, o.sogBuf} {
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
