package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/internal/testsupport/mdtables"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/auto"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// The DRO tables of studies/dro/README.md must be exactly what --markdown prints
// from the committed results files they name.
func TestBenchmarksTablesMatchResults(t *testing.T) {
	mdtables.Check(t, filepath.Join("..", ".."), "dro", func(file string, w io.Writer) error {
		sums, err := experiment.ReadSummaries(file)
		if err != nil {
			return err
		}
		experiment.WriteMarkdown(w, sums)
		return nil
	})
}

// TestHarnessRerunMatchesEarlierResults: the reported trials of the
// settings the earlier driver chose (studies/dro/results/paper-grid), rerun on the
// experiment harness with the same seeds, give the earlier figures exactly:
// every trial's first touch of every gap, the medians, the intervals, the
// final gaps and F*.
func TestHarnessRerunMatchesEarlierResults(t *testing.T) {
	dir := filepath.Join("..", "..", "studies", "dro", "results", "paper-grid")
	for _, pair := range [][2]string{{"summary.jsonl", "harness.jsonl"}, {"housing-2m.jsonl", "harness-housing-2m.jsonl"}} {
		earlier := readLegacy(t, filepath.Join(dir, pair[0]))
		sums, err := experiment.ReadSummaries(filepath.Join(dir, pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		if len(sums) != len(earlier) {
			t.Fatalf("%s has %d data sets, %s %d", pair[1], len(sums), pair[0], len(earlier))
		}
		for _, s := range sums {
			e, ok := earlier[s.Problem]
			if !ok {
				t.Fatalf("%s: no data set %s in %s", pair[1], s.Problem, pair[0])
			}
			if e.FStar != s.FStar {
				t.Errorf("%s: F* %v, earlier %v", s.Problem, s.FStar, e.FStar)
			}
			for _, m := range s.Methods {
				em := e.Methods[m.Name]
				if !sameFloats(em.FinalGaps, m.FinalGaps) {
					t.Errorf("%s %s: final gaps differ", s.Problem, m.Name)
				}
				for i, g := range s.Targets {
					if !samePtr(em.SamplesToGap[gapKey(g)], m.FirstTouch[i].Median) {
						t.Errorf("%s %s gap %g: first touch %v, earlier %v", s.Problem, m.Name, g, m.FirstTouch[i].Median, em.SamplesToGap[gapKey(g)])
					}
				}
			}
			for i, ts := range s.PerTarget {
				eg := e.PerGap[gapKey(ts.Target)]
				for _, r := range ts.FirstTouch.Methods {
					er := eg.Methods[r.Name]
					if !sameFloats(er.Trials, r.Passage.Trials) || !samePtr(er.Samples, r.Passage.Median) ||
						!samePtr(er.CI[0], r.Passage.CI[0]) || !samePtr(er.CI[1], r.Passage.CI[1]) {
						t.Errorf("%s gap %g %s: the trials' first touches differ from the earlier ones", s.Problem, s.Targets[i], r.Name)
					}
				}
				if !samePtr(eg.Ratio, ts.FirstTouch.Ratio) {
					t.Errorf("%s gap %g: ratio %v, earlier %v", s.Problem, s.Targets[i], ts.FirstTouch.Ratio, eg.Ratio)
				}
			}
		}
	}
}

// earlierSummary is what the test reads of the earlier driver's files.
type earlierSummary struct {
	Dataset string  `json:"dataset"`
	FStar   float64 `json:"F_star"`
	Methods map[string]struct {
		SamplesToGap map[string]*float64 `json:"samples_to_gap"`
		FinalGaps    []*float64          `json:"final_gaps"`
	} `json:"methods"`
	PerGap map[string]struct {
		Methods map[string]struct {
			Samples *float64    `json:"samples"`
			CI      [2]*float64 `json:"median_ci"`
			Trials  []*float64  `json:"trials"`
		} `json:"methods"`
		Ratio *float64 `json:"lsgd_over_best_mlmc"`
	} `json:"per_gap"`
}

func readLegacy(t *testing.T, path string) map[string]earlierSummary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]earlierSummary{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s earlierSummary
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[s.Dataset] = s
	}
	return out
}

func gapKey(g float64) string { return strconv.FormatFloat(g, 'g', -1, 64) }

