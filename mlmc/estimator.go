package mlmc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Method is a base estimator of the table of docs/definitions.md, section 2 "The estimators".
type Method int

const (
	LSGD   Method = iota // mean of NL draws of h^L
	VMLMC                // sum over l of the mean of n_l draws of H^l
	RTMLMC               // H^i / q_i, i from the truncated law on MinLevel..MaxLevel
	RUMLMC               // H^i / q_i, i from the geometric law on MinLevel..infinity
	RRMLMC               // sum_{l<=T} H^l / P(T >= l), T from the geometric law
)

var methodNames = [...]string{"lsgd", "vmlmc", "rtmlmc", "rumlmc", "rrmlmc"}

func (m Method) String() string {
	if m < 0 || int(m) >= len(methodNames) {
		return fmt.Sprintf("Method(%d)", int(m))
	}
	return methodNames[m]
}

// Names lists every estimator name New accepts.
func Names() []string {
	var names []string
	for _, n := range methodNames {
		names = append(names, n)
	}
	for _, n := range methodNames {
		names = append(names, "vr-"+n)
	}
	return names
}

// Kind is an estimator: a base method of the table, variance reduced
// (docs/definitions.md, section 2 "The estimators") or not. Its String is
// the name New's callers know it by ("rtmlmc", "vr-rtmlmc", ...).
type Kind struct {
	Method Method
	VR     bool
}

func (k Kind) String() string {
	if k.VR {
		return "vr-" + k.Method.String()
	}
	return k.Method.String()
}

// ParseKind reads an estimator name ("rtmlmc", "vr-rtmlmc", ...; any
// case): the one parser of the names.
func ParseKind(name string) (Kind, error) {
	base, vr := strings.CutPrefix(strings.ToLower(strings.TrimSpace(name)), "vr-")
	for i, n := range methodNames {
		if base == n {
			return Kind{Method: Method(i), VR: vr}, nil
		}
	}
	return Kind{}, fmt.Errorf("unknown estimator %q: use one of %s", name, strings.Join(Names(), ", "))
}

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
	// Levels holds the level of every query, in order.
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

// query is one oracle query of a plan: its level, whether it asks for H^l
// rather than h^l, and its weight in the estimate.
type query struct {
	level  int
	diff   bool
	weight float64
}

// Estimator is a gradient estimator over gradient vectors of type V bound to
// one oracle. It is not safe for concurrent use.
type Estimator[V any] struct {
	name   string
	method Method
	vr     bool
	cfg    Config
	ops    VecOps[V]
	oracle Oracle[V]

	trunc   LevelDist // rtmlmc's law on MinLevel..MaxLevel
	geom    LevelDist // rumlmc and rrmlmc's law, conditioned on the servable levels
	geomMax int       // the largest level rumlmc and rrmlmc serve
	notes   []string

	pcg *rand.PCG
	rng *rand.Rand

	state     V    // m_{t-1} of VR
	haveState bool // state holds m_{t-1} of the previous iteration
	totals    Totals

	plan []query // scratch
}

// New makes the estimator k over oracle o. Errors name the setting to
// change in this package's terms (minimum level, b, c, QE, ...); a command
// words them as its flags.
func New[V any](k Kind, cfg Config, ops VecOps[V], o Oracle[V]) (*Estimator[V], error) {
	if k.Method < 0 || int(k.Method) >= len(methodNames) {
		return nil, fmt.Errorf("unknown estimator %v", k.Method)
	}
	m, vr := k.Method, k.VR
	cfg = cfg.withDefaults()
	if err := cfg.check(m, o.MaxLevel()); err != nil {
		return nil, fmt.Errorf("estimator %s: %w", k, err)
	}
	e := &Estimator[V]{name: k.String(), method: m, vr: vr, cfg: cfg, ops: ops, oracle: o}
	if vr {
		e.state = ops.New()
	}
	e.pcg = rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	e.rng = rand.New(e.pcg)
	switch m {
	case RTMLMC:
		e.trunc = cfg.rtLaw()
	case RUMLMC, RRMLMC:
		e.geomMax = levelCap
		if max := o.MaxLevel(); max != Unbounded && max < levelCap {
			e.geomMax = max
			e.notes = append(e.notes, fmt.Sprintf(
				"%s: the oracle serves levels up to %d; levels drawn above it are redrawn, "+
					"which makes this RT-MLMC truncated at %d (its expectation is grad F^%d, not grad F)",
				e.name, max, max, max))
		}
		e.geom = Geometric(cfg.MinLevel, cfg.B, cfg.C).truncate(e.geomMax)
		if cfg.B <= cfg.C {
			e.notes = append(e.notes, fmt.Sprintf(
				"%s: b = %g <= c = %g, so the untruncated estimator has unbounded expected cost (the paper's Table 2)",
				e.name, cfg.B, cfg.C))
		}
	}
	return e, nil
}

