package ref

import "math"

// NTXentLoss64 is the SimCLR loss of docs/definitions.md, section 4
// "Contrastive learning as a biased oracle" in float64, written directly from
// the definition, without a gradient: rows 2k and 2k+1 of z (2n rows of d
// values) are the views of image k, and multilevel gives L_B - (L_B1 + L_B2)/2.
// It is the function whose central finite differences the gradient checks
// compare float32 gradients with (NTXent's here, the whole network's in
// model/resnet18), kept separate from NTXent so that a mistake in one cannot
// hide in the other.
func NTXentLoss64(n, d int, tau float64, multilevel bool, z []float64) float64 {
	u := make([]float64, len(z))
	for i := 0; i < 2*n; i++ {
		var ss float64
		for _, v := range z[i*d : (i+1)*d] {
			ss += v * v
		}
		for k := 0; k < d; k++ {
			u[i*d+k] = z[i*d+k] / math.Sqrt(ss)
		}
	}
	set := func(lo, hi int) float64 { // mean loss of rows [lo, hi) among themselves
		var total float64
		for i := lo; i < hi; i++ {
			var denom, pos float64
			for v := lo; v < hi; v++ {
				var s float64
				for k := 0; k < d; k++ {
					s += u[i*d+k] * u[v*d+k]
				}
				if v == i^1 {
					pos = s / tau
				}
				if v != i {
					denom += math.Exp(s / tau)
				}
			}
			total += math.Log(denom) - pos
		}
		return total / float64(hi-lo)
	}
	full := set(0, 2*n)
	if !multilevel {
		return full
	}
	return full - (set(0, n)+set(n, 2*n))/2
}
