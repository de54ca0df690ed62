package auto

import (
	"math"
	"slices"

	"github.com/simclr-go/simclr/mlmc"
)

// projector maps a direction v at the point x to P v, P the projection's
// linearisation there: P(x - eps v) = P(x) - eps P v where the projection
// is affine (or its active set fixed).
type projector struct {
	project func([]float64)
	x, px   []float64 // the point and its projection
	y       []float64
	// active says the projection changed a direction it was given;
	// oneSided that it mapped a direction and its opposite to other than
	// opposites: an inequality active at x (a box's face), where P v is
	// not linear in v and the mean of projected draws is not the
	// projection of their mean.
	active, oneSided bool
	z                []float64
}

func newProjector(project func([]float64), x []float64) *projector {
	px := slices.Clone(x)
	project(px)
	return &projector{project: project, x: slices.Clone(x), px: px, y: make([]float64, len(x)), z: make([]float64, len(x))}
}

// direction replaces v by P v. Where the projection leaves the direction as
// it is (to rounding: an interior point of a box), v is kept exactly.
func (p *projector) direction(v []float64) {
	nv := norm(v)
	if !(nv > 0) || math.IsInf(nv, 0) {
		return
	}
	eps := 1e-6 * (1 + norm(p.x)) / nv
	for i := range p.y {
		p.y[i] = p.x[i] - eps*v[i]
	}
	p.project(p.y)
	moved := 0.0
	for i := range p.y {
		p.y[i] = (p.px[i] - p.y[i]) / eps
		moved = math.Max(moved, math.Abs(p.y[i]-v[i]))
	}
	if moved <= 1e-8*nv {
		return
	}
	p.active = true
	if !p.oneSided {
		// P(-v) = -P v where the projection is affine.
		for i := range p.z {
			p.z[i] = p.x[i] + eps*v[i]
		}
		p.project(p.z)
		for i := range p.z {
			if math.Abs((p.px[i]-p.z[i])/eps+p.y[i]) > 1e-6*nv {
				p.oneSided = true
				break
			}
		}
	}
	copy(v, p.y)
}

// projectedMeans watches a measurement's draws of h^l (Eval without diff)
// and keeps, level by level, the running sums of their projections P h^l,
// leaving what the measurement reads as it is: |grad F(x0)| is read from
// the top row's draws projected. The gap of a point on the feasible set
// is set by the projected gradient (F(x0) - F* = g.H^-1 g / 2 over the
// directions the iterate can move, g = P grad F(x0)), so a gradient
// mostly across a constraint (shortfall risk's weights summing to 1 meet
// a gradient mostly along (1, ..., 1)) read without P makes the bias
// share (|bias_L| / |grad F(x0)|)^2 that ratio squared too small
// (docs/definitions.md, section 11).
type projectedMeans struct {
	mlmc.Oracle[[]float64]
	pr      *projector
	level   int // the level of the last draw (a measurement evaluates each draw before the next)
	scratch []float64
	rows    map[int]*moments
}

func newProjectedMeans(o mlmc.Oracle[[]float64], project func([]float64), x []float64) *projectedMeans {
	return &projectedMeans{Oracle: o, pr: newProjector(project, x), scratch: make([]float64, len(x)), rows: map[int]*moments{}}
}

func (p *projectedMeans) Draw(level int) (mlmc.Sample, int64, error) {
	p.level = level
	return p.Oracle.Draw(level)
}

func (p *projectedMeans) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	if diff || at != mlmc.Current {
		return p.Oracle.Eval(s, at, diff, alpha, out)
	}
	clear(p.scratch)
	if err := p.Oracle.Eval(s, at, false, 1, p.scratch); err != nil {
		return err
	}
	for i, v := range p.scratch {
		out[i] += alpha * v
	}
	p.add(p.level)
	return nil
}

// add projects p.scratch, a draw of h^level, and adds it to the level's row.
func (p *projectedMeans) add(level int) {
	p.pr.direction(p.scratch)
	row := p.rows[level]
	if row == nil {
		m := newMoments(len(p.scratch))
		row = &m
		p.rows[level] = row
	}
	row.add(p.scratch)
}

// reading is |P grad F|^2 read from the n draws of h^level, as GradNorm
// reads |grad F|^2 (y = |mean|^2 - Var/n), with its noise Var/n, and
// whether the projection changed any draw and was linear in them;
// otherwise (or where the row is not the n draws) it reports false and
// the caller keeps the unprojected reading. A one-sided projection (a
// box's face at x) clips each draw's noise one way, so the mean of the
// projected draws carries an offset of the noise's size that more draws
// do not shrink: there the unprojected reading, unbiased but too large
// where the gradient points across the face, is the safer one.
func (p *projectedMeans) reading(level, n int) (y, noise float64, ok bool) {
	row := p.rows[level]
	if !p.pr.active || p.pr.oneSided || row == nil || row.n != n || n < 2 {
		return 0, 0, false
	}
	y, v := row.meanSquare()
	return y, v / float64(n), true
}

// more draws n more queries of h^level from o (its samples counted by o)
// into the row, projected, and returns the queries drawn: all n, or where
// o failed, those drawn before (their samples spent all the same).
func (p *projectedMeans) more(o mlmc.Oracle[[]float64], level, n int) (drawn int, err error) {
	for range n {
		s, _, err := o.Draw(level)
		if err != nil {
			return drawn, err
		}
		drawn++
		clear(p.scratch)
		err = o.Eval(s, mlmc.Current, false, 1, p.scratch)
		o.Release(s)
		if err != nil {
			return drawn, err
		}
		p.add(level)
	}
	return drawn, nil
}
