package mlmc

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

// Method is a base estimator of the table of docs/definitions.md, section 2
// "The estimators": an index into the table of Schemes that New,
// ExpectedCost, ParseKind and the predictions read. The five of the paper
// are constants; Register adds others.
type Method int

const (
	LSGD   Method = iota // mean of NL draws of h^L (lsgd.go)
	VMLMC                // sum over l of the mean of n_l draws of H^l (vmlmc.go)
	RTMLMC               // H^i / q_i, i from the truncated law on MinLevel..MaxLevel (rtmlmc.go)
	RUMLMC               // H^i / q_i, i from the geometric law on MinLevel..infinity (rumlmc.go)
	RRMLMC               // sum_{l<=T} H^l / P(T >= l), T from the geometric law (rrmlmc.go)
)

// builtin is the paper's table, indexed by the constants above: a method of
// this package is one file implementing Scheme plus one line here.
var builtin = []Scheme{
	LSGD:   lsgd{},
	VMLMC:  vmlmc{},
	RTMLMC: rtmlmc{},
	RUMLMC: rumlmc{},
	RRMLMC: rrmlmc{},
}

// A Scheme is one base estimator: everything New, ExpectedCost and the
// predictions need to know of it. Each method of the paper is one file of
// this package implementing it; another program adds its own with Register.
// A Scheme may also implement Predictable (its variance from measured
// levels), Explicit() ExplicitLaw (it reads Config.LevelProbs or
// LevelDraws), SplitsBatch() bool (ranks share each of its draws) and the
// traits Method's methods of the same names read (DisplayName, Unbounded,
// SingleLevel, DrawsLevels); without them it is not predicted, takes no
// measured law, draws independently on every rank, is shown by its Name
// and is a bounded, multilevel method of fixed levels.
type Scheme interface {
	// Name is the method's name as ParseKind reads it: lower case, without
	// the "vr-" of the variance-reduced version.
	Name() string
	// Check validates the method's own settings in cfg (defaults filled
	// in; the settings every method shares are checked before) for an
	// oracle that serves levels up to oracleMax (Unbounded: any). Errors
	// name settings in this package's terms (maximum level, ...).
	Check(cfg Config, oracleMax int) error
	// Bind is the method with the checked configuration cfg over an oracle
	// serving levels up to oracleMax.
	Bind(cfg Config, oracleMax int) Allocation
}

// An Allocation is a Scheme bound to one configuration: how one base
// estimate v(x) spreads its queries over the levels.
type Allocation interface {
	// Queries appends the queries of one base estimate, drawing any random
	// levels with r, and returns them with the number of levels drawn
	// above the oracle's largest and drawn again.
	Queries(plan []Query, r *rand.Rand) ([]Query, int)
	// Expected is the expected number of queries at each level of one base
	// estimate, in increasing order of level: the cost model
	// (ExpectedCost) prices it in samples, the predictions in measured
	// variance and time.
	Expected() []LevelQueries
	// Notes are lines for a run's log (without the estimator's name, which
	// the estimator puts before each): truncations and why.
	Notes() []string
}

// Query is one oracle query of a plan: its level, whether it asks for the
// correction H^l rather than h^l, and its weight in the estimate.
type Query struct {
	Level      int
	Correction bool
	Weight     float64
}

// LevelQueries is the expected number of queries of one base estimate at
// one level, and whether they are corrections H^l (rather than h^l).
type LevelQueries struct {
	Level      int
	Queries    float64
	Correction bool
}

// Predictable is implemented by a Scheme whose variance can be predicted
// from per-level statistics measured at fixed parameters (MeasureLevels,
// `simclr levels`). stats[i] is the measured statistic of the queries q[i]
// (h^l at the minimum level and at L, H^l above the minimum).
type Predictable interface {
	// Variance is the variance of one base estimate that makes the
	// queries q, with mean2 = |E v|^2.
	Variance(q []LevelQueries, stats []LevelStat, mean2 float64) float64
	// Optimal is the allocation (the Queries of each q[i]) that minimises
	// variance x cost for the measured levels, with cost[i] the cost of a
	// query of q[i]; nil for none. The predictions list it as the method's
	// name with "-opt".
	Optimal(q []LevelQueries, stats []LevelStat, cost []float64) []float64
}

