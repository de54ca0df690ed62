package ubsr

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/simclr-go/simclr/mlmc"
)

// Config sets an Oracle. Zero values take the defaults stated on each field,
// except Lambda, whose zero is a risk level like any other.
type Config struct {
	// Lambda is the risk level lambda; it must lie strictly inside the
	// loss's range.
	Lambda float64
	// MaxLevel is the largest level served: 2^MaxLevel copies of X and as
	// many of X~ per query (default 20).
	MaxLevel int
	// Tol is the tolerance of the sample-average root (default DefaultTol).
	Tol float64
	// Seed seeds the oracle's sampler.
	Seed uint64
}

func (c Config) withDefaults() Config {
	if c.MaxLevel == 0 {
		c.MaxLevel = 20
	}
	if c.Tol == 0 {
		c.Tol = DefaultTol
	}
	return c
}

// Oracle is the multilevel oracle of a shortfall-risk problem over []float64
// gradient vectors (an mlmc.Oracle; docs/definitions.md, section 12): a draw
// at level l records n = 2^l draws for X_1..X_n and n more for X~_1..X~_n,
// and costs the 2n samples it generated. Eval evaluates it at the
// parameters set by SetPoints:
//
//	t = the sample-average root over X~ (SampleRoot),
//	g^ = -(sum_j l'(-X_j - t) X'_j) / (sum_j l'(-X_j - t)),
//	h^l = g^ over all n,  H^l = h^l - (g^ over the first half + g^ over the second half) / 2,
//
// each half with its own t from its own half of X~.
type Oracle[Xi any] struct {
	p    Problem[Xi]
	loss Loss
	cfg  Config
	rng  *rand.Rand
	cur  []float64
	prev []float64
	free []*draw[Xi]

	// Scratch of Eval: the payoffs of X and X~ and X's gradients, row j
	// at grads[j*Dim:].
	xs, xts, grads, g []float64
}

// draw is one query's randomness: n draws for X, n for X~.
type draw[Xi any] struct {
	level int
	x, xt []Xi
}

// New makes the oracle of problem p with loss l. It checks that lambda is
// inside l's range and that l' is a nonnegative derivative of l.
func New[Xi any](p Problem[Xi], l Loss, cfg Config) (*Oracle[Xi], error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.MaxLevel < 0 || cfg.MaxLevel > 30:
		return nil, fmt.Errorf("ubsr: maximum level %d is outside 0..30", cfg.MaxLevel)
	case !(cfg.Tol > 0):
		return nil, fmt.Errorf("ubsr: root tolerance %g must be positive", cfg.Tol)
	case p.Dim() < 1:
		return nil, fmt.Errorf("ubsr: problem dimension %d must be at least 1", p.Dim())
	}
	if err := l.check(cfg.Lambda); err != nil {
		return nil, err
	}
	return &Oracle[Xi]{p: p, loss: l, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5b5b0c1e)),
		g: make([]float64, p.Dim())}, nil
}

// SetPoints sets the parameters Eval uses: cur for mlmc.Current and prev for
// mlmc.Previous. The oracle keeps the slices, not copies.
func (o *Oracle[Xi]) SetPoints(cur, prev []float64) { o.cur, o.prev = cur, prev }

// MaxLevel is Config.MaxLevel.
func (o *Oracle[Xi]) MaxLevel() int { return o.cfg.MaxLevel }

// Draw records 2^level draws for X and 2^level for X~.
func (o *Oracle[Xi]) Draw(level int) (mlmc.Sample, int64, error) {
	if level < 0 || level > o.cfg.MaxLevel {
		return nil, 0, fmt.Errorf("ubsr: level %d is outside 0..%d", level, o.cfg.MaxLevel)
	}
	var d *draw[Xi]
	if k := len(o.free); k > 0 {
		d, o.free = o.free[k-1], o.free[:k-1]
	} else {
		d = &draw[Xi]{}
	}
	d.level = level
	n := 1 << level
	d.x = o.fill(d.x, n)
	d.xt = o.fill(d.xt, n)
	return d, int64(2 * n), nil
}

func (o *Oracle[Xi]) fill(xs []Xi, n int) []Xi {
	for len(xs) < n {
		var zero Xi
		xs = append(xs, zero)
	}
	xs = xs[:n]
	for i := range xs {
		xs[i] = o.p.Draw(o.rng, xs[i])
	}
	return xs
}

// Eval adds alpha times h^l (diff false) or H^l (diff true) of the draw,
// evaluated at the current or previous parameters, into out.
func (o *Oracle[Xi]) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	d, ok := s.(*draw[Xi])
	if !ok {
		return errors.New("ubsr: Eval of a sample this oracle did not draw")
	}
	theta := o.cur
	if at == mlmc.Previous {
		theta = o.prev
	}
	dim := o.p.Dim()
	if len(theta) != dim || len(out) != dim {
		return fmt.Errorf("ubsr: parameters of length %d and gradient of length %d, want %d (call SetPoints)",
			len(theta), len(out), dim)
	}
	if diff && d.level == 0 {
		return errors.New("ubsr: H^0 asked for: level 0 has no lower level (set the minimum level to 0)")
	}
	n := len(d.x)
	o.xs, o.xts = grow(o.xs, n), grow(o.xts, n)
	o.grads = grow(o.grads, n*dim)
	for j, xi := range d.x {
		o.xs[j] = o.p.Payoff(theta, xi, o.grads[j*dim:(j+1)*dim])
	}
	for i, xi := range d.xt {
		o.xts[i] = o.p.Payoff(theta, xi, nil)
	}
	t, err := o.ratio(0, n, alpha, math.NaN(), out)
	if err != nil {
		return err
	}
	if diff {
		if _, err := o.ratio(0, n/2, -alpha/2, t, out); err != nil {
			return err
		}
		_, err = o.ratio(n/2, n, -alpha/2, t, out)
	}
	return err
}

// ratio adds alpha times g^ over samples from..to-1 into out, with t the
// sample-average root over the same range of X~ (its Newton steps started
// from start, unless NaN), and returns t.
func (o *Oracle[Xi]) ratio(from, to int, alpha, start float64, out []float64) (float64, error) {
	t, err := sampleRoot(o.loss, o.xts[from:to], o.cfg.Lambda, o.cfg.Tol, start)
	if err != nil {
		return 0, err
	}
	dim := len(out)
	clear(o.g)
	den := 0.0
	for j := from; j < to; j++ {
		w := o.loss.Deriv(-o.xs[j] - t)
		den += w
		row := o.grads[j*dim : (j+1)*dim]
		for k, v := range row {
			o.g[k] += w * v
		}
	}
	if !(den > 0) {
		return 0, fmt.Errorf("ubsr: %s: the sum of l'(-X_j - t) over %d samples is %g at t = %g: "+
			"the ratio estimate needs l' positive where -X - t falls (a loss flat there, or one whose l' underflows, cannot weigh the samples: is theta diverging?)",
			o.loss.Name, to-from, den, t)
	}
	for k, v := range o.g {
		out[k] -= alpha * v / den
	}
	return t, nil
}

func grow(v []float64, n int) []float64 {
	if cap(v) < n {
		return make([]float64, n)
	}
	return v[:n]
}

// Release returns the draw's memory for reuse.
func (o *Oracle[Xi]) Release(s mlmc.Sample) {
	if d, ok := s.(*draw[Xi]); ok {
		o.free = append(o.free, d)
	}
}
