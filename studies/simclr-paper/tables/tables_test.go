package main

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
	"github.com/simclr-go/simclr/runfolder"
)

// The committed tables of the studies' READMEs are what the committed run
// files give: a changed result file or a hand-edited table fails here.
func TestStudyTablesMatchResults(t *testing.T) {
	repo := testenv.ModuleRoot(t)
	for _, root := range Roots {
		want, tag, err := Tables(filepath.Join(repo, root.Dir))
		if err != nil {
			t.Fatal(err)
		}
		got, err := committedTables(filepath.Join(repo, root.Doc), tag)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s's %s tables differ from %s; rebuild them with\n  go run ./studies/simclr-paper/tables -write\ncommitted:\n%s\nfrom the files:\n%s", root.Doc, tag, root.Dir, got, want)
		}
	}
}

// Closed forms: {1, 2, 3} has mean 2, sd 1 and the 95% t-interval
// 2 ± t(0.975; 2)/sqrt(3) with t(0.975; 2) = 4.302653. Welch's test of
// {1, 2, 3} against {4, 6, 8} (sd 2): t = -4/sqrt(1/3 + 4/3) = -3.0984 on
// df = (5/3)^2 / ((1/3)^2/2 + (4/3)^2/2) = 2.941; its two-sided p lies between
// the closed forms for 3 and 2 degrees of freedom at that t:
// p(3) = 1 - 2 [1/2 + (t/(sqrt3 (1 + t^2/3)) + atan(t/sqrt3))/pi] = 0.0534 and
// p(2) = 1 - t/sqrt(2 + t^2) = 0.0903.
func TestStatsClosedForms(t *testing.T) {
	s := stats([]float64{1, 2, 3, math.NaN()})
	half := 4.302653 / math.Sqrt(3)
	if s.N != 3 || s.Mean != 2 || math.Abs(s.SD-1) > 1e-12 || math.Abs(s.Lo-(2-half)) > 1e-5 || math.Abs(s.Hi-(2+half)) > 1e-5 {
		t.Errorf("stats = %+v, want n 3, mean 2, sd 1, interval 2 ± %.5f", s, half)
	}
	diff, tt, df, p := welch(s, stats([]float64{4, 6, 8}))
	if diff != -4 {
		t.Errorf("difference %g, want -4", diff)
	}
	wantT := -4 / math.Sqrt(1.0/3+4.0/3)
	wantDF := (5.0 / 3) * (5.0 / 3) / ((1.0/9)/2 + (16.0/9)/2)
	if math.Abs(tt-wantT) > 1e-9 || math.Abs(df-wantDF) > 1e-9 {
		t.Errorf("t = %g df = %g, want %g and %g", tt, df, wantT, wantDF)
	}
	at := math.Abs(tt)
	p3 := 1 - 2*(0.5+(at/(math.Sqrt(3)*(1+at*at/3))+math.Atan(at/math.Sqrt(3)))/math.Pi)
	p2 := 1 - at/math.Sqrt(2+at*at)
	if !(p > p3 && p < p2) {
		t.Errorf("p = %g for t = %.3f on %.2f df, want between p(3 df) = %.4f and p(2 df) = %.4f", p, tt, df, p3, p2)
	}
	if _, _, _, p := welch(stats([]float64{1}), s); !math.IsNaN(p) {
		t.Errorf("p = %g with one seed, want none (NaN)", p)
	}
}

// The equal-wall-time reading takes the last evaluation at or before the
// iteration count, never a later one.
func TestKNNAtOrBefore(t *testing.T) {
	r := &Run{Evals: []runfolder.Eval{{Iteration: 44, KNNTop1: 30}, {Iteration: 88, KNNTop1: 35}, {Iteration: 132, KNNTop1: 38}}}
	for _, c := range []struct {
		n      float64
		knn    float64
		atIter int
	}{{43.9, math.NaN(), 0}, {44, 30, 44}, {131.9, 35, 88}, {1000, 38, 132}} {
		knn, at := knnAtOrBefore(r, c.n)
		if at != c.atIter || !(knn == c.knn || math.IsNaN(knn) && math.IsNaN(c.knn)) {
			t.Errorf("knnAtOrBefore(%g) = %g at %d, want %g at %d", c.n, knn, at, c.knn, c.atIter)
		}
	}
}
