package contrastive

import (
	"fmt"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/tensor"
)

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

// Sharded is an Oracle whose every draw is split over ranks (L-SGD on
// several ranks): this rank draws and evaluates 2^l/P of the 2^l images,
// the projections of all shares are gathered so that the loss is the one
// of all 2^l images, and the gradient of this rank's share is scaled by P,
// so that the ranks' mean (the trainer's all-reduce) is the gradient of
// the whole draw. It serves the estimators as the Oracle does.
type Sharded struct {
	o     *Oracle
	shard Shard
	// gathered holds, by length, the projections of all ranks' shares
	// and the image indices of a loss with per-image state.
	gathered map[int]tensor.Buffer
}

// NewSharded splits every draw of o over the ranks of c. The oracle keeps
// its bookkeeping (Passes, Losses) and must not be queried directly.
func NewSharded(o *Oracle, c Shard) *Sharded {
	return &Sharded{o: o, shard: c, gathered: map[int]tensor.Buffer{}}
}

// MaxLevel is the oracle's.
func (s *Sharded) MaxLevel() int { return s.o.MaxLevel() }

// Draw takes this rank's share of the next draw of 2^level images.
func (s *Sharded) Draw(level int) (mlmc.Sample, int64, error) {
	return s.o.drawShare(level, s.shard.Size())
}

// Release returns the draw to the oracle's pool.
func (s *Sharded) Release(smp mlmc.Sample) { s.o.Release(smp) }

// Eval adds alpha times the gradient of the whole draw's loss, as this
// rank's share contributes to it, into out. Split draws are L-SGD's, so
// the halves of H^l are always shared.
func (s *Sharded) Eval(smp mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out tensor.Buffer) error {
	o := s.o
	d := smp.(*draw)
	if err := o.serves(diff, at); err != nil {
		return err
	}
	return o.atParams(at, func() error {
		n, proj := 1<<d.level, o.proj()
		x, views := o.upload(d)
		z := o.model.Forward(x, views, true, at == mlmc.Current)
		all, err := s.gatherProjections(d.level, z, views*proj, 2*n*proj)
		if err != nil {
			return err
		}
		images := d.indices
		if o.loss.Kind().Supports().ImageState {
			if images, err = s.gatherIndices(n, d.indices); err != nil {
				return err
			}
		}
		dzAll := o.buffer(o.dz, 2*n*proj)
		res, err := o.loss.Eval(Batch{N: n, Proj: proj, Diff: diff, Images: images}, all, dzAll)
		if err != nil {
			return err
		}
		o.model.Backward(o.b.Slice(dzAll, s.shard.Rank()*views*proj, views*proj))
		o.passes++
		if err := o.record(d, at, views, res); err != nil {
			return err
		}
		o.b.Axpy(out, float32(alpha*float64(s.shard.Size())), o.model.Params().Grad())
		return nil
	})
}

// gatherProjections returns the projections of every rank's share: each
// rank writes its share's rows (its images are images r*n/P.. of the
// draw) into zeros, and the sum over ranks is every row.
func (s *Sharded) gatherProjections(level int, z tensor.Buffer, mine, whole int) (tensor.Buffer, error) {
	b := s.o.b
	all := s.buffer(whole)
	b.Zero(all)
	b.Copy(b.Slice(all, s.shard.Rank()*mine, mine), z)
	if err := s.shard.AllReduceSum(all); err != nil {
		return nil, fmt.Errorf("gather the projections of level %d: %w", level, err)
	}
	return all, nil
}

// gatherIndices returns the indices of a split draw's images on every rank:
// each rank writes its share's (as float32, exact below maxIndexed) into
// zeros, and the sum over ranks is all of them, in the order of the
// gathered projections.
func (s *Sharded) gatherIndices(n int, mine []int) ([]int, error) {
	b := s.o.b
	all := s.buffer(n)
	host := make([]float32, n)
	off := s.shard.Rank() * len(mine)
	for k, idx := range mine {
		host[off+k] = float32(idx)
	}
	b.Upload(all, host)
	if err := s.shard.AllReduceSum(all); err != nil {
		return nil, fmt.Errorf("gather the image indices: %w", err)
	}
	b.Download(host, all)
	out := make([]int, n)
	for k, v := range host {
		out[k] = int(v)
	}
	return out, nil
}

func (s *Sharded) buffer(n int) tensor.Buffer { return s.o.buffer(s.gathered, n) }

// Free releases the gathering buffers (the oracle frees its own).
func (s *Sharded) Free() {
	for n, buf := range s.gathered {
		s.o.b.Free(buf)
		delete(s.gathered, n)
	}
}
