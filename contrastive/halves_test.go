package contrastive

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// With separate halves, H^l is grad L_B - (grad L_B1 + grad L_B2)/2 with
// each loss from its own training-mode pass over its own views (its own
// batch statistics): checked against three direct passes through the
// network. The running statistics move as after the one pass over B, and
// not at all at x_{t-1}; three passes are counted.
func TestSeparateHalvesAreThreeIndependentPasses(t *testing.T) {
	for _, level := range []int{2, 3} {
		t.Run(fmt.Sprintf("level%d", level), func(t *testing.T) {
			tr := newTestOracle(t)
			b, params, o, m := tr.b, tr.model.Params(), tr.oracle, tr.model
			o.SetHalves(HalvesSeparate)
			b.Copy(tr.prev, params.Flat())
			s, _, err := o.Draw(level)
			if err != nil {
				t.Fatal(err)
			}
			views := slices.Clone(s.(*draw).views)
			n := 1 << level
			proj := tr.cfg.ProjDim
			state0 := host(b, params.State())
			// grad L_S of the images [lo, lo+k) by a pass of their own, and
			// the running statistics a pass over B leaves.
			grad := func(lo, k int, update bool) []float32 {
				x := b.Alloc(2 * k * m.InputLen())
				defer b.Free(x)
				b.Upload(x, views[2*lo*m.InputLen():2*(lo+k)*m.InputLen()])
				dz := b.Alloc(2 * k * proj)
				defer b.Free(dz)
				z := m.Forward(x, 2*k, true, update)
				b.NTXent(k, proj, float32(tr.cfg.Temperature), false, z, dz)
				m.Backward(dz)
				return host(b, params.Grad())
			}
			gB := grad(0, n, true)
			stateAfterB := host(b, params.State())
			b.Upload(params.State(), state0)
			g1, g2 := grad(0, n/2, false), grad(n/2, n/2, false)
			want := make([]float32, len(gB))
			for i := range want {
				want[i] = gB[i] - (g1[i]+g2[i])/2
			}
			out := b.Alloc(params.Len())
			for _, at := range []mlmc.Point{mlmc.Previous, mlmc.Current} {
				b.Zero(out)
				before := o.Passes()
				if err := o.Eval(s, at, true, 1, out); err != nil {
					t.Fatal(err)
				}
				if got := o.Passes() - before; got != 3 {
					t.Errorf("at %s: %d passes counted, want 3", at, got)
				}
				got := host(b, out)
				for i := range got {
					if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("at %s: H^l[%d] = %g, want %g", at, i, got[i], want[i])
					}
				}
				wantState := state0
				if at == mlmc.Current {
					wantState = stateAfterB
				}
				if !slices.Equal(host(b, params.State()), wantState) {
					t.Errorf("at %s: running statistics are not those of one pass over B (or untouched at x_{t-1})", at)
				}
			}
			o.Release(s)
		})
	}
}

// projections of many estimates on random directions: the sum and sum of
// squares of u_j . v over the estimates.
type projections struct {
	dirs      [][]float32
	sum, sum2 []float64
	n         int
}

func newProjections(dim, k int, seed uint64, extra ...[]float32) *projections {
	r := rand.New(rand.NewPCG(seed, 1))
	p := &projections{sum: make([]float64, k+len(extra)), sum2: make([]float64, k+len(extra)), dirs: extra}
	for range k {
		u := make([]float32, dim)
		for i := range u {
			u[i] = float32(r.NormFloat64())
		}
		p.dirs = append(p.dirs, u)
	}
	return p
}

func (p *projections) add(v []float32) {
	for j, u := range p.dirs {
		s := 0.0
		for i, x := range v {
			s += float64(u[i]) * float64(x)
		}
		p.sum[j] += s
		p.sum2[j] += s * s
	}
	p.n++
}

// zScores compares the means of two sets of projections: (mean_a -
// mean_b) / se, per direction.
func zScores(a, b *projections) []float64 {
	z := make([]float64, len(a.sum))
	for j := range z {
		ma, mb := a.sum[j]/float64(a.n), b.sum[j]/float64(b.n)
		va := (a.sum2[j] - float64(a.n)*ma*ma) / float64(a.n-1)
		vb := (b.sum2[j] - float64(b.n)*mb*mb) / float64(b.n-1)
		z[j] = (ma - mb) / math.Sqrt(va/float64(a.n)+vb/float64(b.n))
	}
	return z
}

