package mlmc

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// levelCap bounds the levels drawn from an unbounded law: a level-62 query
// would cost 2^62 samples, and with b + c = 2 the law reaches it with
// probability 2^-61, so the cap changes nothing measurable but keeps costs in
// an int64.
const levelCap = 62

// LevelDist is a law of the level of a randomized MLMC estimator on
// Min..Max (Max is Unbounded for the geometric law).
type LevelDist struct {
	Min, Max int
	// ratio is q_(l+1)/q_l = 2^(-(b+c)/2).
	ratio float64
	// probs[l-Min] and tails[l-Min] = P(T >= l) for a truncated law.
	probs, tails []float64
}

// Truncated is the law of RT-MLMC on min..max: q_l proportional to
// 2^(-(b+c) l/2).
func Truncated(min, max int, b, c float64) LevelDist {
	if min < 0 || max < min {
		panic(fmt.Sprintf("mlmc: Truncated: levels %d..%d are not a range of non-negative levels", min, max))
	}
	ratio := math.Exp2(-(b + c) / 2)
	w := make([]float64, max-min+1)
	for i := range w {
		w[i] = math.Pow(ratio, float64(i))
	}
	d := proportional(min, w)
	d.ratio = ratio
	return d
}

// proportional is the law on min..min+len(w)-1 with q_l proportional to
// w[l-min] (positive, finite): the one normalisation of Truncated and
// Explicit. It keeps w as its probabilities.
func proportional(min int, w []float64) LevelDist {
	d := LevelDist{Min: min, Max: min + len(w) - 1, probs: w, tails: make([]float64, len(w))}
	sum := 0.0
	for _, p := range w {
		sum += p
	}
	tail := 0.0
	for i := len(w) - 1; i >= 0; i-- {
		d.probs[i] /= sum
		tail += d.probs[i]
		d.tails[i] = tail
	}
	return d
}

// Geometric is the law of RU-MLMC and RR-MLMC on min..infinity:
// q_l = 2^(-(b+c)(l-min)/2) (1 - 2^(-(b+c)/2)), so P(T >= l) = 2^(-(b+c)(l-min)/2).
func Geometric(min int, b, c float64) LevelDist {
	if min < 0 {
		panic(fmt.Sprintf("mlmc: Geometric: minimum level %d is negative", min))
	}
	return LevelDist{Min: min, Max: Unbounded, ratio: math.Exp2(-(b + c) / 2)}
}

// Prob is P(T = l).
func (d LevelDist) Prob(l int) float64 {
	if l < d.Min || (d.Max != Unbounded && l > d.Max) {
		return 0
	}
	if d.probs != nil {
		return d.probs[l-d.Min]
	}
	return math.Pow(d.ratio, float64(l-d.Min)) * (1 - d.ratio)
}

// Tail is P(T >= l).
func (d LevelDist) Tail(l int) float64 {
	if l <= d.Min {
		return 1
	}
	if d.Max != Unbounded && l > d.Max {
		return 0
	}
	if d.tails != nil {
		return d.tails[l-d.Min]
	}
	return math.Pow(d.ratio, float64(l-d.Min))
}

// Draw draws a level. The geometric law is drawn by inversion: with U
// uniform on (0,1], T - Min = floor(log U / log ratio) has
// P(T - Min >= k) = ratio^k.
func (d LevelDist) Draw(r *rand.Rand) int {
	u := 1 - r.Float64() // (0, 1]
	if d.probs == nil {
		k := math.Floor(math.Log(u) / math.Log(d.ratio))
		if k > levelCap {
			return levelCap + 1 // beyond every servable level: the caller redraws
		}
		return d.Min + int(k)
	}
	// Inversion on the tails: the largest l with P(T >= l) >= u.
	for i := len(d.tails) - 1; i > 0; i-- {
		if d.tails[i] >= u {
			return d.Min + i
		}
	}
	return d.Min
}

// truncate is the law conditioned on T <= max. For the geometric law that is
// Truncated(Min, max), since both have q_l proportional to ratio^l.
func (d LevelDist) truncate(max int) LevelDist {
	if d.Max != Unbounded && d.Max <= max {
		return d
	}
	// b + c enters the law only through ratio = 2^(-(b+c)/2).
	return Truncated(d.Min, max, -2*math.Log2(d.ratio), 0)
}

// Explicit is a law on min..min+len(probs)-1 with q_l proportional to
// probs[l-min], for allocations not of the form 2^(-(b+c) l/2): the variance-
// optimal q_l of measured levels (docs/definitions.md, section 2 "The
// estimators"). Every entry must be positive and finite.
func Explicit(min int, probs []float64) (LevelDist, error) {
	if min < 0 || len(probs) == 0 {
		return LevelDist{}, fmt.Errorf("explicit level law: %d probabilities from level %d: need at least one, from a non-negative level", len(probs), min)
	}
	for i, p := range probs {
		if !(p > 0) || math.IsInf(p, 0) {
			return LevelDist{}, fmt.Errorf("explicit level law: q at level %d is %g; every level needs a positive, finite probability", min+i, p)
		}
	}
	return proportional(min, append([]float64(nil), probs...)), nil
}
