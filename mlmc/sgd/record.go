package sgd

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Trace records the value at logged points of the cost: Values[k] is the
// value at the last iterate whose cost is at most Points[k] (the start
// before any). A logged value outside the domain (+Inf) answers Diverge,
// which ends the driver's run as diverged (an iterate at F = +Inf does not
// go on); auto.Run handles such an answer itself and goes on.
type Trace struct {
	Points []int64
	Values []float64
	k      int
}

// NewTrace is a trace of the logged points (increasing).
func NewTrace(points []int64) *Trace {
	return &Trace{Points: points, Values: make([]float64, len(points))}
}

func (t *Trace) Record(op Op, loc *Location) Status {
	if op != Estimated {
		return Continue
	}
	// Logged points before this estimate's cost belong to the iterate it
	// was drawn at.
	st := Continue
	for ; t.k < len(t.Points) && t.Points[t.k] < loc.Cost; t.k++ {
		t.Values[t.k] = loc.Value()
		if math.IsInf(t.Values[t.k], 1) {
			st = Diverge
		}
	}
	return st
}

// Finish gives the points after the run's end the final value (+Inf after
// a divergence).
func (t *Trace) Finish(final float64) {
	for ; t.k < len(t.Points); t.k++ {
		t.Values[t.k] = final
	}
}

// StaysBelow is the first logged point from which every recorded gap is
// at most target, -1 when there is none; gap turns a value into a gap.
func (t *Trace) StaysBelow(target float64, gap func(float64) float64) int64 {
	c := int64(-1)
	for k, v := range t.Values[:t.k] {
		switch g := gap(v); {
		case !(g <= target):
			c = -1
		case c < 0:
			c = t.Points[k]
		}
	}
	return c
}

// FirstTouch records, for each target, the cost of the first iterate
// whose gap is at or below it (-1: not yet). It reads the value at every
// iterate: cheap values only.
type FirstTouch struct {
	Targets []float64
	Gap     func(v float64) float64
	First   []int64
}

// NewFirstTouch is a first-touch recorder of the targets.
func NewFirstTouch(targets []float64, gap func(float64) float64) *FirstTouch {
	f := &FirstTouch{Targets: targets, Gap: gap, First: make([]int64, len(targets))}
	for i := range f.First {
		f.First[i] = -1
	}
	return f
}

func (f *FirstTouch) Record(op Op, loc *Location) Status {
	if op != Stepped {
		return Continue
	}
	v := loc.Value()
	for i, target := range f.Targets {
		if f.First[i] < 0 && f.Gap(v) <= target {
			f.First[i] = loc.Cost
		}
	}
	return Continue
}

// Divergence ends a run as diverged when the value, read every Every of
// cost, is outside the domain (+Inf) or above Ceiling (0: none; F(x0) for
// a run that must not rise above its start).
type Divergence struct {
	Every   int64
	Ceiling float64
	next    int64
}

func (d *Divergence) Record(op Op, loc *Location) Status {
	if op != Stepped || loc.Cost < d.next {
		return Continue
	}
	d.next = loc.Cost + max(d.Every, 1)
	if v := loc.Value(); math.IsInf(v, 1) || d.Ceiling != 0 && v > d.Ceiling {
		return Diverge
	}
	return Continue
}

// Progress prints, at most every Every of wall time, the share of Budget
// spent and the time left at the rate so far.
type Progress struct {
	W      io.Writer
	Budget int64
	Every  time.Duration
	Label  string
	start  time.Time
	last   time.Time
}

func (p *Progress) Record(op Op, loc *Location) Status {
	now := time.Now()
	if p.start.IsZero() {
		p.start, p.last = now, now
		return Continue
	}
	if op != Stepped || now.Sub(p.last) < p.Every || p.Budget <= 0 {
		return Continue
	}
	p.last = now
	done := float64(loc.Cost) / float64(p.Budget)
	el := now.Sub(p.start)
	left := time.Duration(float64(el) * (1 - done) / math.Max(done, 1e-9))
	fmt.Fprintf(p.W, "%s%d of %d (%.0f%%), %s elapsed, about %s left\n", p.Label, loc.Cost, p.Budget, 100*done, el.Round(time.Second), left.Round(time.Second))
	return Continue
}

// Relay passes a run's events on to recorders with another iterate in
// place of the driver's (a method that reports an average of its
// iterates), its value read once per iterate.
type Relay struct {
	Recs []Recorder
	loc  Location
	// stopAsked says a recorder answered Stop (Send returns the gravest
	// answer, which a Diverge at the same event would hide).
	stopAsked bool
}

// NewRelay is a relay to recs whose locations read value.
func NewRelay(value func([]float64) float64, recs ...Recorder) *Relay {
	return &Relay{Recs: recs, loc: Location{value: value}}
}

// Send passes op on with the iterate x (the relay's own copy is updated),
// the cost and the iterations; moved says x changed since the last Send.
func (r *Relay) Send(op Op, iter int, cost int64, x []float64, moved bool) Status {
	if len(r.Recs) == 0 {
		// Nobody to tell: no copy of x (a run without recorders pays
		// nothing per step for the relay).
		return Continue
	}
	if len(r.loc.X) != len(x) {
		r.loc.X = make([]float64, len(x))
		moved = true
	}
	if moved {
		copy(r.loc.X, x)
		r.loc.known = false
	}
	r.loc.Iter, r.loc.Cost = iter, cost
	st := Continue
	for _, rec := range r.Recs {
		s := rec.Record(op, &r.loc)
		r.stopAsked = r.stopAsked || s == Stop
		st = max(st, s)
	}
	return st
}

// Seen is the iterate the recorders saw last (the relay's copy; nil
// before the first Send to a recorder).
func (r *Relay) Seen() []float64 { return r.loc.X }

// StopAsked says a recorder has answered Stop at some event, whatever the
// others answered with it.
func (r *Relay) StopAsked() bool { return r.stopAsked }
