package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/simclr-go/simclr/mlmc"
)

// Construction names how the queue oracle builds h^l and H^l
// (docs/definitions.md, section 8 "Pricing and staffing").
type Construction string

const (
	// Paper is the paper's construction: m-step means of W + X ending at
	// steps 2^l and 2^(l-1) of one trajectory (see paperWindows).
	Paper Construction = "paper"
	// EndCoupled is the standard MLMC construction for steady-state
	// expectations (see endCoupled), the project's default: terminal values
	// at the same final step of two queues started empty 2^l and 2^(l-1)
	// steps before it. With m = 1 it has the same E[h^l] and E[H^l] as
	// Paper (TestConstructionsAgreeInExpectation) but a decaying Var H^l.
	EndCoupled Construction = "coupled"
	// TailAverages is the tail construction of docs/definitions.md,
	// section 8 "Pricing and staffing", kept for comparison: tail averages
	// of one trajectory over 2^(l-1)+1..2^l and 2^(l-2)+1..2^(l-1) (see
	// tailAverages).
	TailAverages Construction = "tail"
)

// ParseConstruction checks a --construction value.
func ParseConstruction(s string) (Construction, error) {
	switch c := Construction(s); c {
	case Paper, EndCoupled, TailAverages:
		return c, nil
	}
	return "", fmt.Errorf("unknown --construction %q: use paper, coupled or tail", s)
}

// oracleKind is a construction with its window m (used by Paper only).
type oracleKind struct {
	Construction Construction
	Window       int
}

func (k oracleKind) String() string {
	if k.Construction == Paper {
		return fmt.Sprintf("%s (m = %d)", k.Construction, k.Window)
	}
	return string(k.Construction)
}

// queueOracle is the GI/GI/1 biased oracle of docs/definitions.md, section 8
// "Pricing and staffing" over gradient vectors (dF/dmu, dF/dp) in []float64.
//
// A draw at level l is the seed of one trajectory's random numbers (U_n,
// V_n), n = 1..2^l. Evaluated at (mu, p) it runs Lindley's recursion from an
// empty queue,
//
//	W_n = (W_(n-1) + V_n/mu - U_n/lambda(p))^+,   X_n = 1{W_n > 0} (X_(n-1) + U_n/lambda(p)),
//
// and estimates Z = E[W_inf + X_inf] by some Y^l; then h^l = alpha + beta Y^l
// and H^l = beta (Y^l - Y'^(l-1)) (GradAffine gives alpha and beta), with
// Y and Y' from the same random numbers:
//
//   - paper: Y^l is the mean of W + X over the last m steps ending at step
//     2^l, and Y'^(l-1) the m-step mean ending at step 2^(l-1) of the same
//     trajectory (windows clipped to the steps that exist).
//   - coupled: Y^l is W + X at the end of the 2^l steps, and Y'^(l-1) the
//     W + X at that same final step of a second queue started empty
//     2^(l-1) steps before the end, on the same random numbers.
//   - tail: Y^l is the tail average
//     A(T) = (1/(T - T/2)) sum_{n = T/2+1..T} (W_n + X_n) at T = 2^l (integer
//     T/2; the first half is warm-up from the empty start) and Y'^(l-1) the
//     tail average at 2^(l-1) of the same trajectory.
//
// Costs. A draw at level l consumes the random numbers of 2^l steps: that is
// Draw's cost ("samples drawn"). The oracle also counts the queue steps it
// simulates (Simulated): 2^l per evaluation of h^l, and for H^l 2^l with
// paper and tail (both values come from one run) but 2^l + 2^(l-1) with
// coupled (two queues). A VR correction evaluates each draw twice, so it
// simulates twice. (For paper and coupled, the simulator runs only the last
// 2^simWindowLevel steps before each value it needs; it still counts the
// steps of the full runs, see endCoupled.)
//
// With paper and tail the two values of H^l come from stretches of the
// trajectory that are far apart, so they cancel nothing: Var H^l does not
// decay (paper, m = 1: it tends to 2 Var(W + X)) or falls only like Var h^l
// (tail, 2^-l), and RT-MLMC's variance per simulated step is hundreds of
// times L-SGD's (TestRTMLMCVarianceCostAgainstLSGD). With coupled the two
// queues coalesce once the longer one empties, so H^l vanishes at high
// levels while Var h^L does not shrink with L, and the same ratio is about
// 5e-4.
type queueOracle struct {
	law          Law
	construction Construction
	// window is the paper construction's m (steps averaged per value).
	window int
	// x and xPrev are the current and previous decisions (mu, p), set by
	// the optimisation loop.
	x, xPrev [2]float64
	// maxLevel bounds the trajectories (2^maxLevel steps).
	maxLevel int
	seeds    *rand.Rand
	// simulated counts queue steps simulated by Eval (see above).
	simulated int64
}