func (c Config) check(m Method, oracleMax int) error {
	switch {
	case c.MinLevel < 0:
		return fmt.Errorf("minimum level %d is negative", c.MinLevel)
	case c.B <= 0 || c.C <= 0:
		return fmt.Errorf("rates b = %g, c = %g must be positive", c.B, c.C)
	case c.NL < 1 || c.D1 < 1 || c.D2 < 1 || c.QE < 1:
		return fmt.Errorf("NL = %d, D1 = %d, D2 = %d, QE = %d must all be at least 1", c.NL, c.D1, c.D2, c.QE)
	case c.N <= 0:
		return fmt.Errorf("vmlmc N = %g must be positive", c.N)
	}
	switch m {
	case LSGD, VMLMC, RTMLMC:
		if c.MaxLevel < c.MinLevel {
			return fmt.Errorf("maximum level %d is below the minimum level %d", c.MaxLevel, c.MinLevel)
		}
		if oracleMax != Unbounded && c.MaxLevel > oracleMax {
			return fmt.Errorf("maximum level %d is above the largest level the oracle serves (%d)", c.MaxLevel, oracleMax)
		}
		if m != LSGD {
			return c.checkExplicit()
		}
	default:
		if oracleMax != Unbounded && c.MinLevel > oracleMax {
			return fmt.Errorf("minimum level %d is above the largest level the oracle serves (%d)", c.MinLevel, oracleMax)
		}
	}
	return nil
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
	var step Step
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
	e.plan = e.makePlan(e.plan[:0], step)
	for _, q := range e.plan {
		s, cost, err := e.oracle.Draw(q.level)
		if err != nil {
			return fmt.Errorf("draw at level %d: %w", q.level, err)
		}
		step.Levels = append(step.Levels, q.level)
		step.Samples += cost
		err = e.oracle.Eval(s, Current, q.diff, alpha*q.weight, out)
		step.Evals++
		if err == nil && correction {
			err = e.oracle.Eval(s, Previous, q.diff, -alpha*q.weight, out)
			step.Evals++
		}
		e.oracle.Release(s)
		if err != nil {
			return fmt.Errorf("evaluate at level %d: %w", q.level, err)
		}
	}
	return nil
}

// makePlan draws the levels of one base estimate (the table of docs/definitions.md, section 2 "The estimators").
func (e *Estimator[V]) makePlan(plan []query, step *Step) []query {
	c := e.cfg
	at := func(l int, w float64) query { return query{level: l, diff: c.correction(e.method, l), weight: w} }
	switch e.method {
	case LSGD:
		for range c.NL {
			plan = append(plan, at(c.MaxLevel, 1/float64(c.NL)))
		}
	case VMLMC:
		for l := c.MinLevel; l <= c.MaxLevel; l++ {
			n := c.vmlmcDraws(l)
			for range n {
				plan = append(plan, at(l, 1/float64(n)))
			}
		}
	case RTMLMC:
		i := e.trunc.Draw(e.rng)
		plan = append(plan, at(i, 1/e.trunc.Prob(i)))
	case RUMLMC:
		i := e.drawGeometric(step)
		plan = append(plan, at(i, 1/e.geom.Prob(i)))
	case RRMLMC:
		top := e.drawGeometric(step)
		for l := c.MinLevel; l <= top; l++ {
			plan = append(plan, at(l, 1/e.geom.Tail(l)))
		}
	}
	return plan
}

// correction says whether method m queries level l as a correction H^l
// (every level above the minimum of an MLMC estimator) rather than as
// h^l (L-SGD's every query, and an MLMC estimator's minimum level). It is
// the one statement of it, which the estimators' plans and ExpectedCost's
// passes share.
func (c Config) correction(m Method, l int) bool { return m != LSGD && l > c.MinLevel }

// drawGeometric draws from the unbounded law and redraws levels the oracle
// cannot serve, which draws from the law conditioned on T <= geomMax (e.geom).
func (e *Estimator[V]) drawGeometric(step *Step) int {
	law := Geometric(e.cfg.MinLevel, e.cfg.B, e.cfg.C)
	for {
		l := law.Draw(e.rng)
		if l <= e.geomMax {
			return l
		}
		step.Redraws++
	}
}

// VMLMCDraws is n_l = ceil(2^(-(b+c) l/2) N), V-MLMC's draws at level l.
func VMLMCDraws(l int, b, c, n float64) int {
	return int(math.Ceil(math.Exp2(-(b+c)*float64(l)/2) * n))
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