// unweighted is the oracle with RT-MLMC's weight 1/q_l undone (alpha times
// q_l), a deliberately wrong construction: its estimate H^i has mean
// sum_l q_l E H^l, not E h^L.
type unweighted struct {
	*Oracle
	law mlmc.LevelDist
}

func (u unweighted) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out tensor.Buffer) error {
	return u.Oracle.Eval(s, at, diff, alpha*u.law.Prob(s.(*draw).level), out)
}

// The unbiasedness test the estimators deserve on the real oracle: with
// separate halves (batch norm, exact telescoping) the mean of many RT-MLMC
// estimates equals the mean of h^L. The data set holds exactly 2^L = 8
// images with flips only, so that h^L varies only by its flips and its mean
// is sharp; levels 1..3 on a width-1/16 network of 8x8 inputs. The means
// are compared along three directions, the normalised mean of 100 pilot
// draws of h^L (independent of the test's draws: where the signal is) and
// two random ones, by z-tests at 99.9% together (Bonferroni: |z| < 3.59
// each). The same test on the unweighted construction (H^i instead of
// H^i/q_i, mean sum_l q_l E H^l) must fail, so it can. The shared
// construction (one forward, biased with batch norm) is reported, not
// asserted (measured: z = -6.8 along the pilot direction, biased; separate
// -1.9, unweighted -4.7).
func TestRTMLMCIsUnbiasedWithSeparateHalves(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test over 4,000 queries")
	}
	const draws, pilotDraws, random = 1000, 100, 2
	splits := syntheticSplits(8, 8, 8, 4)
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{Width: 0.0625, ProjDim: 16, InputSize: 8}, 1)
	stream, err := loader.Open(splits.Train, splits.Mean, splits.Std, augment.Config{FlipProb: 0.5}, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	o := NewOracle(b, m, stream, 0.5, 3, nil)
	defer o.Free()
	dim := m.Params().Len()
	ops := NewBufferOps(b, dim)
	cfg := mlmc.Config{MinLevel: 1, MaxLevel: 3, Seed: 5}
	crit := mlmc.NormalCritical(0.999, 1+random)
	out := b.Alloc(dim)
	defer b.Free(out)

	run := func(name string, o mlmc.Oracle[tensor.Buffer], k int, each func([]float32)) {
		kind, err := mlmc.ParseKind(name)
		if err != nil {
			t.Fatal(err)
		}
		e, err := mlmc.New[tensor.Buffer](kind, cfg, ops, o)
		if err != nil {
			t.Fatal(err)
		}
		for it := range k {
			if _, err := e.Estimate(it, out); err != nil {
				t.Fatal(err)
			}
			each(host(b, out))
		}
	}
	o.SetHalves(HalvesSeparate)
	pilot := make([]float32, dim)
	run("lsgd", o, pilotDraws, func(v []float32) {
		for i, x := range v {
			pilot[i] += x
		}
	})
	norm := 0.0
	for _, x := range pilot {
		norm += float64(x) * float64(x)
	}
	for i := range pilot {
		pilot[i] /= float32(math.Sqrt(norm))
	}
	collect := func(name string, o mlmc.Oracle[tensor.Buffer]) *projections {
		p := newProjections(dim, random, 11, pilot)
		run(name, o, draws, p.add)
		return p
	}
	top := collect("lsgd", o)
	rt := collect("rtmlmc", o)
	wrong := collect("rtmlmc", unweighted{o, mlmc.Truncated(cfg.MinLevel, cfg.MaxLevel, 1, 1)})
	o.SetHalves(HalvesShared)
	shared := collect("rtmlmc", o)

	maxAbs := func(z []float64) float64 {
		m := 0.0
		for _, v := range z {
			m = math.Max(m, math.Abs(v))
		}
		return m
	}
	zRT, zWrong, zShared := zScores(rt, top), zScores(wrong, top), zScores(shared, top)
	t.Logf("z against mean h^L (pilot direction, then random): separate %.2f, unweighted %.2f, shared %.2f (critical %.2f)",
		zRT, zWrong, zShared, crit)
	if maxAbs(zRT) >= crit {
		t.Errorf("RT-MLMC with separate halves: z = %.2f, some |z| >= %.2f: its mean is not E h^L", zRT, crit)
	}
	if maxAbs(zWrong) < crit {
		t.Errorf("unweighted RT-MLMC passes (z = %.2f, critical %.2f): the test cannot tell a biased construction", zWrong, crit)
	}
}

