package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/internal/parallel"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// The inner mean of docs/definitions.md, section 10 "Decoupled losses":
// for view i of image k among all n training images, the mean over the
// 2n - 2 views of the other images of exp(s_iv / tau). SogCLR's u_k tracks
// it (as the mean of the image's two views); SimCLR and DCL estimate it
// from one batch. This file measures how far each estimate is from it.

// Row and column block sizes of InnerMeans' tiles: a 256 x 4096 float32
// tile (4 MiB) keeps a row block's products in cache while exp runs.
const (
	innerRowBlock = 256
	innerColBlock = 4096
)

// InnerMeans returns, for each of the 2n rows of z ((2n, d), unit vectors;
// rows 2k and 2k+1 the two views of image k), the full-data inner mean
// g_i = (1/(2n-2)) sum_{v not i, not i's positive} exp(z_i . z_v / tau).
// The similarities come from gemm in row blocks against the columns from
// the block on (each pair once: S is symmetric) and the sums are float64,
// over workers goroutines.
func InnerMeans(gemm blas.Gemm, z []float32, n, d int, tau float64, workers int) []float64 {
	rows := 2 * n
	if n < 2 || d < 1 || len(z) != rows*d || !(tau > 0) {
		panic(fmt.Sprintf("InnerMeans: n=%d images (at least 2), d=%d, tau=%g and %d values (want 2n*d)", n, d, tau, len(z)))
	}
	parts := max(workers, 1)
	sums := make([]float64, rows)
	tile := make([]float32, innerRowBlock*innerColBlock)
	cols := make([][]float64, parts) // each part's column sums of a tile
	for p := range cols {
		cols[p] = make([]float64, innerColBlock)
	}
	inv := 1 / tau
	for r0 := 0; r0 < rows; r0 += innerRowBlock {
		nr := min(innerRowBlock, rows-r0)
		for c0 := r0; c0 < rows; c0 += innerColBlock {
			nc := min(innerColBlock, rows-c0)
			gemm.Sgemm(false, true, nr, nc, d, 1, z[r0*d:(r0+nr)*d], d, z[c0*d:(c0+nc)*d], d, 0, tile[:nr*nc], nc)
			used := parallel.For(nr, parts, func(p, lo, hi int) {
				acc := cols[p][:nc]
				clear(acc)
				for r := lo; r < hi; r++ {
					i := r0 + r
					// Pair (i, v) counted once, from the row of the smaller
					// index, and never with i's positive i^1.
					from := max(i+1-c0, 0)
					row := tile[r*nc : (r+1)*nc]
					var s float64
					for j := from; j < nc; j++ {
						if c0+j == i^1 {
							continue
						}
						e := math.Exp(float64(row[j]) * inv)
						s += e
						acc[j] += e
					}
					sums[i] += s
				}
			})
			for p := range used {
				for j, v := range cols[p][:nc] {
					sums[c0+j] += v
				}
			}
		}
	}
	negatives := float64(rows - 2)
	for i := range sums {
		sums[i] /= negatives
	}
	return sums
}

// ForwardBatches embeds every image's two views of seed's epoch
// epochs[img] (a LastVisits' LastEpoch: the views of its last visit) in
// real batches: the images of order, batch at a time (the last batch
// shorter when batch does not divide n), through m in training mode, so
// that batch norm normalises each batch with its own statistics as
// SimCLR's and DCL's batches are. It returns the unit-normalised
// projections, (2n, d) in image order: BatchMeans with the same order and
// batch gives each view's in-batch mean, InnerMeans the full-data means of
// the same embeddings.
func ForwardBatches(b tensor.Backend, m *resnet18.Model, set *data.Set, mean, std [3]float32, aug augment.Config,
	seed uint64, epochs []int, order []int, batch int, workers int) ([]float32, error) {
	n := set.Len()
	if batch < 2 || len(order) != n || len(epochs) != n {
		return nil, fmt.Errorf("forward batches: batch %d (at least 2), %d images ordered and %d epochs for %d images", batch, len(order), len(epochs), n)
	}
	parts := max(workers, 1)
	aug = contrastive.AtImageSize(aug, set)
	transforms := make([]*augment.Transform, parts)
	for i := range transforms {
		t, err := augment.NewTransform(aug, set.H, set.W, mean, std)
		if err != nil {
			return nil, fmt.Errorf("forward batches: %s: %w", set.Name, err)
		}
		transforms[i] = t
	}
	viewLen := transforms[0].ViewLen()
	d := m.Config().ProjDim
	views := make([]float32, 2*batch*viewLen)
	x := b.Alloc(len(views))
	defer b.Free(x)
	z := make([]float32, 2*batch*d)
	out := make([]float32, 2*n*d)
	for lo := 0; lo < n; lo += batch {
		imgs := order[lo:min(lo+batch, n)]
		nv := 2 * len(imgs)
		parallel.For(len(imgs), parts, func(p, from, to int) {
			for k := from; k < to; k++ {
				img := imgs[k]
				for v := range 2 {
					transforms[p].Apply(set.Image(img), augment.Key{Seed: seed, Epoch: epochs[img], Index: img, View: v},
						views[(2*k+v)*viewLen:(2*k+v+1)*viewLen])
				}
			}
		})
		xb := b.Slice(x, 0, nv*viewLen)
		b.Upload(xb, views[:nv*viewLen])
		b.Download(z[:nv*d], m.Forward(xb, nv, true, false))
		for k, img := range imgs {
			for v := range 2 {
				row := out[(2*img+v)*d : (2*img+v+1)*d]
				copy(row, z[(2*k+v)*d:(2*k+v+1)*d])
				unit(row)
			}
		}
	}
	if err := b.Sync(); err != nil {
		return nil, fmt.Errorf("forward batches: %w", err)
	}
	return out, nil
}

