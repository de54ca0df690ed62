package cso

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/simclr-go/simclr/mlmc"
)

// Config sets an Oracle. Zero values take the defaults stated on each field.
type Config struct {
	// MaxLevel is the largest level served: 2^MaxLevel inner draws per outer
	// sample (default 20).
	MaxLevel int
	// OuterBatch is the number of outer samples per query, each with its
	// own 2^l inner draws; h^l and H^l are their means (default 1, the
	// paper's choice).
	OuterBatch int
	// Seed seeds the oracle's samplers.
	Seed uint64
}

func (c Config) withDefaults() Config {
	if c.MaxLevel == 0 {
		c.MaxLevel = 20
	}
	if c.OuterBatch == 0 {
		c.OuterBatch = 1
	}
	return c
}

// Oracle is the multilevel oracle of a CSO problem over []float64 gradient
// vectors (an mlmc.Oracle): a draw at level l records OuterBatch outer
// samples with 2^l inner samples each, and costs the OuterBatch 2^l inner
// samples it generated. Eval evaluates it at the parameters set by
// SetPoints.
type Oracle[Xi, Eta any] struct {
	p    Problem[Xi, Eta]
	cfg  Config
	rng  *rand.Rand
	cur  []float64
	prev []float64
	free []*draw[Xi, Eta] // released draws, for reuse
}

// draw is one query's randomness: the outer samples and, for each, its
// inner samples.
type draw[Xi, Eta any] struct {
	level int
	outer []Xi
	inner [][]Eta
}

// New makes the oracle of problem p.
func New[Xi, Eta any](p Problem[Xi, Eta], cfg Config) (*Oracle[Xi, Eta], error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.MaxLevel < 0 || cfg.MaxLevel > 40:
		return nil, fmt.Errorf("cso: maximum level %d is outside 0..40", cfg.MaxLevel)
	case cfg.OuterBatch < 1:
		return nil, fmt.Errorf("cso: outer batch %d must be at least 1", cfg.OuterBatch)
	case p.Dim() < 1:
		return nil, fmt.Errorf("cso: problem dimension %d must be at least 1", p.Dim())
	}
	return &Oracle[Xi, Eta]{p: p, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed0c50))}, nil
}

// SetPoints sets the parameters Eval uses: cur for mlmc.Current and prev for
// mlmc.Previous (x_t and x_(t-1) of VR). The oracle keeps the slices, not
// copies: the caller updates them in place or calls SetPoints again.
func (o *Oracle[Xi, Eta]) SetPoints(cur, prev []float64) { o.cur, o.prev = cur, prev }

// MaxLevel is Config.MaxLevel.
func (o *Oracle[Xi, Eta]) MaxLevel() int { return o.cfg.MaxLevel }

// Draw records OuterBatch outer samples with 2^level inner samples each.
func (o *Oracle[Xi, Eta]) Draw(level int) (mlmc.Sample, int64, error) {
	if level < 0 || level > o.cfg.MaxLevel {
		return nil, 0, fmt.Errorf("cso: level %d is outside 0..%d", level, o.cfg.MaxLevel)
	}
	var d *draw[Xi, Eta]
	if n := len(o.free); n > 0 {
		d, o.free = o.free[n-1], o.free[:n-1]
	} else {
		d = &draw[Xi, Eta]{}
	}
	d.level = level
	b, n := o.cfg.OuterBatch, 1<<level
	d.outer = d.outer[:0]
	for len(d.inner) < b {
		d.inner = append(d.inner, nil)
	}
	for i := range b {
		xi := o.p.DrawOuter(o.rng)
		d.outer = append(d.outer, xi)
		etas := d.inner[i]
		for len(etas) < n {
			var zero Eta
			etas = append(etas, zero)
		}
		etas = etas[:n]
		for j := range etas {
			etas[j] = o.p.DrawInner(o.rng, xi, etas[j])
		}
		d.inner[i] = etas
	}
	return d, int64(b * n), nil
}

// Eval adds alpha times h^l (diff false) or H^l (diff true) of the draw,
// evaluated at the current or previous parameters, into out.
func (o *Oracle[Xi, Eta]) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	d, ok := s.(*draw[Xi, Eta])
	if !ok {
		return errors.New("cso: Eval of a sample this oracle did not draw")
	}
	x := o.cur
	if at == mlmc.Previous {
		x = o.prev
	}
	if len(x) != o.p.Dim() || len(out) != o.p.Dim() {
		return fmt.Errorf("cso: parameters of length %d and gradient of length %d, want %d (call SetPoints)",
			len(x), len(out), o.p.Dim())
	}
	if diff && d.level == 0 {
		return errors.New("cso: H^0 asked for: level 0 has no lower level (set the minimum level to 0)")
	}
	w := alpha / float64(len(d.outer))
	for i, xi := range d.outer {
		contribution(o.p, x, xi, d.inner[i], diff, w, out)
	}
	return nil
}

// contribution adds alpha times h^l (diff false) or H^l (diff true) of one
// outer sample xi with its 2^l inner draws etas into out, and returns the
// plug-in value over all the draws:
//
//	h^l = grad f_xi(mean over etas)
//	H^l = h^l - (grad f_xi(mean over the first half) + grad f_xi(mean over the second half)) / 2
func contribution[Xi, Eta any](p Problem[Xi, Eta], x []float64, xi Xi, etas []Eta, diff bool, alpha float64, out []float64) float64 {
	v := p.PlugIn(x, xi, etas, alpha, out)
	if diff {
		half := len(etas) / 2
		p.PlugIn(x, xi, etas[:half], -alpha/2, out)
		p.PlugIn(x, xi, etas[half:], -alpha/2, out)
	}
	return v
}

// Release returns the draw's memory for reuse.
func (o *Oracle[Xi, Eta]) Release(s mlmc.Sample) {
	if d, ok := s.(*draw[Xi, Eta]); ok {
		o.free = append(o.free, d)
	}
}