// TestOracleEvalAtPreviousReplaysTheDraw checks the SimCLR oracle against a
// direct forward, loss and backward of the network: Eval adds alpha*g into
// out; at x_{t-1} it uses the draw's own views, returns the gradient a
// network holding x_{t-1} gives on them, leaves the parameters at x_t and
// the batch-norm running statistics untouched; at x_t it updates them.
func TestOracleEvalAtPreviousReplaysTheDraw(t *testing.T) {
	for _, tc := range []struct {
		level int
		diff  bool
	}{{1, false}, {2, true}, {3, false}} {
		t.Run(fmt.Sprintf("level%d_diff%v", tc.level, tc.diff), func(t *testing.T) {
			tr := newTestOracle(t)
			b, params, o := tr.b, tr.model.Params(), tr.oracle
			rng := rand.New(rand.NewPCG(3, uint64(tc.level)))
			xt := host(b, params.Flat())
			xPrev := slices.Clone(xt)
			for i := range xPrev {
				xPrev[i] += 0.05 * float32(rng.NormFloat64())
			}
			b.Upload(tr.prev, xPrev)

			s, cost, err := o.Draw(tc.level)
			if err != nil {
				t.Fatal(err)
			}
			if cost != 1<<tc.level {
				t.Fatalf("cost %d, want %d images", cost, 1<<tc.level)
			}
			views := slices.Clone(s.(*draw).views)

			// The reference: the same views through the network at p.
			gradAt := func(p []float32) []float32 {
				saveP, saveS := host(b, params.Flat()), host(b, params.State())
				b.Upload(params.Flat(), p)
				n := 1 << tc.level
				x := b.Alloc(2 * n * tr.model.InputLen())
				b.Upload(x, views)
				dz := b.Alloc(2 * n * tr.cfg.ProjDim)
				z := tr.model.Forward(x, 2*n, true, false)
				b.NTXent(n, tr.cfg.ProjDim, float32(tr.cfg.Temperature), tc.diff, z, dz)
				tr.model.Backward(dz)
				g := host(b, params.Grad())
				b.Upload(params.Flat(), saveP)
				b.Upload(params.State(), saveS)
				return g
			}
			wantCur, wantPrev := gradAt(xt), gradAt(xPrev)

			base := make([]float32, params.Len())
			for i := range base {
				base[i] = float32(rng.NormFloat64())
			}
			out := b.Alloc(params.Len())
			check := func(at mlmc.Point, alpha float64, want []float32) {
				t.Helper()
				b.Upload(out, base)
				stateBefore := host(b, params.State())
				if err := o.Eval(s, at, tc.diff, alpha, out); err != nil {
					t.Fatal(err)
				}
				got := host(b, out)
				for i := range got {
					w := base[i] + float32(alpha)*want[i]
					if math.Abs(float64(got[i]-w)) > 1e-5*(1+math.Abs(float64(w))) {
						t.Fatalf("at %s: out[%d] = %g, want base + %g*g = %g", at, i, got[i], alpha, w)
					}
				}
				if !slices.Equal(host(b, params.Flat()), xt) {
					t.Fatalf("after an evaluation at %s the parameters are not x_t", at)
				}
				stateChanged := !slices.Equal(host(b, params.State()), stateBefore)
				if stateChanged != (at == mlmc.Current) {
					t.Fatalf("evaluation at %s: running statistics changed: %v, want %v", at, stateChanged, at == mlmc.Current)
				}
				if !slices.Equal(s.(*draw).views, views) {
					t.Fatalf("evaluation at %s changed the draw's views", at)
				}
			}
			check(mlmc.Current, 0.5, wantCur)
			check(mlmc.Previous, -0.25, wantPrev)
			check(mlmc.Current, 1, wantCur)
			o.Release(s)
		})
	}
}

func TestParseHalves(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Halves
		ok   bool
	}{{"shared", HalvesShared, true}, {"", HalvesShared, true}, {"separate", HalvesSeparate, true}, {"both", 0, false}, {"Separate", 0, false}} {
		got, err := ParseHalves(tc.name)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseHalves(%q) = %v, %v; want %v (ok %v)", tc.name, got, err, tc.want, tc.ok)
		}
	}
	for _, h := range []Halves{HalvesShared, HalvesSeparate} {
		if back, err := ParseHalves(h.String()); err != nil || back != h {
			t.Errorf("ParseHalves(%v.String()) = %v, %v", h, back, err)
		}
	}
}
