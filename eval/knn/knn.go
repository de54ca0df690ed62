// Package knn is the weighted k-nearest-neighbour monitor common in SimCLR
// code bases (Wu et al. 2018, "instance discrimination"): each test feature
// votes with its k most cosine-similar training features, neighbour j
// adding exp(s_j / T) to the score of its class, and the class with the
// highest score is the prediction.
package knn

import (
	"container/heap"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/eval/features"
	"github.com/simclr-go/simclr/internal/parallel"
)

// Options configure Classify; zero values take the stated defaults.
type Options struct {
	K           int     // neighbours (default 200)
	Temperature float64 // T of the vote weights exp(s/T) (default 0.1)
	Threads     int     // default GOMAXPROCS
	Gemm        blas.Gemm
}

func (o Options) withDefaults() Options {
	if o.K == 0 {
		o.K = 200
	}
	if o.Temperature == 0 {
		o.Temperature = 0.1
	}
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.Gemm == nil {
		o.Gemm = blas.Open()
	}
	return o
}

// Result holds accuracies in percent.
type Result struct {
	Top1 float64 `json:"top1"`
	Top5 float64 `json:"top5"`
	K    int     `json:"k"`
}

// testBlock is the number of test rows whose similarities to every
// training row are held at once (testBlock x n floats).
const testBlock = 128

// Classify scores test by weighted kNN over train.
func Classify(train, test features.Features, classes int, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if opts.K < 0 {
		return Result{}, fmt.Errorf("knn: k = %d neighbours: must be positive (0 picks 200)", opts.K)
	}
	if train.N == 0 || test.N == 0 {
		return Result{}, fmt.Errorf("knn: empty features (%d training rows, %d test rows)", train.N, test.N)
	}
	if train.Dim != test.Dim || len(train.X) != train.N*train.Dim || len(test.X) != test.N*test.Dim ||
		len(train.Y) != train.N || len(test.Y) != test.N {
		panic(fmt.Sprintf("knn: train %d x %d (%d values, %d labels), test %d x %d (%d values, %d labels)",
			train.N, train.Dim, len(train.X), len(train.Y), test.N, test.Dim, len(test.X), len(test.Y)))
	}
	for _, set := range []features.Features{train, test} {
		for i, y := range set.Y {
			if y < 0 || int(y) >= classes {
				return Result{}, fmt.Errorf("knn: label %d of row %d is outside 0..%d", y, i, classes-1)
			}
		}
	}
	k := min(opts.K, train.N)
	trainN := normalise(train)
	testN := normalise(test)
	sims := make([]float32, testBlock*train.N)
	var hits1, hits5 int
	var mu sync.Mutex
	for lo := 0; lo < test.N; lo += testBlock {
		rows := min(testBlock, test.N-lo)
		opts.Gemm.Sgemm(false, true, rows, train.N, train.Dim, 1, testN[lo*test.Dim:], test.Dim, trainN, train.Dim, 0, sims, train.N)
		parallel.For(rows, opts.Threads, func(_, rlo, rhi int) {
			var h1, h5 int
			nb := make(neighbours, 0, k)
			votes := make([]float64, classes)
			for r := rlo; r < rhi; r++ {
				row := sims[r*train.N : (r+1)*train.N]
				nb = nearest(row, k, nb[:0])
				clear(votes)
				for _, n := range nb {
					votes[train.Y[n.index]] += math.Exp(float64(n.sim) / opts.Temperature)
				}
				rank := rankOf(votes, int(test.Y[lo+r]))
				if rank < 1 {
					h1++
				}
				if rank < 5 {
					h5++
				}
			}
			mu.Lock()
			hits1 += h1
			hits5 += h5
			mu.Unlock()
		})
	}
	return Result{Top1: 100 * float64(hits1) / float64(test.N), Top5: 100 * float64(hits5) / float64(test.N), K: k}, nil
}

// normalise returns the rows scaled to unit length (zero rows stay zero).
func normalise(f features.Features) []float32 {
	out := make([]float32, len(f.X))
	for i := 0; i < f.N; i++ {
		row := f.X[i*f.Dim : (i+1)*f.Dim]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		scale := 0.0
		if ss > 0 {
			scale = 1 / math.Sqrt(ss)
		}
		for j, v := range row {
			out[i*f.Dim+j] = float32(float64(v) * scale)
		}
	}
	return out
}

// rankOf is the 0-based rank of label among the votes sorted decreasingly,
// ties going to the lower class index.
func rankOf(votes []float64, label int) int {
	r := 0
	for c, v := range votes {
		if v > votes[label] || (v == votes[label] && c < label) {
			r++
		}
	}
	return r
}

type neighbour struct {
	sim   float32
	index int
}

// neighbours is a min-heap on similarity (ties: the higher index is
// "smaller", so lower training indices win ties deterministically).
type neighbours []neighbour

func (h neighbours) Len() int { return len(h) }
func (h neighbours) Less(i, j int) bool {
	if h[i].sim != h[j].sim {
		return h[i].sim < h[j].sim
	}
	return h[i].index > h[j].index
}
func (h neighbours) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *neighbours) Push(x any)   { *h = append(*h, x.(neighbour)) }
func (h *neighbours) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// nearest returns the k entries of sims with the highest similarity (in
// heap order), reusing buf.
func nearest(sims []float32, k int, buf neighbours) neighbours {
	h := buf[:0]
	for i, s := range sims {
		if len(h) < k {
			h = append(h, neighbour{s, i})
			if len(h) == k {
				heap.Init(&h)
			}
			continue
		}
		if s > h[0].sim || (s == h[0].sim && i < h[0].index) {
			h[0] = neighbour{s, i}
			heap.Fix(&h, 0)
		}
	}
	return h
}
