// Package ref holds the host reference maths the CPU backend runs and the
// tests check against: the SimCLR NT-Xent loss and its gradient
// (docs/definitions.md, section 4 "Contrastive learning as a biased oracle"), and one SGD or LARS step, all on float32 host slices. It
// is a leaf (it imports only tensor's plain config types and the fork-join
// loop), so the backend can run the references without importing the layers
// above it. The CUDA kernels follow these transcriptions and are checked
// against them.
package ref

import (
	"fmt"
	"math"
	"runtime"

	"gonum.org/v1/gonum/floats"

	"github.com/simclr-go/simclr/internal/parallel"
)

// normEps is the floor on a row norm, as torch.nn.functional.normalize: a
// zero row stays zero instead of becoming NaN.
const normEps = 1e-12

// parallelWork is the number of multiply-adds (rows^2 * d) below which the
// loss runs on one goroutine: spawning costs more than it saves.
const parallelWork = 1 << 20

// NTXent computes the SimCLR loss on z, the 2n x d projections of n images
// (rows 2k and 2k+1 are the two views of image k, 0-based), after
// L2-normalising each row, with temperature tau:
//
//	L_S = (1/2m) sum over views i of S of -log( exp(s_ij/tau) / sum_{u in S, u != i} exp(s_iu/tau) )
//
// where j is the other view of i's image and s_iu = z_i.z_u / (|z_i| |z_u|).
// With multilevel false, value = full = L_B over all n images. With
// multilevel true (n even), value = L_B - (L_B1 + L_B2)/2, B1 the first n/2
// images and B2 the rest, all from the same embeddings, and full = L_B.
// dz (2n x d) receives the gradient of value with respect to z, through the
// normalisation. Reductions are float64.
func NTXent(n, d int, tau float64, multilevel bool, z, dz []float32) (value, full float64) {
	return new(NTXentWorkspace).NTXent(n, d, tau, multilevel, z, dz)
}

// NTXentWorkspace holds NTXent's scratch (two 2n x 2n float64 matrices, 16 MiB at
// n = 512) so that a training loop reuses it instead of leaving it to the
// garbage collector every step. The zero value is ready; a Workspace must
// not be used by two goroutines at once.
type NTXentWorkspace struct {
	u, norm, g, sym, rowFull, rowHalf []float64
}

// grow returns buf resized to n elements, reallocating only when it is too
// small. The contents are not cleared.
func grow(buf []float64, n int) []float64 {
	if cap(buf) < n {
		return make([]float64, n)
	}
	return buf[:n]
}

// NTXent is the package-level NTXent using w's scratch.
func (w *NTXentWorkspace) NTXent(n, d int, tau float64, multilevel bool, z, dz []float32) (value, full float64) {
	rows := 2 * n
	switch {
	case n < 1 || d < 1:
		panic(fmt.Sprintf("ref.NTXent: n=%d images and d=%d must be positive", n, d))
	case len(z) != rows*d || len(dz) != rows*d:
		panic(fmt.Sprintf("ref.NTXent: z has %d and dz %d elements, want 2n*d = 2*%d*%d = %d", len(z), len(dz), n, d, rows*d))
	case multilevel && n%2 != 0:
		panic(fmt.Sprintf("ref.NTXent: multilevel needs an even number of images, got n=%d", n))
	case !(tau > 0):
		panic(fmt.Sprintf("ref.NTXent: temperature tau=%g must be positive", tau))
	}

	w.normalize(rows, d, z)
	u := w.u

	// g[i*rows+u] is d value / d s_iu (s before division by tau); the
	// similarity matrix is symmetric, so the gradient on u_i collects both
	// g[i,u] and g[u,i].
	w.g = grow(w.g, rows*rows)
	g := w.g
	clear(g) // softmaxTerm accumulates into it
	inv := 1 / tau
	// Per-row losses: full[i] over B, half[i] over the half that holds i.
	w.rowFull, w.rowHalf = grow(w.rowFull, rows), grow(w.rowHalf, rows)
	rowFull, rowHalf := w.rowFull, w.rowHalf
	parallel.For(rows, workers(rows*rows*d), func(_, lo, hi int) {
		s := make([]float64, rows)
		for i := lo; i < hi; i++ {
			ui := u[i*d : (i+1)*d]
			for v := 0; v < rows; v++ {
				s[v] = floats.Dot(ui, u[v*d:(v+1)*d]) * inv
			}
			pos := i ^ 1 // the other view of the same image
			gi := g[i*rows : (i+1)*rows]
			rowFull[i] = softmaxTerm(s, i, pos, 0, rows, 1/float64(rows), gi)
			if multilevel {
				// Half h holds rows [h*n, (h+1)*n): n views of n/2 images,
				// so its mean is over n views; its weight in value is -1/2.
				lo := (i / n) * n
				rowHalf[i] = softmaxTerm(s, i, pos, lo, lo+n, -0.5/float64(n), gi)
			}
		}
	})
	for i := 0; i < rows; i++ {
		full += rowFull[i]
	}
	full /= float64(rows)
	value = full
	if multilevel {
		var halves float64
		for i := 0; i < rows; i++ {
			halves += rowHalf[i]
		}
		// L_B1 + L_B2 = (sum over rows of B1 + sum over rows of B2) / n.
		value = full - 0.5*halves/float64(n)
	}

	w.backward(rows, d, inv, dz)
	return value, full
}