// BatchMeans returns each view's in-batch mean m_i of section 10 (the
// estimate of its inner mean SimCLR's and DCL's denominators make) when
// the images are taken in order, batch at a time: m_i is the mean of
// exp(z_i . z_v / tau) over the 2b - 2 views of the other images of its
// batch. Images of a last batch shorter than batch get NaN.
func BatchMeans(gemm blas.Gemm, z []float32, n, d int, tau float64, order []int, batch int) []float64 {
	if batch < 2 || len(order) != n || len(z) != 2*n*d {
		panic(fmt.Sprintf("BatchMeans: batch %d (at least 2), %d images ordered of %d, %d values (want 2n*d)", batch, len(order), n, len(z)))
	}
	out := make([]float64, 2*n)
	for i := range out {
		out[i] = math.NaN()
	}
	views := 2 * batch
	gathered := make([]float32, views*d)
	s := make([]float32, views*views)
	inv := 1 / tau
	for lo := 0; lo+batch <= n; lo += batch {
		for k, img := range order[lo : lo+batch] {
			copy(gathered[2*k*d:(2*k+2)*d], z[2*img*d:(2*img+2)*d])
		}
		gemm.Sgemm(false, true, views, views, d, 1, gathered, d, gathered, d, 0, s, views)
		for a := range views {
			var sum float64
			for v, sim := range s[a*views : (a+1)*views] {
				if v != a && v != a^1 {
					sum += math.Exp(float64(sim) * inv)
				}
			}
			out[2*order[lo+a/2]+a%2] = sum / float64(views-2)
		}
	}
	return out
}

// LastVisits is a SogCLR run's training stream replayed at the network's
// current parameters: each image's two views as its last visit drew them.
type LastVisits struct {
	// Z holds the unit-normalised projections, (2n, D): rows 2k and 2k+1
	// are image k's views (zero for an image never visited).
	Z []float32
	D int
	// DrawsAgo is, per image, the draws since its last visit (1: the last
	// draw of the run), 0 for an image never visited.
	DrawsAgo []int
	// LastEpoch is the epoch of each image's last visit (-1: never), which
	// with the stream's seed names its views (augment.Key).
	LastEpoch []int
}