func samePtr(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func sameFloats(a, b []*float64) bool {
	return slices.EqualFunc(a, b, samePtr)
}

// BenchmarkAutoOwnShare runs auto on a linear DRO problem for a 0.1% gap,
// then replays what it drew samples for without its decisions: each
// estimator run (same method, step, start, oracle seed and iterations, the
// driver's averaging of the iterates, no recorders) and each pilot's
// queries (drawn and evaluated as they were). own-share is the share of
// auto's time beyond the replay, aimed at below 0.05: auto's own
// computing, the pilots' statistics and fits, the plans, the step scores,
// the objective at its checkpoints for the gap estimates, and the watch on
// the top level's draws. Each run and its replay are a pair, timed in
// turn on the CPU clock of the thread that runs both (other programs on
// the machine move it less than the wall clock) and on the process's:
// own-share is the median over the pairs on the thread's clock, which
// one pair disturbed by the machine moves little, own-share-sum the
// share of the summed thread times, and own-share-process the median on
// the process's clock, which also counts the collector's background work
// on other threads (auto makes more garbage than the replay, so the
// thread's clock reads its share a little low, the process's, which
// other work on the machine moves more, a little high). own-share-hi and
// own-share-process-hi are the upper ends of the medians' 95% intervals
// over the pairs (order statistics: no assumption on how the machine's
// noise is spread), so that a run of many pairs shows whether the median
// share is below 0.05 rather than near it. Two sizes: the
// study's data sets' (400 rows, 8 features) and a smaller problem (50
// rows, 2 features), where a query is so cheap that auto's fixed work
// per measurement weighs most.
func BenchmarkAutoOwnShare(b *testing.B) {
	for _, size := range []struct{ rows, feats int }{{50, 2}, {400, 8}} {
		b.Run(fmt.Sprintf("rows=%d,features=%d", size.rows, size.feats), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tk := sizedTask(b, size.rows, size.feats, 400_000)
			if size.rows == 50 {
				tk = toyTask(b, 400_000)
			}
			p := tk.problem(oracleMaxLevel)
			var autoTime, replayTime time.Duration
			shares := make([]float64, 0, b.N)
			procShares := make([]float64, 0, b.N)
			run := func(seed uint64) (*auto.Result, cpuClocks) {
				runtime.GC()
				start := readClocks(b)
				res, err := auto.Run(&p.Problem, auto.Settings{Target: auto.Target{Gap: 1e-3, Budget: 400_000}, Seed: seed})
				if err != nil {
					b.Fatal(err)
				}
				return res, readClocks(b).sub(start)
			}
			for i := range b.N {
				// auto is deterministic given its seed: a first run finds
				// the segments, then auto and the replay are timed in
				// turn, in alternating order, so that neither gains from
				// running second on warm caches, each after a collection
				// of the garbage before it.
				res, _ := run(uint64(i + 1))
				var a cpuClocks
				if i%2 == 1 {
					_, a = run(uint64(i + 1))
				}
				d, err := replay(b, &p.Problem, res.Segments)
				if err != nil {
					b.Fatal(err)
				}
				if i%2 == 0 {
					_, a = run(uint64(i + 1))
				}
				autoTime += a.thread
				replayTime += d.thread
				shares = append(shares, 1-float64(d.thread)/float64(a.thread))
				procShares = append(procShares, 1-float64(d.process)/float64(a.process))
			}
			b.ReportMetric(median(shares), "own-share")
			b.ReportMetric(medianUpper95(shares), "own-share-hi")
			b.ReportMetric(1-float64(replayTime)/float64(autoTime), "own-share-sum")
			b.ReportMetric(median(procShares), "own-share-process")
			b.ReportMetric(medianUpper95(procShares), "own-share-process-hi")
		})
	}
}

// replay runs segs without auto: the estimator runs as they ran, the
// pilots' queries drawn and evaluated as they were, without statistics.
func replay(tb testing.TB, p *sgd.Problem, segs []auto.Segment) (cpuClocks, error) {
	total, _, err := replayCounting(tb, p, segs)
	return total, err
}

// replayCounting is replay that also returns the samples the replay drew
// (a pilot that holds its samples but not its queries counted as held).
func replayCounting(tb testing.TB, p *sgd.Problem, segs []auto.Segment) (cpuClocks, int64, error) {
	var total cpuClocks
	var samples int64
	runtime.GC()
	for _, sg := range segs {
		start := readClocks(tb)
		inst, err := p.NewOracle(sg.OracleSeed)
		if err != nil {
			return total, samples, err
		}
		if sg.Pilot != nil {
			if inst.At != nil {
				inst.At(sg.Start, sg.Start)
			}
			g := make([]float64, len(sg.Start))
			if len(sg.Pilot.Queries) == 0 {
				samples += sg.Pilot.Samples
			}
			for _, q := range sg.Pilot.Queries {
				for range q.Draws {
					s, c, err := inst.Oracle.Draw(q.Level)
					samples += c
					if err != nil {
						return total, samples, err
					}
					if !q.DrawOnly {
						if err := inst.Oracle.Eval(s, mlmc.Current, q.Diff, 1, g); err != nil {
							return total, samples, err
						}
					}
					inst.Oracle.Release(s)
				}
			}
			total = total.add(readClocks(tb).sub(start))
			continue
		}
		if sg.Iterations == 0 {
			// A chunk that took no step: the estimate it drew and
			// dropped, if any, is not replayed (the share comes out a
			// little high).
			total = total.add(readClocks(tb).sub(start))
			continue
		}
		set := sgd.Settings{X: slices.Clone(sg.Start), Budget: sg.Until, Base: sg.Base, Iterations: sg.Iterations}
		if !sg.Probe {
			set.Average = &sgd.Average{X: slices.Clone(sg.Start)}
		}
		res, err := sgd.Minimize(p, inst, sg.Method, sgd.Constant(sg.Step), set)
		if err != nil {
			return total, samples, err
		}
		samples += res.Drawn - sg.Base
		if res.Iterations != sg.Iterations {
			return total, samples, fmt.Errorf("replay ran %d iterations, the run %d", res.Iterations, sg.Iterations)
		}
		total = total.add(readClocks(tb).sub(start))
	}
	return total, samples, nil
}