// newQueueOracle returns the oracle of construction k (a window below 1
// counts as 1).
func newQueueOracle(law Law, k oracleKind, maxLevel int, seed uint64) *queueOracle {
	return &queueOracle{law: law, construction: k.Construction, window: max(k.Window, 1), maxLevel: maxLevel,
		seeds: rand.New(rand.NewPCG(seed, 0x51ed))}
}

// Simulated is the number of queue steps simulated so far (see queueOracle).
func (o *queueOracle) Simulated() int64 { return o.simulated }

func (o *queueOracle) MaxLevel() int { return o.maxLevel }

func (o *queueOracle) Draw(level int) (mlmc.Sample, int64, error) {
	if level < 0 || level > o.maxLevel {
		return nil, 0, fmt.Errorf("queue oracle: level %d outside 0..%d", level, o.maxLevel)
	}
	return queueDraw{level: level, seed: o.seeds.Uint64()}, 1 << level, nil
}

func (o *queueOracle) Release(mlmc.Sample) {}

type queueDraw struct {
	level int
	seed  uint64
}

func (o *queueOracle) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	d, ok := s.(queueDraw)
	if !ok {
		return fmt.Errorf("queue oracle: sample of type %T is not one of its draws", s)
	}
	x := o.x
	if at == mlmc.Previous {
		x = o.xPrev
	}
	a, b := GradAffine(o.law, x[0], x[1])
	var long, short float64
	n := int64(1) << d.level
	switch o.construction {
	case EndCoupled:
		long, short = endCoupled(o.law, x[0], x[1], d.seed, d.level, simWindowLevel, false)
		if diff {
			n += n / 2
		}
	case Paper:
		long, short = paperWindows(o.law, x[0], x[1], d.seed, d.level, o.window, simWindowLevel, false)
	default:
		long, short = tailAverages(o.law, x[0], x[1], d.seed, d.level)
	}
	o.simulated += n
	if diff {
		out[0] += alpha * b[0] * (long - short)
		out[1] += alpha * b[1] * (long - short)
		return nil
	}
	out[0] += alpha * (a[0] + b[0]*long)
	out[1] += alpha * (a[1] + b[1]*long)
	return nil
}

// tailAverages simulates 2^level steps from the seed and returns the tail
// averages of W + X at T = 2^level and at T = 2^(level-1) (0 at level 0).
func tailAverages(law Law, mu, p float64, seed uint64, level int) (long, short float64) {
	r := rand.New(rand.NewPCG(seed, 0))
	invMu, invLam := 1/mu, 1/lambda(p)
	n := 1 << level
	half, quarter := n/2, n/4
	var w, xx, sumLong, sumShort float64
	for i := 1; i <= n; i++ {
		u := r.ExpFloat64() * invLam
		w += law.Sample(r)*invMu - u
		if w > 0 {
			xx += u
		} else {
			w, xx = 0, 0
		}
		switch {
		case i > half:
			sumLong += w + xx
		case i > quarter:
			sumShort += w + xx
		}
	}
	long = sumLong / float64(n-half)
	if level > 0 {
		short = sumShort / float64(half-quarter)
	}
	return long, short
}

// simWindowLevel bounds the coupled oracle's simulation: only the last
// 2^simWindowLevel steps of a longer run are simulated (see endCoupled).
const simWindowLevel = 13

