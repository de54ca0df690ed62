package ref

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"

	"github.com/simclr-go/simclr/internal/parallel"
)

// Decoupled computes one of the two decoupled contrastive losses of
// docs/definitions.md, section 10 "Decoupled losses" on z,
// the 2n x d projections of n >= 2 images (rows 2k and 2k+1 are the two
// views of image k), after L2-normalising each row, with temperature tau.
// For a view i with positive p (the other view of its image) the
// negatives N_i are the 2n - 2 views of the other images.
//
// With u nil it is DCL: value = (1/2n) sum_i [log sum_{v in N_i}
// exp(s_iv/tau) - s_ip/tau], and dz its gradient.
//
// With u (n values, image k's moving average; 0 for an image not seen
// before) it is a SogCLR step: each view's estimate of the mean over its
// negatives, m_i = (1/(2n-2)) sum_{v in N_i} exp(s_iv/tau), updates
// u_i = (1 - g) u_k + g m_i with g = gamma (g = 1 when u_k is 0, the first
// visit); dz is the gradient of (1/2n) sum_i [-s_ip + tau m_i / u_i] with
// u_i held fixed (tau times the scale of DCL's gradient; equal to tau times
// DCL's when every g is 1); u_k becomes the mean of its two views' u_i
// (rounded to float32 first, in float32); and value = (1/2n) sum_i
// [log((2n-2) u_i) - s_ip/tau], the DCL loss with u_i in place of the
// batch's mean. Reductions are float64.
func (w *NTXentWorkspace) Decoupled(n, d int, tau, gamma float64, u, z, dz []float32) (value float64) {
	rows := 2 * n
	switch {
	case n < 2 || d < 1:
		panic(fmt.Sprintf("ref.Decoupled: n=%d images (at least 2: a view needs a negative) and d=%d must be positive", n, d))
	case len(z) != rows*d || len(dz) != rows*d:
		panic(fmt.Sprintf("ref.Decoupled: z has %d and dz %d elements, want 2n*d = 2*%d*%d = %d", len(z), len(dz), n, d, rows*d))
	case u != nil && len(u) != n:
		panic(fmt.Sprintf("ref.Decoupled: u has %d elements for %d images", len(u), n))
	case u != nil && !(gamma > 0 && gamma <= 1):
		panic(fmt.Sprintf("ref.Decoupled: gamma=%g must be in (0, 1]", gamma))
	case !(tau > 0):
		panic(fmt.Sprintf("ref.Decoupled: temperature tau=%g must be positive", tau))
	}
	w.normalize(rows, d, z)
	unit := w.u
	w.g = grow(w.g, rows*rows)
	g := w.g
	clear(g)
	inv := 1 / tau
	negatives := float64(rows - 2)
	// rowFull holds each view's loss term, rowHalf (SogCLR) its u_i.
	w.rowFull, w.rowHalf = grow(w.rowFull, rows), grow(w.rowHalf, rows)
	terms, rowU := w.rowFull, w.rowHalf
	parallel.For(rows, workers(rows*rows*d), func(_, lo, hi int) {
		s := make([]float64, rows)
		for i := lo; i < hi; i++ {
			ui := unit[i*d : (i+1)*d]
			for v := 0; v < rows; v++ {
				s[v] = floats.Dot(ui, unit[v*d:(v+1)*d]) * inv
			}
			pos := i ^ 1
			maxS := math.Inf(-1)
			for v := range rows {
				if v != i && v != pos && s[v] > maxS {
					maxS = s[v]
				}
			}
			var sum float64
			for v := range rows {
				if v != i && v != pos {
					sum += math.Exp(s[v] - maxS)
				}
			}
			lse := maxS + math.Log(sum) // log sum_{v in N_i} exp(s_iv/tau)
			gi := g[i*rows : (i+1)*rows]
			// gi is the gradient with respect to s_iv/tau (DCL) or to s_iv
			// (SogCLR): backward scales them alike below.
			logDenom := lse // DCL: the softmax over the negatives
			if u != nil {
				old := float64(u[i/2])
				step := gamma
				if old == 0 {
					step = 1
				}
				ui := (1-step)*old + step*math.Exp(lse)/negatives
				rowU[i] = ui
				terms[i] = math.Log(negatives*ui) - s[pos]
				// exp(s_iv/tau) / ((2n-2) u_i), the weight of s_iv.
				logDenom = math.Log(negatives * ui)
			} else {
				terms[i] = lse - s[pos]
			}
			for v := range rows {
				if v != i && v != pos {
					gi[v] = math.Exp(s[v]-logDenom) / float64(rows)
				}
			}
			gi[pos] = -1 / float64(rows)
		}
	})
	for i := range rows {
		value += terms[i]
	}
	value /= float64(rows)
	scale := inv // DCL: d/d s_iv = (1/tau) d/d (s_iv/tau)
	if u != nil {
		scale = 1
		for k := range n {
			a, b := float32(rowU[2*k]), float32(rowU[2*k+1])
			u[k] = (a + b) * 0.5
		}
	}
	w.backward(rows, d, scale, dz)
	return value
}

// DCLLoss64 is DCL (Decoupled with u nil) in float64 written directly from
// the definition, without a gradient: the function whose finite
// differences the gradient checks compare Decoupled's dz with.
func DCLLoss64(n, d int, tau float64, z []float64) float64 {
	unit := normalize64(n, d, z)
	var total float64
	for i := range 2 * n {
		var denom, pos float64
		for v := range 2 * n {
			s := dot64(unit, i, v, d)
			switch v {
			case i ^ 1:
				pos = s / tau
			case i:
			default:
				denom += math.Exp(s / tau)
			}
		}
		total += math.Log(denom) - pos
	}
	return total / float64(2*n)
}

// SogCLRSurrogate64 is (1/2n) sum_i [-s_ip + tau m_i / u_i] in float64
// with each view's u_i given (rowU, 2n values): its gradient at the z
// where Decoupled computed those u_i is the SogCLR step Decoupled writes,
// so that finite differences of it check dz.
func SogCLRSurrogate64(n, d int, tau float64, rowU, z []float64) float64 {
	unit := normalize64(n, d, z)
	var total float64
	for i := range 2 * n {
		var mean, pos float64
		for v := range 2 * n {
			s := dot64(unit, i, v, d)
			switch v {
			case i ^ 1:
				pos = s
			case i:
			default:
				mean += math.Exp(s/tau) / float64(2*n-2)
			}
		}
		total += -pos + tau*mean/rowU[i]
	}
	return total / float64(2*n)
}

func normalize64(n, d int, z []float64) []float64 {
	unit := make([]float64, len(z))
	for i := range 2 * n {
		var ss float64
		for _, v := range z[i*d : (i+1)*d] {
			ss += v * v
		}
		for k := range d {
			unit[i*d+k] = z[i*d+k] / math.Sqrt(ss)
		}
	}
	return unit
}

func dot64(unit []float64, i, v, d int) float64 {
	var s float64
	for k := range d {
		s += unit[i*d+k] * unit[v*d+k]
	}
	return s
}