// normalize fills w.u with the rows of z (rows x d) L2-normalised in
// float64 and w.norm with their (floored) norms.
func (w *NTXentWorkspace) normalize(rows, d int, z []float32) {
	w.u, w.norm = grow(w.u, rows*d), grow(w.norm, rows)
	u, norm := w.u, w.norm
	for i := 0; i < rows; i++ {
		zi, ui := z[i*d:(i+1)*d], u[i*d:(i+1)*d]
		var ss float64
		for _, v := range zi {
			ss += float64(v) * float64(v)
		}
		nrm := math.Max(math.Sqrt(ss), normEps)
		norm[i] = nrm
		for k, v := range zi {
			ui[k] = float64(v) / nrm
		}
	}
}

// backward writes dz from w.g times scale, the gradient of the loss with
// respect to the cosines s_iu (w.g holds it with respect to s_iu/tau for
// NT-Xent, whose scale is 1/tau): the similarity matrix is symmetric, so
// the gradient on u_i collects both g[i,u] and g[u,i], and then goes
// through the normalisation.
func (w *NTXentWorkspace) backward(rows, d int, scale float64, dz []float32) {
	g, u, norm := w.g, w.u, w.norm
	inv := scale
	// sym = (g + g^T)/tau, built tile by tile so both reads stay in cache.
	w.sym = grow(w.sym, rows*rows) // every entry is written below
	sym := w.sym
	parallel.For(rows, workers(rows*rows*8), func(_, lo, hi int) {
		for i0 := lo; i0 < hi; i0 += symTile {
			i1 := min(i0+symTile, hi)
			for v0 := 0; v0 < rows; v0 += symTile {
				v1 := min(v0+symTile, rows)
				for i := i0; i < i1; i++ {
					row := sym[i*rows : (i+1)*rows]
					for v := v0; v < v1; v++ {
						row[v] = (g[i*rows+v] + g[v*rows+i]) * inv
					}
				}
			}
		}
	})
	// du_i = sum_v sym_iv u_v, then through the normalisation
	// dz_i = (du_i - u_i (u_i . du_i)) / |z_i|.
	parallel.For(rows, workers(rows*rows*d), func(_, lo, hi int) {
		du := make([]float64, d)
		for i := lo; i < hi; i++ {
			clear(du)
			for v, c := range sym[i*rows : (i+1)*rows] {
				if c != 0 {
					floats.AddScaled(du, c, u[v*d:(v+1)*d])
				}
			}
			ui := u[i*d : (i+1)*d]
			proj := floats.Dot(ui, du)
			dzi := dz[i*d : (i+1)*d]
			for k := range dzi {
				dzi[k] = float32((du[k] - ui[k]*proj) / norm[i])
			}
		}
	})
}

// softmaxTerm returns l(i, pos) = logsumexp_{v in [lo,hi), v != i} s_v - s_pos
// and adds weight * d l / d s_v into gi for v in [lo, hi).
func softmaxTerm(s []float64, i, pos, lo, hi int, weight float64, gi []float64) float64 {
	maxS := math.Inf(-1)
	for v := lo; v < hi; v++ {
		if v != i && s[v] > maxS {
			maxS = s[v]
		}
	}
	var sum float64
	for v := lo; v < hi; v++ {
		if v != i {
			sum += math.Exp(s[v] - maxS)
		}
	}
	lse := maxS + math.Log(sum)
	for v := lo; v < hi; v++ {
		if v != i {
			gi[v] += weight * math.Exp(s[v]-lse)
		}
	}
	gi[pos] -= weight
	return lse - s[pos]
}

// symTile is the side of the square tiles of the transposed sum.
const symTile = 64

// workers is the number of goroutines for a pass of work multiply-adds: one
// per CPU when the work pays for them, else one.
func workers(work int) int {
	if work < parallelWork {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}
