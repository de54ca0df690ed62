// Package loss is the SimCLR NT-Xent contrastive loss and its gradient on
// host slices (docs/definitions.md, section 4 "Contrastive learning as a biased
// oracle"). The maths lives in internal/ref, the leaf that the CPU backend runs
// as its kernel too; this package is its public face for code that works on
// host slices rather than through a tensor.Backend.
package loss

import "github.com/simclr-go/simclr/internal/ref"

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
// normalisation. Reductions are float64. It panics on inconsistent shapes.
func NTXent(n, d int, tau float64, multilevel bool, z, dz []float32) (value, full float64) {
	return ref.NTXent(n, d, tau, multilevel, z, dz)
}

// Workspace holds NTXent's scratch (two 2n x 2n float64 matrices, 16 MiB at
// n = 512) so that a training loop reuses it instead of leaving it to the
// garbage collector every step. The zero value is ready; a Workspace must
// not be used by two goroutines at once.
type Workspace = ref.NTXentWorkspace
