package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/internal/testsupport/synthdata"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
)

// randomUnit is 2n random unit rows of d values, float32.
func randomUnit(n, d int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	z := make([]float32, 2*n*d)
	for i := range z {
		z[i] = float32(r.NormFloat64())
	}
	for i := range 2 * n {
		unit(z[i*d : (i+1)*d])
	}
	return z
}

// innerMean64 is g_i written from its definition in float64, for each
// row i of check: the mean of exp(s_iv/tau) over the views v among others
// that are not of i's image.
func innerMean64(z []float32, check, others []int, d int, tau float64) map[int]float64 {
	out := map[int]float64{}
	for _, i := range check {
		var sum float64
		var count int
		for _, v := range others {
			if v/2 == i/2 {
				continue
			}
			var s float64
			for k := range d {
				s += float64(z[i*d+k]) * float64(z[v*d+k])
			}
			sum += math.Exp(s / tau)
			count++
		}
		out[i] = sum / float64(count)
	}
	return out
}

// InnerMeans against the definition in float64, on sizes that fit one
// tile and that cross the row and column blocks (2n > 256 and > 4096 rows).
func TestInnerMeansMatchesFloat64(t *testing.T) {
	for _, tc := range []struct {
		n, d    int
		tau     float64
		workers int
	}{
		{2, 3, 0.5, 1},
		{5, 8, 0.1, 3},
		{200, 16, 0.5, 2},
		{2100, 4, 0.2, 2},
	} {
		z := randomUnit(tc.n, tc.d, uint64(tc.n))
		got := InnerMeans(blas.PureGo(1), z, tc.n, tc.d, tc.tau, tc.workers)
		all := make([]int, 2*tc.n)
		for i := range all {
			all[i] = i
		}
		// Every row for the small cases; a sample of rows (each against
		// all others) for the large one.
		check := all
		if tc.n > 500 {
			check = []int{0, 1, 255, 256, 257, 4095, 4096, 4097, 2*tc.n - 2, 2*tc.n - 1}
		}
		want := innerMean64(z, check, all, tc.d, tc.tau)
		for _, i := range check {
			if rel := math.Abs(got[i]-want[i]) / want[i]; rel > 2e-6 {
				t.Errorf("n=%d d=%d tau=%g: g_%d = %.9g, float64 definition %.9g (relative %.2g)", tc.n, tc.d, tc.tau, i, got[i], want[i], rel)
			}
		}
	}
}

// BatchMeans is InnerMeans within each batch of the order; the images of
// a short last batch get NaN.
func TestBatchMeans(t *testing.T) {
	const n, d, batch, tau = 11, 6, 4, 0.5
	z := randomUnit(n, d, 7)
	order := RandomOrder(n, 3)
	got := BatchMeans(blas.PureGo(1), z, n, d, tau, order, batch)
	for lo := 0; lo < n; lo += batch {
		if lo+batch > n {
			for _, img := range order[lo:] {
				if !math.IsNaN(got[2*img]) || !math.IsNaN(got[2*img+1]) {
					t.Errorf("image %d of the short last batch: %g, %g, want NaN", img, got[2*img], got[2*img+1])
				}
			}
			continue
		}
		var rows []int
		for _, img := range order[lo : lo+batch] {
			rows = append(rows, 2*img, 2*img+1)
		}
		want := innerMean64(z, rows, rows, d, tau)
		for _, i := range rows {
			if rel := math.Abs(got[i]-want[i]) / want[i]; rel > 2e-6 {
				t.Errorf("view %d: in-batch mean %.9g, float64 definition %.9g", i, got[i], want[i])
			}
		}
	}
}

func TestRelativeErrors(t *testing.T) {
	truth := []float64{1, 2, 4, 5, 10, 3}
	est := []float64{1.1, 1.6, 4, 6, 10, math.NaN()} // +0.1, -0.2, 0, +0.2, 0, skipped
	got := RelativeErrors(est, truth, nil)
	// g/e - 1: 1/1.1 - 1, 2/1.6 - 1, 0, 5/6 - 1, 0.
	weight := (1/1.1 - 1 + 0.25 + 5.0/6 - 1) / 5
	want := ErrorStats{N: 5, Mean: 0.1, P25: 0, Median: 0.1, P75: 0.2, P90: 0.2, Max: 0.2, Bias: 0.02, WeightBias: weight}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if got.N != want.N || !near(got.Mean, want.Mean) || !near(got.P25, want.P25) || !near(got.Median, want.Median) ||
		!near(got.P75, want.P75) || !near(got.P90, want.P90) || !near(got.Max, want.Max) || !near(got.Bias, want.Bias) ||
		!near(got.WeightBias, want.WeightBias) {
		t.Errorf("RelativeErrors = %+v, want %+v", got, want)
	}
	if got := RelativeErrors(est, truth, func(i int) bool { return i == 1 }); got.N != 1 || !near(got.Median, 0.2) || !near(got.Bias, -0.2) {
		t.Errorf("RelativeErrors of image 1 only = %+v, want one error of 0.2, bias -0.2", got)
	}
}

