package main

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Steps is the paper's step-size grid and Levels its grid of top levels L.
var (
	Steps  = []float64{1e-1, 1e-2, 1e-3, 5e-4, 1e-4}
	Levels = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	// VRFresh is the VR methods' grid of D1, the draws averaged into the
	// fresh estimate every Q_E = 10 iterations.
	VRFresh = []int{1, 10}
)

// tuningSeeds are the seeds of the grid search; reported trials use seeds
// 1..trials, never these.
var tuningSeeds = []uint64{1001, 1002, 1003}

// grid is every setting of a method: L x step (x D1 for VR), without L
// for RU and RR.
func grid(m methodSpec) []setting {
	var out []setting
	levels := Levels
	if unbounded(m.Estimator) {
		levels = []int{-1}
	}
	fresh := []int{0}
	if strings.HasPrefix(m.Estimator, "vr-") {
		fresh = VRFresh
	}
	for _, l := range levels {
		for _, st := range Steps {
			for _, d1 := range fresh {
				out = append(out, setting{Method: m.Label, Estimator: m.Estimator, L: l, Step: st, D1: d1})
			}
		}
	}
	return out
}

// job is one run of a setting with a seed.
type job struct {
	s    setting
	seed uint64
}

// runAll runs the jobs on every CPU and returns their traces in order.
func (t *task) runAll(jobs []job) ([]trace, error) {
	out := make([]trace, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = t.run(jobs[i].s, jobs[i].seed)
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// runScored runs the jobs and, for an objective too costly to score every
// iterate, lowers F* to the smallest value reached and sets the first
// passages from the curves (docs/definitions.md, section 9).
func (t *task) runScored(jobs []job) ([]trace, error) {
	trs, err := t.runAll(jobs)
	if err != nil {
		return nil, err
	}
	if !t.obj.cheap() {
		t.fStar = min(t.fStar, lowest(trs))
		t.fillFirst(trs)
	}
	return trs, nil
}

// score is the tuning criterion of a run: the mean gap over the grid points
// in the second half of the budget (+Inf if any is infinite), so that a
// setting that reaches a small gap and stays there wins.
func (t *task) score(tr trace) float64 {
	sum, n := 0.0, 0
	for k, g := range t.grid {
		if g >= t.budget/2 {
			sum += t.gap(tr.Curve[k])
			n++
		}
	}
	return sum / float64(n)
}

// median of xs (+Inf counts as large); NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	if math.IsInf(s[n/2], 1) {
		return math.Inf(1)
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// firstPassage is the median over traces of the samples at which gap g was
// first reached, as float64 with never = +Inf.
func firstPassage(trs []trace, g int) float64 { return median(passages(trs, g)) }

// tuned is what the grid search of one method chose.
type tuned struct {
	Best   setting   // the smallest median score
	PerGap []setting // the smallest median first passage to each gap (ties: score)
	Score  float64

	perGapScore [][2]float64 // (median first passage, score) of PerGap
}

// tune runs every setting of every method on the tuning seeds and picks,
// per method, the best setting overall and the best for each gap.
func (t *task) tune(methods []methodSpec) (map[string]tuned, error) {
	var jobs []job
	for _, m := range methods {
		for _, s := range grid(m) {
			for _, seed := range tuningSeeds {
				jobs = append(jobs, job{s, seed})
			}
		}
	}
	trs, err := t.runScored(jobs)
	if err != nil {
		return nil, err
	}
	out := map[string]tuned{}
	ns := len(tuningSeeds)
	for i := 0; i < len(jobs); i += ns {
		s := jobs[i].s
		runs := trs[i : i+ns]
		scores := make([]float64, ns)
		for j, tr := range runs {
			scores[j] = t.score(tr)
		}
		sc := median(scores)
		cur, ok := out[s.Method]
		if !ok {
			cur = tuned{Best: s, Score: sc, PerGap: make([]setting, len(gaps))}
			for g := range gaps {
				cur.PerGap[g] = s
			}
			cur.perGapScore = make([][2]float64, len(gaps))
			for g := range gaps {
				cur.perGapScore[g] = [2]float64{firstPassage(runs, g), sc}
			}
			out[s.Method] = cur
			continue
		}
		if sc < cur.Score {
			cur.Best, cur.Score = s, sc
		}
		for g := range gaps {
			fp := firstPassage(runs, g)
			if b := cur.perGapScore[g]; fp < b[0] || (fp == b[0] && sc < b[1]) {
				cur.PerGap[g], cur.perGapScore[g] = s, [2]float64{fp, sc}
			}
		}
		out[s.Method] = cur
	}
	return out, nil
}

// lowest is the smallest objective value on any curve.
func lowest(trs []trace) float64 {
	low := math.Inf(1)
	for _, tr := range trs {
		for _, f := range tr.Curve {
			low = min(low, f)
		}
	}
	return low
}
