package mlmc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Config holds an estimator's settings. Zero values take the defaults
// stated on each field.
type Config struct {
	// MinLevel is l_min, the base level (SimCLR: 1, two images).
	MinLevel int
	// MaxLevel is L, the top level of lsgd, vmlmc and rtmlmc. RU-MLMC and
	// RR-MLMC ignore it: they are bounded only by the oracle's MaxLevel.
	MaxLevel int
	// B and C are the variance and cost rates b and c of docs/definitions.md, section 1 "Oracles and levels"
	// (default 1 each).
	B, C float64
	// N sets vmlmc's draws per level, n_l = ceil(2^(-(b+c) l/2) N). Default
	// 2^((b+c) L/2), which gives n_L = 1.
	N float64
	// NL is the number of h^L draws lsgd averages (default 1).
	NL int
	// D1, D2 and QE are the VR settings: every QE iterations a fresh mean
	// of D1 estimates, otherwise a correction averaged over D2 draws
	// (defaults D1 = 1, D2 = 1, QE = 10).
	D1, D2, QE int
	// Seed seeds the estimator's level draws.
	Seed uint64
	// LevelProbs, when set, replaces RT-MLMC's law: q_l proportional to
	// LevelProbs[l-MinLevel] on MinLevel..MaxLevel (e.g. the optimal law
	// of measured levels). LevelDraws likewise replaces V-MLMC's n_l.
	LevelProbs []float64
	LevelDraws []int
	// CorrectionPasses is what ExpectedCost counts as oracle evaluations
	// for one correction query H^l above MinLevel: 1 when the oracle builds
	// H^l from one network pass (the default), 3 for SimCLR's separate
	// halves (B, B1 and B2 each its own pass). The estimators ignore it.
	CorrectionPasses int
}

func (c Config) withDefaults() Config {
	if c.B == 0 {
		c.B = 1
	}
	if c.C == 0 {
		c.C = 1
	}
	if c.NL == 0 {
		c.NL = 1
	}
	if c.D1 == 0 {
		c.D1 = 1
	}
	if c.D2 == 0 {
		c.D2 = 1
	}
	if c.QE == 0 {
		c.QE = 10
	}
	if c.CorrectionPasses == 0 {
		c.CorrectionPasses = 1
	}
	if c.N == 0 {
		c.N = math.Ceil(math.Exp2((c.B + c.C) * float64(c.MaxLevel) / 2))
	}
	return c
}

// Step reports one iteration: the levels queried and its cost.
type Step struct {
	// Fresh is false for a VR correction step (t mod QE != 0), true
	// otherwise.
	Fresh bool
	// Levels holds the level of every query, in order. It is the
	// estimator's buffer, valid until its next Estimate: copy it to keep
	// it (a fresh slice per iteration would be a small run's largest
	// allocation, one per query).
	Levels []int
	// Samples is the sum of the costs of the draws (each counted once).
	Samples int64
	// Evals counts oracle evaluations: a VR correction evaluates every
	// draw twice, at x_t and at x_{t-1}.
	Evals int64
	// Redraws counts levels drawn above the oracle's MaxLevel and drawn
	// again (RU-MLMC and RR-MLMC only).
	Redraws int
}

// Totals are cumulative counts since the estimator was made (or restored).
type Totals struct {
	Iterations, Samples, Evals, Redraws int64
}

// Estimator is a gradient estimator over gradient vectors of type V bound to
// one oracle. It is not safe for concurrent use.
type Estimator[V any] struct {
	name   string
	vr     bool
	cfg    Config
	ops    VecOps[V]
	oracle Oracle[V]
	alloc  Allocation // the method bound to cfg and the oracle
	notes  []string

	pcg *rand.PCG
	rng *rand.Rand

	state     V    // m_{t-1} of VR
	haveState bool // state holds m_{t-1} of the previous iteration
	totals    Totals

	plan   []Query // scratch
	levels []int   // Step.Levels' backing array, reused by every Estimate
}

// New makes the estimator k over oracle o. Errors name the setting to
// change in this package's terms (minimum level, b, c, QE, ...); a command
// words them as its flags.
func New[V any](k Kind, cfg Config, ops VecOps[V], o Oracle[V]) (*Estimator[V], error) {
	cfg = cfg.withDefaults()
	alloc, err := bind(k, cfg, o.MaxLevel())
	if err != nil {
		return nil, err
	}
	e := &Estimator[V]{name: k.String(), vr: k.VR, cfg: cfg, ops: ops, oracle: o, alloc: alloc}
	if e.vr {
		e.state = ops.New()
	}
	e.pcg = rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	e.rng = rand.New(e.pcg)
	for _, n := range alloc.Notes() {
		e.notes = append(e.notes, e.name+": "+n)
	}
	return e, nil
}

// Name is the estimator's name as New accepts it.
func (e *Estimator[V]) Name() string { return e.name }

// Config is the configuration with defaults filled in.
func (e *Estimator[V]) Config() Config { return e.cfg }

// Notes are lines for the run's log: truncations of RU/RR and why.
func (e *Estimator[V]) Notes() []string { return e.notes }

// Totals are the cumulative counts.
func (e *Estimator[V]) Totals() Totals { return e.totals }

// VRState is m_{t-1}, the VR estimator's running estimate, for
// checkpoints: save its contents with MarshalBinary's bytes, and to resume
// write them back into this vector and call UnmarshalBinary. ok is false for
// an estimator without VR.
func (e *Estimator[V]) VRState() (m V, ok bool) { return e.state, e.vr }

