package mlmc

import "fmt"

// Point says at which parameters an oracle evaluates a draw.
type Point int

const (
	// Current is x_t, the parameters being updated this iteration.
	Current Point = iota
	// Previous is x_{t-1}, the parameters of the previous iteration, kept by
	// the caller for variance reduction (docs/definitions.md, section 2 "The estimators", VR).
	Previous
)

func (p Point) String() string {
	switch p {
	case Current:
		return "current"
	case Previous:
		return "previous"
	}
	return "Point(?)"
}

// Unbounded is what Oracle.MaxLevel returns when any level can be served.
const Unbounded = -1

// Sample is an oracle's recorded random draw for one query: its level and
// everything random it used (images and augmentations, a trajectory's
// random numbers, ...), so that it can be evaluated again, at other
// parameters, with exactly the same randomness. Only the oracle that made it
// looks inside.
type Sample any

// Oracle is a stochastic oracle SO^l over gradient vectors of type V
// (docs/definitions.md, section 1 "Oracles and levels"). A query is Draw, then one or more Eval of the draw, then
// Release.
//
// Estimators call the methods from one goroutine; an oracle need not be safe
// for concurrent use.
type Oracle[V any] interface {
	// MaxLevel is the largest level the oracle can serve (a data set of n
	// images serves levels with 2^l <= n), or Unbounded.
	MaxLevel() int

	// Draw records the randomness of one query at level l and returns it
	// with its cost: the samples the query consumed (2^l images for SimCLR),
	// counted once however often the draw is evaluated.
	Draw(level int) (s Sample, cost int64, err error)

	// Eval adds alpha times the draw's gradient, evaluated at the given
	// parameters, into out (out += alpha*g; it never overwrites). With diff
	// false g is h^l, an unbiased estimate of grad F^l; with diff true g is
	// H^l, an unbiased estimate of grad F^l - grad F^(l-1) built from the
	// same samples at both levels. Estimators ask for diff only above the
	// minimum level (H^(l_min) is h^(l_min)). Evaluating at Previous must
	// leave the oracle's state as at Current (for SimCLR: BN running
	// statistics untouched).
	Eval(s Sample, at Point, diff bool, alpha float64, out V) error

	// Release says the draw will not be evaluated again, so its memory can
	// be reused.
	Release(s Sample)
}

// VecOps are the vector operations an estimator may apply to the caller's
// gradient vectors. They operate in place on vectors of one shape.
type VecOps[V any] interface {
	// New returns a zero vector of the gradient's shape (the VR state).
	New() V
	// Zero sets v to 0.
	Zero(v V)
	// Copy sets dst to src.
	Copy(dst, src V)
	// Scale sets v to alpha*v.
	Scale(alpha float64, v V)
	// Axpy sets y to y + alpha*x.
	Axpy(alpha float64, x, y V)
}

// Float64Ops are VecOps over []float64 vectors of length Dim, for tests and
// examples.
type Float64Ops struct {
	Dim int
}

// New returns a zero vector of length Dim.
func (o Float64Ops) New() []float64 { return make([]float64, o.Dim) }

// Zero sets v to 0.
func (Float64Ops) Zero(v []float64) { clear(v) }

// Copy sets dst to src.
func (Float64Ops) Copy(dst, src []float64) {
	mustSameLen("Copy", dst, src)
	copy(dst, src)
}

// Scale sets v to alpha*v.
func (Float64Ops) Scale(alpha float64, v []float64) {
	for i := range v {
		v[i] *= alpha
	}
}

// Axpy sets y to y + alpha*x.
func (Float64Ops) Axpy(alpha float64, x, y []float64) {
	mustSameLen("Axpy", x, y)
	for i, xi := range x {
		y[i] += alpha * xi
	}
}

func mustSameLen(op string, a, b []float64) {
	if len(a) != len(b) {
		panic(fmt.Sprintf("mlmc: Float64Ops.%s: vector lengths differ: %d vs %d", op, len(a), len(b)))
	}
}