// ExplicitLaw says which of Config's explicit allocations a method reads in
// place of the one its rates b and c give.
type ExplicitLaw int

const (
	NoExplicitLaw ExplicitLaw = iota
	ExplicitProbs             // Config.LevelProbs: a law q_l on MinLevel..MaxLevel (RT-MLMC)
	ExplicitDraws             // Config.LevelDraws: draws n_l on MinLevel..MaxLevel (V-MLMC)
)

// explicitLaw is implemented by the Schemes that take an explicit
// allocation of measured levels.
type explicitLaw interface{ Explicit() ExplicitLaw }

// batchSplitter is implemented by the Schemes whose queries ranks of a
// data-parallel run share, each computing part of one draw, rather than
// draw independently.
type batchSplitter interface{ SplitsBatch() bool }

// table is the methods New and ParseKind know: the paper's and those
// Register added. It is package-level because a method's name must parse
// wherever a Kind is read back (flags, config files, checkpoints) without
// threading a table through every caller, as image.RegisterFormat does for
// image formats; it only grows, under its lock.
var table = struct {
	sync.RWMutex
	schemes []Scheme
}{schemes: builtin}

// Register adds a method to the table that New, ExpectedCost, ParseKind and
// Names read, and returns it. Call it once per method, from an init
// function or a package-level variable. The name must be new, lower case,
// without spaces and not begin with "vr-".
func Register(s Scheme) (Method, error) {
	name := s.Name()
	if name == "" || name != strings.ToLower(strings.TrimSpace(name)) || strings.HasPrefix(name, "vr-") || strings.ContainsAny(name, " \t") {
		return 0, fmt.Errorf("register estimator %q: a name is lower case, without spaces, and does not begin with vr-", name)
	}
	table.Lock()
	defer table.Unlock()
	for _, have := range table.schemes {
		if have.Name() == name {
			return 0, fmt.Errorf("register estimator %q: the name is taken", name)
		}
	}
	table.schemes = append(table.schemes, s)
	return Method(len(table.schemes) - 1), nil
}

// scheme is m's entry in the table.
func (m Method) scheme() (Scheme, error) {
	table.RLock()
	defer table.RUnlock()
	if m < 0 || int(m) >= len(table.schemes) {
		return nil, fmt.Errorf("unknown estimator Method(%d)", int(m))
	}
	return table.schemes[m], nil
}

func (m Method) String() string {
	s, err := m.scheme()
	if err != nil {
		return fmt.Sprintf("Method(%d)", int(m))
	}
	return s.Name()
}

// Explicit says which explicit allocation of Config the method reads
// (LevelProbs, LevelDraws or neither).
func (m Method) Explicit() ExplicitLaw {
	if s, err := m.scheme(); err == nil {
		if e, ok := s.(explicitLaw); ok {
			return e.Explicit()
		}
	}
	return NoExplicitLaw
}

// SplitsBatch says whether ranks of a data-parallel run split each of the
// method's draws between them (L-SGD's one batch) rather than each
// drawing its own levels and images.
func (m Method) SplitsBatch() bool {
	if s, err := m.scheme(); err == nil {
		if b, ok := s.(batchSplitter); ok {
			return b.SplitsBatch()
		}
	}
	return false
}

// displayNamer, unbounded, singleLevel and levelDrawer are the optional
// traits of a Scheme that programs comparing methods (tables, grids of
// settings) read through Method rather than naming methods.
type (
	displayNamer interface{ DisplayName() string }
	unbounded    interface{ Unbounded() bool }
	singleLevel  interface{ SingleLevel() bool }
	levelDrawer  interface{ DrawsLevels() bool }
)

// trait is what ask returns for m's scheme when it implements T, and
// otherwise (or for an unknown method) the zero value.
func trait[T any, V any](m Method, ask func(T) V) V {
	var zero V
	s, err := m.scheme()
	if err != nil {
		return zero
	}
	if t, ok := s.(T); ok {
		return ask(t)
	}
	return zero
}