// endCoupled returns the two terminal values of the coupled construction:
// long = W + X after n = 2^level steps from an empty queue, and short = W + X
// at that same final step of a queue started empty n/2 steps before the end
// on the same random numbers (0 at level 0). The short queue never exceeds
// the long one (Lindley's recursion is monotone in its start), and the two
// coincide from the first step at which the long one is empty.
//
// Random numbers: the last span = min(n, 2^window) steps use the stream
// PCG(seed, 0), the steps before them PCG(seed, 1). With exact false, runs
// longer than span are simulated only over those last span steps, every
// queue that started earlier entering the window empty (the oracle's
// shortcut, which makes an L-SGD draw at L = 18 cost 2^13 simulated steps
// instead of 2^18; it is still charged 2^18). The shortcut returns exactly
// the full run's values whenever the long queue empties at least once in
// the window, since from then on both are the same recursion on the same
// numbers. That fails only if the queue left by the earlier steps exceeds
// the largest descent of the window's random walk: about
// 2^13 (1/lambda - 1/mu) >= 2^13 * 0.11/mu time units at the box's highest
// load rho = 0.9, a few hundred, against stationary waits of mean at most
// about 40 there (hyperexponential law) with an exponential tail.
// TestEndCoupledWindowIsExact checks the equality on draws at rho = 0.9.
func endCoupled(law Law, mu, p float64, seed uint64, level, window int, exact bool) (long, short float64) {
	invMu, invLam := 1/mu, 1/lambda(p)
	n := 1 << level
	span := min(n, 1<<window)
	pre, half := n-span, n/2
	var w, x, ws, xs float64
	step := func(r *rand.Rand, g int) {
		u := r.ExpFloat64() * invLam
		d := law.Sample(r)*invMu - u
		if w += d; w > 0 {
			x += u
		} else {
			w, x = 0, 0
		}
		if level > 0 && g > half {
			if ws += d; ws > 0 {
				xs += u
			} else {
				ws, xs = 0, 0
			}
		}
	}
	if exact && pre > 0 {
		r := rand.New(rand.NewPCG(seed, 1))
		for g := 1; g <= pre; g++ {
			step(r, g)
		}
	}
	r := rand.New(rand.NewPCG(seed, 0))
	for g := pre + 1; g <= n; g++ {
		step(r, g)
	}
	return w + x, ws + xs
}

// paperWindows returns the two values of the paper construction on one
// trajectory of n = 2^level steps from an empty queue: long, the mean of
// W + X over steps n-m'+1..n with m' = min(m, n), and short, the mean over
// the min(m, n/2) steps ending at n/2 (0 at level 0).
//
// Random numbers: step g draws from the stream PCG(seed, 2 + (g-1)/B),
// B = 2^window, so that a stretch of the trajectory starting at a block
// boundary can be simulated without the steps before it. With exact false
// and m <= B/2, only the block ending at each of the two end steps is
// simulated (both are powers of two, so a block ends there), from an empty
// queue: the shortcut of endCoupled, exact whenever the queue empties in
// that block before the window starts (TestPaperWindowIsExact).
func paperWindows(law Law, mu, p float64, seed uint64, level, m, window int, exact bool) (long, short float64) {
	n := 1 << level
	block := 1 << window
	shortcut := !exact && 2*m <= block
	// meanEnding simulates up to step end and returns the mean of W + X
	// over the last min(m, end) steps.
	meanEnding := func(end int) float64 {
		first := 1
		if shortcut && end > block {
			first = end - block + 1
		}
		span := min(m, end)
		invMu, invLam := 1/mu, 1/lambda(p)
		var w, x, sum float64
		var r *rand.Rand
		for g := first; g <= end; g++ {
			if (g-1)%block == 0 || r == nil {
				r = rand.New(rand.NewPCG(seed, 2+uint64((g-1)/block)))
			}
			u := r.ExpFloat64() * invLam
			if w += law.Sample(r)*invMu - u; w > 0 {
				x += u
			} else {
				w, x = 0, 0
			}
			if g > end-span {
				sum += w + x
			}
		}
		return sum / float64(span)
	}
	long = meanEnding(n)
	if level > 0 {
		short = meanEnding(n / 2)
	}
	return long, short
}