// Estimate writes the iteration-t estimate v_t (m_t for VR) into out,
// overwriting it. For a VR estimator with t mod QE != 0 the oracle must be
// able to evaluate at Previous = the parameters of the previous call.
func (e *Estimator[V]) Estimate(t int, out V) (Step, error) {
	step := Step{Levels: e.levels[:0]}
	var err error
	switch {
	case !e.vr:
		step.Fresh = true
		e.ops.Zero(out)
		err = e.accumulate(&step, out, 1, false)
	case t%e.cfg.QE == 0:
		step.Fresh = true
		e.ops.Zero(out)
		for k := 0; k < e.cfg.D1 && err == nil; k++ {
			err = e.accumulate(&step, out, 1/float64(e.cfg.D1), false)
		}
	default:
		if !e.haveState {
			return step, fmt.Errorf("estimator %s: iteration %d needs the VR state m_%d of the previous iteration: "+
				"restore it from the checkpoint (or start at a multiple of QE = %d)", e.name, t, t-1, e.cfg.QE)
		}
		e.ops.Copy(out, e.state)
		for k := 0; k < e.cfg.D2 && err == nil; k++ {
			err = e.accumulate(&step, out, 1/float64(e.cfg.D2), true)
		}
	}
	e.levels = step.Levels[:0]
	if err != nil {
		// The VR state is written only on success, so it still holds the
		// m of the last iteration that completed: the same t may be
		// estimated again (a trainer checkpoints after a device failure
		// and resumes at t).
		return step, fmt.Errorf("estimator %s, iteration %d: %w", e.name, t, err)
	}
	if e.vr {
		e.ops.Copy(e.state, out)
		e.haveState = true
	}
	e.totals.Iterations++
	e.totals.Samples += step.Samples
	e.totals.Evals += step.Evals
	e.totals.Redraws += int64(step.Redraws)
	return step, nil
}

// accumulate draws one base estimate v and adds alpha*v(x_t) into out, or
// with correction alpha*[v(x_t; s) - v(x_{t-1}; s)] on the same draws s.
// Each draw is evaluated and released before the next is made, so at most
// one draw is held at a time.
func (e *Estimator[V]) accumulate(step *Step, out V, alpha float64, correction bool) error {
	var redraws int
	e.plan, redraws = e.alloc.Queries(e.plan[:0], e.rng)
	step.Redraws += redraws
	for _, q := range e.plan {
		s, cost, err := e.oracle.Draw(q.Level)
		if err != nil {
			return fmt.Errorf("draw at level %d: %w", q.Level, err)
		}
		step.Levels = append(step.Levels, q.Level)
		step.Samples += cost
		err = e.oracle.Eval(s, Current, q.Correction, alpha*q.Weight, out)
		step.Evals++
		if err == nil && correction {
			err = e.oracle.Eval(s, Previous, q.Correction, -alpha*q.Weight, out)
			step.Evals++
		}
		e.oracle.Release(s)
		if err != nil {
			return fmt.Errorf("evaluate at level %d: %w", q.Level, err)
		}
	}
	return nil
}

const stateVersion = 1

// MarshalBinary saves the level generator, the cumulative counts and
// whether the VR state is valid (the VR vector itself is the caller's, see
// VRState), so that a restored estimator continues exactly.
func (e *Estimator[V]) MarshalBinary() ([]byte, error) {
	pcg, err := e.pcg.MarshalBinary()
	if err != nil {
		return nil, err
	}
	buf := []byte{stateVersion}
	buf = binary.AppendUvarint(buf, uint64(len(pcg)))
	buf = append(buf, pcg...)
	for _, v := range []int64{e.totals.Iterations, e.totals.Samples, e.totals.Evals, e.totals.Redraws} {
		buf = binary.AppendVarint(buf, v)
	}
	have := byte(0)
	if e.haveState {
		have = 1
	}
	buf = append(buf, have)
	buf = append(buf, e.name...)
	return buf, nil
}

// UnmarshalBinary restores what MarshalBinary saved. The estimator must have
// been made with the same name.
func (e *Estimator[V]) UnmarshalBinary(data []byte) error {
	bad := func(why string) error { return fmt.Errorf("estimator %s: restore state: %s", e.name, why) }
	if len(data) == 0 || data[0] != stateVersion {
		return bad("unknown state version (checkpoint from another program version?)")
	}
	data = data[1:]
	n, k := binary.Uvarint(data)
	if k <= 0 || uint64(len(data)-k) < n {
		return bad("truncated generator state")
	}
	pcg := data[k : k+int(n)]
	data = data[k+int(n):]
	var counts [4]int64
	for i := range counts {
		v, k := binary.Varint(data)
		if k <= 0 {
			return bad("truncated counts")
		}
		counts[i] = v
		data = data[k:]
	}
	if len(data) < 1 {
		return bad("truncated VR flag")
	}
	have := data[0] == 1
	if name := string(data[1:]); name != e.name {
		return bad(fmt.Sprintf("the saved state is of estimator %q", name))
	}
	if have && !e.vr {
		return errors.New("restore state: VR state in a checkpoint of an estimator without VR")
	}
	if err := e.pcg.UnmarshalBinary(pcg); err != nil {
		return bad(err.Error())
	}
	e.totals = Totals{Iterations: counts[0], Samples: counts[1], Evals: counts[2], Redraws: counts[3]}
	e.haveState = have
	return nil
}