// ReplayLastVisits embeds every image's two views of its last visit in
// the stream (seed, aug) of a run that drew batch images a draw and stands
// at head: the stream is replayed over the draws that hold a last visit,
// each batch through m in training mode (batch statistics of the very
// batch training drew; the running statistics are left alone), as the
// training query at that draw computed it, but with today's parameters.
func ReplayLastVisits(b tensor.Backend, m *resnet18.Model, set *data.Set, mean, std [3]float32, aug augment.Config,
	seed uint64, batch int, head loader.Position, workers int) (*LastVisits, error) {
	n := set.Len()
	end := head.Epoch*n + head.Offset // global position of the next image
	switch {
	case batch < 2:
		return nil, fmt.Errorf("replay: a draw of %d images; SogCLR draws at least 2", batch)
	case head.Offset < 0 || head.Offset >= n || head.Epoch < 0:
		return nil, fmt.Errorf("replay: stream position epoch %d offset %d is not one of %s's %d images (another data set or --val-split?)", head.Epoch, head.Offset, set.Name, n)
	case end%batch != 0:
		return nil, fmt.Errorf("replay: the stream stands at image %d, not at the end of a draw of %d images (draws of several ranks or levels are not replayed)", end, batch)
	}
	// The last visit of image k is its position in the epoch of head if
	// before head's offset, else in the epoch before.
	last := make([]int, n)
	for i := range last {
		last[i] = -1
	}
	for e := max(head.Epoch-1, 0); e <= head.Epoch; e++ {
		for off, img := range loader.Permutation(n, seed, e) {
			if g := e*n + off; g < end {
				last[img] = g
			}
		}
	}
	var draws []int // the draws holding a last visit, in stream order
	for _, g := range last {
		if g >= 0 {
			draws = append(draws, g/batch)
		}
	}
	slices.Sort(draws)
	draws = slices.Compact(draws)

	stream, err := loader.Open(set, mean, std, contrastive.AtImageSize(aug, set), seed, workers)
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	d := m.Config().ProjDim
	out := &LastVisits{Z: make([]float32, 2*n*d), D: d, DrawsAgo: make([]int, n), LastEpoch: make([]int, n)}
	for img, g := range last {
		out.LastEpoch[img] = -1
		if g >= 0 {
			out.LastEpoch[img] = g / n
		}
	}
	views := make([]float32, 2*batch*stream.ViewLen())
	x := b.Alloc(len(views))
	defer b.Free(x)
	z := make([]float32, 2*batch*d)
	next := -1
	for _, t := range draws {
		if t != next {
			if err := stream.Seek(loader.Position{Epoch: t * batch / n, Offset: t * batch % n}); err != nil {
				return nil, err
			}
		}
		next = t + 1
		got := stream.Next(batch, views)
		b.Upload(x, views)
		b.Download(z, m.Forward(x, 2*batch, true, false))
		for k, img := range got.Indices {
			if last[img] != t*batch+k {
				continue // visited again later
			}
			for v := range 2 {
				row := out.Z[(2*img+v)*d : (2*img+v+1)*d]
				copy(row, z[(2*k+v)*d:(2*k+v+1)*d])
				unit(row)
			}
			out.DrawsAgo[img] = end/batch - t
		}
	}
	if err := b.Sync(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return out, nil
}

// unit scales v to unit length, as the loss normalises projections.
func unit(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return
	}
	s := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= s
	}
}

// ErrorStats summarises relative errors |e - g| / g of estimates e of
// inner means g: their mean, quantiles, the signed mean (e - g)/g (Bias:
// positive when the estimates run high) and the mean of g/e - 1
// (WeightBias: the losses weight each negative by exp(s/tau)/e, so this
// is how much too heavily, on average, the negatives count; for in-batch
// means it is positive even when Bias is 0, by Jensen's inequality, the
// small-batch bias of section 4).
type ErrorStats struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	P25    float64 `json:"p25"`
	Median float64 `json:"median"`
	P75    float64 `json:"p75"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
	Bias   float64 `json:"bias"`
	// WeightBias is the mean of g/e - 1.
	WeightBias float64 `json:"weight_bias"`
}

// RelativeErrors summarises est against truth over the indices where keep
// is true (nil: all) and both values are finite.
func RelativeErrors(est, truth []float64, keep func(i int) bool) ErrorStats {
	var errs []float64
	var sum, signed, weight float64
	for i, e := range est {
		g := truth[i]
		if (keep != nil && !keep(i)) || math.IsNaN(e) || math.IsNaN(g) || g == 0 {
			continue
		}
		r := (e - g) / g
		signed += r
		weight += g/e - 1
		sum += math.Abs(r)
		errs = append(errs, math.Abs(r))
	}
	if len(errs) == 0 {
		return ErrorStats{}
	}
	slices.Sort(errs)
	q := func(p float64) float64 {
		// Linear interpolation between order statistics (numpy's default).
		h := p * float64(len(errs)-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, len(errs)-1)
		return errs[lo] + (h-float64(lo))*(errs[hi]-errs[lo])
	}
	n := float64(len(errs))
	return ErrorStats{N: len(errs), Mean: sum / n, P25: q(0.25), Median: q(0.5), P75: q(0.75), P90: q(0.9),
		Max: errs[len(errs)-1], Bias: signed / n, WeightBias: weight / n}
}

// PerImage is the mean of each image's two per-view values, the form in
// which SogCLR stores u (section 10).
func PerImage(views []float64) []float64 {
	out := make([]float64, len(views)/2)
	for k := range out {
		out[k] = (views[2*k] + views[2*k+1]) / 2
	}
	return out
}

// RandomOrder is a permutation of n images drawn from seed, the batches
// BatchMeans cuts for the comparison.
func RandomOrder(n int, seed uint64) []int {
	return rand.New(rand.NewPCG(seed, 0x626174636865)).Perm(n) // "batche"
}