// DisplayName is the method's name for people ("RT-MLMC"), its Name where
// the method gives none.
func (m Method) DisplayName() string {
	if n := trait(m, displayNamer.DisplayName); n != "" {
		return n
	}
	return m.String()
}

// Unbounded says the method draws its levels from a law on
// MinLevel..infinity (RU-MLMC, RR-MLMC): it has no top level, and
// Config.MaxLevel does not configure it.
func (m Method) Unbounded() bool { return trait(m, unbounded.Unbounded) }

// SingleLevel says the method queries one level only (L-SGD's h^L): the
// baseline the multilevel methods are compared against.
func (m Method) SingleLevel() bool { return trait(m, singleLevel.SingleLevel) }

// DrawsLevels says the method draws its levels at random from the law of
// rates Config.B and Config.C (RT-, RU- and RR-MLMC).
func (m Method) DrawsLevels() bool { return trait(m, levelDrawer.DrawsLevels) }

// Methods lists the methods of the table, the paper's first, in the order
// of registration.
func Methods() []Method {
	table.RLock()
	defer table.RUnlock()
	ms := make([]Method, len(table.schemes))
	for i := range ms {
		ms[i] = Method(i)
	}
	return ms
}

// Names lists every estimator name New accepts.
func Names() []string {
	table.RLock()
	defer table.RUnlock()
	var names []string
	for _, s := range table.schemes {
		names = append(names, s.Name())
	}
	for _, s := range table.schemes {
		names = append(names, "vr-"+s.Name())
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
	if k, ok := lookupKind(name); ok {
		return k, nil
	}
	return Kind{}, fmt.Errorf("unknown estimator %q: use one of %s", name, strings.Join(Names(), ", "))
}

// lookupKind is ParseKind without the error: the predictions' names
// include allocations that are no estimator's ("-opt"), which the
// verdict and PredictVR look up on every measurement (PredictVR skips
// them), where an error's message would be built only to be dropped.
func lookupKind(name string) (Kind, bool) {
	base, vr := strings.CutPrefix(strings.ToLower(strings.TrimSpace(name)), "vr-")
	table.RLock()
	defer table.RUnlock()
	for i, s := range table.schemes {
		if base == s.Name() {
			return Kind{Method: Method(i), VR: vr}, true
		}
	}
	return Kind{}, false
}

// bind checks cfg (defaults filled in) for the estimator k over an oracle
// serving levels up to oracleMax and binds k's method to it: what New and
// ExpectedCost share. Errors name k.
func bind(k Kind, cfg Config, oracleMax int) (Allocation, error) {
	s, err := k.Method.scheme()
	if err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("estimator %s: %w", k, err)
	}
	if err := s.Check(cfg, oracleMax); err != nil {
		return nil, fmt.Errorf("estimator %s: %w", k, err)
	}
	return s.Bind(cfg, oracleMax), nil
}

// check validates the settings every method shares.
func (c Config) check() error {
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
	return nil
}

// CheckLevelRange checks MinLevel..MaxLevel for a method that queries the
// levels up to MaxLevel (L-SGD, V-MLMC, RT-MLMC): a range, served by an
// oracle serving levels up to oracleMax.
func CheckLevelRange(c Config, oracleMax int) error {
	if c.MaxLevel < c.MinLevel {
		return fmt.Errorf("maximum level %d is below the minimum level %d", c.MaxLevel, c.MinLevel)
	}
	if oracleMax != Unbounded && c.MaxLevel > oracleMax {
		return fmt.Errorf("maximum level %d is above the largest level the oracle serves (%d)", c.MaxLevel, oracleMax)
	}
	return nil
}

// correctionAbove says whether a query at level l of an MLMC estimator is a
// correction H^l: every level above the minimum (the minimum level's query
// is h^l). L-SGD queries h^L only.
func correctionAbove(c Config, l int) bool { return l > c.MinLevel }