// cpuClocks are a thread's and its process's CPU time.
type cpuClocks struct{ thread, process time.Duration }

func (c cpuClocks) sub(d cpuClocks) cpuClocks {
	return cpuClocks{c.thread - d.thread, c.process - d.process}
}
func (c cpuClocks) add(d cpuClocks) cpuClocks {
	return cpuClocks{c.thread + d.thread, c.process + d.process}
}

// medianUpper95 is the upper end of the distribution-free 95% interval
// for the median of the population xs were drawn from: the order
// statistic x_(k) with k the least rank such that P(Binomial(n, 1/2) < k)
// >= 0.975 (the interval's other end is its mirror); +Inf for fewer than
// six values, where no order statistic reaches that confidence. The
// values are taken as independent draws. xs is sorted in place.
func medianUpper95(xs []float64) float64 {
	n := len(xs)
	slices.Sort(xs)
	// P(B < k) summed term by term, P(B = j) = C(n, j) / 2^n in logs.
	cdf := 0.0
	lg, _ := math.Lgamma(float64(n + 1))
	for k := range n {
		lj, _ := math.Lgamma(float64(k + 1))
		lr, _ := math.Lgamma(float64(n - k + 1))
		cdf += math.Exp(lg - lj - lr - float64(n)*math.Ln2)
		if cdf >= 0.975 {
			// P(B <= k) >= 0.975: x_(k+1), index k.
			return xs[k]
		}
	}
	return math.Inf(1)
}

// median is the middle of xs (the mean of the two middle ones for an even
// count); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	return (xs[(len(xs)-1)/2] + xs[len(xs)/2]) / 2
}

// TestSegmentsReplay: auto's Segments are every estimator run and pilot of
// the run: replayed in order on the problem, each estimator run takes the
// iterations the run took (replay fails otherwise), and, for a run that
// ended on its target, the pilots' and runs' samples add up to the run's.
func TestSegmentsReplay(t *testing.T) {
	tk := toyTask(t, 100_000)
	p := tk.problem(oracleMaxLevel)
	res, err := auto.Run(&p.Problem, auto.Settings{Target: auto.Target{Gap: 1e-2, Budget: 100_000}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, samples, err := replayCounting(t, &p.Problem, res.Segments)
	if err != nil {
		t.Fatal(err)
	}
	// The replay does not draw the estimate a run draws past its budget
	// and drops, nor one a chunk that took no step dropped: the samples
	// add up for a run that ended on its target without such a chunk.
	zeroStep := slices.ContainsFunc(res.Segments, func(sg auto.Segment) bool { return sg.Pilot == nil && sg.Iterations == 0 })
	if !res.Reached || zeroStep {
		t.Fatalf("the run (reached %v, a chunk without a step %v) is not one whose samples the replay can add up: choose another seed", res.Reached, zeroStep)
	}
	if samples != res.Samples {
		t.Errorf("the segments drew %d samples, the run %d", samples, res.Samples)
	}
	pilots, probes := 0, 0
	for _, sg := range res.Segments {
		switch {
		case sg.Pilot != nil:
			pilots++
		case sg.Probe:
			probes++
		}
	}
	if pilots == 0 || probes == 0 || len(res.Segments) == pilots+probes {
		t.Errorf("%d segments, %d pilots, %d step probes: want all three kinds", len(res.Segments), pilots, probes)
	}
}

// TestMedianUpper95: the upper ends of the distribution-free 95%
// intervals for a median are the tabled ranks: the 9th of 10 values
// (coverage 97.9%), the 61st of 100; fewer than six values reach no 95%.
func TestMedianUpper95(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want float64
	}{{10, 9}, {100, 61}, {6, 6}, {5, math.Inf(1)}} {
		xs := make([]float64, tc.n)
		for i := range xs {
			xs[len(xs)-1-i] = float64(i + 1) // reversed: the function sorts
		}
		if got := medianUpper95(xs); got != tc.want {
			t.Errorf("n = %d: %g, want %g", tc.n, got, tc.want)
		}
	}
}