// The replay embeds each image's views of its last visit as training did.
// Two constructions where u must equal what the replay computes, the
// parameters unchanged since (oracle queries do not step):
//   - one draw of all 16 images at gamma 1 (a first visit): u_k is the
//     full-data inner mean G_k, exactly the measurement's target;
//   - 10 draws of 8 from 64 images at gamma 1: for the images of the last
//     two draws (of epoch 1, each visited there last) u_k is the in-batch
//     mean over that draw, which InnerMeans of the draw's rows gives.
//
// DrawsAgo matches the draws the oracle made, and ForwardBatches, which
// renders the views from their keys, embeds the one draw as the replay did.
func TestReplayRecoversU(t *testing.T) {
	for _, tc := range []struct {
		images, level, draws int
	}{
		{16, 4, 1},
		{64, 3, 10},
	} {
		splits := synthdata.Splits(tc.images, 4, 16, 4)
		b := cpu.New()
		m := resnet18.New(b, resnet18.Config{Width: 0.0625, ProjDim: 16, InputSize: 16}, 1)
		aug, err := contrastive.ViewTransform("", splits.Train)
		if err != nil {
			t.Fatal(err)
		}
		const seed, tau = 5, 0.5
		stream, err := loader.Open(splits.Train, splits.Mean, splits.Std, aug, seed, 2)
		if err != nil {
			t.Fatal(err)
		}
		o := contrastive.NewOracle(b, m, stream, tau, tc.level, nil)
		loss, err := contrastive.NewLoss(contrastive.SogCLR, b, contrastive.LossConfig{Temperature: tau, TrainImages: tc.images, Gamma: contrastive.GammaSchedule{Gamma: 1}})
		if err != nil {
			t.Fatal(err)
		}
		o.SetLoss(loss)
		out := b.Alloc(m.Params().Len())
		lastDraw := map[int]int{}
		var drawn [][]int
		for k := range tc.draws {
			s, _, err := o.Draw(tc.level)
			if err != nil {
				t.Fatal(err)
			}
			// The draw's images: the stream's next 2^level positions,
			// epoch by epoch in loader.Permutation's order.
			var idx []int
			for g := k << tc.level; g < (k+1)<<tc.level; g++ {
				idx = append(idx, loader.Permutation(tc.images, seed, g/tc.images)[g%tc.images])
			}
			drawn = append(drawn, idx)
			for _, img := range idx {
				lastDraw[img] = k
			}
			if err := o.Eval(s, mlmc.Current, false, 1, out); err != nil {
				t.Fatal(err)
			}
			o.Release(s)
		}
		head := stream.Position()
		lv, err := ReplayLastVisits(b, m, splits.Train, splits.Mean, splits.Std, aug, seed, 1<<tc.level, head, 2)
		if err != nil {
			t.Fatal(err)
		}
		u := loss.(contrastive.ImageState).State()
		for img := range tc.images {
			want := 0
			if k, ok := lastDraw[img]; ok {
				want = tc.draws - k
			}
			if lv.DrawsAgo[img] != want {
				t.Errorf("%d images, %d draws: image %d last visited %d draws ago, replay says %d", tc.images, tc.draws, img, want, lv.DrawsAgo[img])
			}
		}
		// The draws whose images all had their last visit there: the
		// one draw, or the last two.
		for _, idx := range drawn[max(tc.draws-2, 0):] {
			bz := make([]float32, 0, 2*len(idx)*lv.D)
			for _, img := range idx {
				bz = append(bz, lv.Z[2*img*lv.D:(2*img+2)*lv.D]...)
			}
			g := PerImage(InnerMeans(blas.PureGo(1), bz, len(idx), lv.D, tau, 2))
			for k, img := range idx {
				if rel := math.Abs(float64(u[img])-g[k]) / g[k]; rel > 1e-5 {
					t.Errorf("%d images, %d draws: image %d: u = %.7g, the replay's inner mean over its batch %.7g (relative %.2g)", tc.images, tc.draws, img, u[img], g[k], rel)
				}
			}
		}
		if tc.draws == 1 {
			// The views rendered from their keys, in the draw's batch: the
			// replay's embeddings again.
			zf, err := ForwardBatches(b, m, splits.Train, splits.Mean, splits.Std, aug, seed, lv.LastEpoch, drawn[0], 1<<tc.level, 2)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range zf {
				if math.Abs(float64(v-lv.Z[i])) > 1e-5 {
					t.Fatalf("ForwardBatches row %d, element %d: %g, the replay's %g", i/lv.D, i%lv.D, v, lv.Z[i])
				}
			}
		}
		b.Free(out)
		o.Free()
		stream.Close()
		m.Free()
	}
}
