package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/experiment"
)

// rawTargetsLIBSVM is a regression file in LIBSVM rows whose targets are
// used as given and sit in the hundreds: y = N(300, 50^2) + sum_k
// beta_k (f_k - m_k), with features f_k uniform on [lo_k, hi_k] (the example
// scales them to [-1, 1]), m_k = (lo_k + hi_k)/2, and beta_k = 120 u_k / (hi_k - lo_k), u_k
// uniform on [-1, 1], so that each scaled feature's coefficient at the
// optimum is up to about 60 either way.
func rawTargetsLIBSVM(seed uint64, rows, features int) string {
	r := rand.New(rand.NewPCG(seed, 0x7a76))
	lo, hi, beta := make([]float64, features), make([]float64, features), make([]float64, features)
	for k := range features {
		lo[k] = 10 * r.NormFloat64()
		hi[k] = lo[k] + 0.5 + 20*r.Float64()
		beta[k] = 120 * (2*r.Float64() - 1) / (hi[k] - lo[k])
	}
	var b strings.Builder
	for range rows {
		f := make([]float64, features)
		y := 300 + 50*r.NormFloat64()
		for k := range f {
			f[k] = lo[k] + (hi[k]-lo[k])*r.Float64()
			y += beta[k] * (f[k] - (lo[k]+hi[k])/2)
		}
		fmt.Fprintf(&b, "%.4f", y)
		for k, v := range f {
			fmt.Fprintf(&b, " %d:%.6g", k+1, v)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// auto solves a problem whose targets are raw, in the hundreds (the
// gradient's variance at x0 = 0 about 1e6, every H^l zero there, and the
// bias of the low levels, invisible near x0, large enough near the optimum
// to hold a run at a gap of 0.3), to a 1% gap
// against the closed-form F* in at least 3 of 4 trials of 400,000
// samples, on each of six generated data sets. The gap is the harness's
// stays-below rule: at or below 1% at every logged point from some
// sample count on.
func TestAutoRawTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs auto 12 times (about a minute)")
	}
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		t.Run(fmt.Sprint("data seed ", seed), func(t *testing.T) {
			path := writeFile(t, "raw.txt", rawTargetsLIBSVM(seed, 300, 5))
			args := []string{"--dataset", "libsvm:" + path, "--method", "auto", "--gap", "0.01", "--trials", "4", "--budget", "400000", "--json"}
			var out strings.Builder
			if err := mainErr(args, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			var s experiment.Summary
			if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
				t.Fatal(err)
			}
			if s.F0-s.FStar < 10*s.FStar/100 {
				t.Fatalf("F(x0) = %g, F* = %g: the generated targets are not raw (the gap at x0 should be large)", s.F0, s.FStar)
			}
			m := s.Methods[0]
			gaps := []string{}
			for _, g := range m.FinalGaps {
				if g == nil {
					gaps = append(gaps, "inf")
					continue
				}
				gaps = append(gaps, fmt.Sprintf("%.3g", *g))
			}
			if got := m.StaysBelow[0].Reached; got < 3 {
				t.Errorf("auto reached a 1%% gap in %d of 4 trials (final gaps %s), want at least 3", got, strings.Join(gaps, ", "))
			}
		})
	}
}

// The first line says how the targets enter the objective; --scale-targets
// maps them to [-1, 1], names the data set apart and scores the run
// against the scaled problem's own closed-form F*; the MLP sets refuse it.
func TestScaleTargets(t *testing.T) {
	path := writeFile(t, "raw.txt", rawTargetsLIBSVM(5, 120, 3))
	_, raw := loadUser(t, "libsvm:"+path)
	scaled := &Data{X: raw.X, Y: append([]float64(nil), raw.Y...)}
	lo, hi := scaled.scaleLabels()
	if lo >= hi || lo < 100 {
		t.Fatalf("generated targets span [%g, %g]: not raw", lo, hi)
	}
	for _, y := range scaled.Y {
		if y < -1 || y > 1 {
			t.Fatalf("a scaled target %g is outside [-1, 1]", y)
		}
	}
	tests := []struct {
		name     string
		flags    []string
		data     *Data
		problem  string
		aboutHas string
	}{
		{"as given", nil, raw, "raw", targetsNote},
		{"scaled", []string{"--scale-targets"}, scaled, "raw-scaled-targets", fmt.Sprintf(scaledTargetsNote, lo, hi)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--dataset", "libsvm:" + path, "--methods", "L-SGD", "--trials", "1", "--budget", "2000", "--json"}, tc.flags...)
			var out, errOut strings.Builder
			if err := mainErr(args, &out, &errOut); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(errOut.String(), tc.aboutHas) {
				t.Errorf("the output does not say how the targets enter the objective (%q):\n%s", tc.aboutHas, errOut.String())
			}
			var s experiment.Summary
			if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
				t.Fatal(err)
			}
			want := fStarOf(t, tc.data)
			f0 := newExactLinear(tc.data).value(make([]float64, tc.data.Dim()+1))
			if s.Problem != tc.problem || !relClose(s.FStar, want, 1e-12) || !relClose(s.F0, f0, 1e-12) {
				t.Errorf("summary %q, F(x0) %.12g, F* %.12g; want %q, %.12g, %.12g", s.Problem, s.F0, s.FStar, tc.problem, f0, want)
			}
		})
	}
	for _, args := range [][]string{{"--dataset", "bike", "--scale-targets"}, {"--full", "--scale-targets"}} {
		err := mainErr(args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--scale-targets is for the linear data sets") {
			t.Errorf("%v: error %v, want one naming --scale-targets and the linear sets", args, err)
		}
	}
}
