package knn

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/eval/features"
)

func randomFeatures(n, dim, classes int, sep float64, seed uint64) features.Features {
	r := rand.New(rand.NewPCG(seed, 3))
	cr := rand.New(rand.NewPCG(42, 4))
	centres := make([]float64, classes*dim)
	for i := range centres {
		centres[i] = cr.NormFloat64() * sep
	}
	f := features.Features{X: make([]float32, n*dim), Y: make([]int32, n), N: n, Dim: dim}
	for i := 0; i < n; i++ {
		c := r.IntN(classes)
		f.Y[i] = int32(c)
		for j := 0; j < dim; j++ {
			f.X[i*dim+j] = float32(centres[c*dim+j] + r.NormFloat64())
		}
	}
	return f
}

// bruteForce is the definition written out: cosine similarities in
// float64, a full sort, the first k, votes exp(s/T).
func bruteForce(train, test features.Features, classes, k int, temp float64) (top1, top5 float64) {
	norm := func(x []float32) []float64 {
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = float64(v) / math.Sqrt(ss)
		}
		return out
	}
	var h1, h5 int
	for i := 0; i < test.N; i++ {
		q := norm(test.X[i*test.Dim : (i+1)*test.Dim])
		type pair struct {
			s float64
			j int
		}
		all := make([]pair, train.N)
		for j := 0; j < train.N; j++ {
			t := norm(train.X[j*train.Dim : (j+1)*train.Dim])
			var s float64
			for d := range q {
				s += q[d] * t[d]
			}
			all[j] = pair{s, j}
		}
		sort.SliceStable(all, func(a, b int) bool { return all[a].s > all[b].s })
		votes := make([]float64, classes)
		for _, p := range all[:k] {
			votes[train.Y[p.j]] += math.Exp(p.s / temp)
		}
		better := 0
		for c, v := range votes {
			if v > votes[test.Y[i]] || (v == votes[test.Y[i]] && c < int(test.Y[i])) {
				better++
			}
		}
		if better < 1 {
			h1++
		}
		if better < 5 {
			h5++
		}
	}
	return 100 * float64(h1) / float64(test.N), 100 * float64(h5) / float64(test.N)
}

func TestClassifyMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name             string
		nTrain, nTest, k int
		classes          int
		sep, temp        float64
		threads          int
	}{
		{"k 200 overlapping", 600, 300, 200, 10, 0.4, 0.1, 2},
		{"k 5 one thread", 300, 150, 5, 6, 0.5, 0.1, 1},
		{"k above training size", 50, 40, 200, 3, 0.3, 0.5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			train := randomFeatures(tc.nTrain, 16, tc.classes, tc.sep, 1)
			test := randomFeatures(tc.nTest, 16, tc.classes, tc.sep, 2)
			res, err := Classify(train, test, tc.classes, Options{K: tc.k, Temperature: tc.temp, Threads: tc.threads, Gemm: blas.Naive{}})
			if err != nil {
				t.Fatal(err)
			}
			w1, w5 := bruteForce(train, test, tc.classes, min(tc.k, tc.nTrain), tc.temp)
			// float32 similarities can swap near-ties at the k-th neighbour;
			// allow one test row of difference.
			tol := 100.0/float64(tc.nTest) + 1e-9
			if math.Abs(res.Top1-w1) > tol || math.Abs(res.Top5-w5) > tol {
				t.Errorf("top-1 %.2f top-5 %.2f, brute force %.2f %.2f", res.Top1, res.Top5, w1, w5)
			}
			if res.Top1 < 100/float64(tc.classes)+10 {
				t.Errorf("top-1 %.2f%% barely above chance %.2f%%: the clusters should be partly separable", res.Top1, 100/float64(tc.classes))
			}
		})
	}
}

func TestClassifySeparatedClusters(t *testing.T) {
	train := randomFeatures(2000, 32, 10, 3, 1)
	test := randomFeatures(1000, 32, 10, 3, 2)
	res, err := Classify(train, test, 10, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Top1 < 99 || res.Top5 < res.Top1 {
		t.Errorf("top-1 %.2f%%, top-5 %.2f%% on well-separated clusters", res.Top1, res.Top5)
	}
}

func TestWeightsFavourCloseNeighbours(t *testing.T) {
	// Query along x. Class 0 has one training point at cosine 1, class 1
	// has two at cosine 0.8. With T = 0.1, e^10 > 2 e^8 so class 0 wins;
	// with T = 10, 2 e^0.08 > e^0.1 so class 1 wins.
	train := features.Features{X: []float32{1, 0, 0.8, 0.6, 0.8, -0.6}, Y: []int32{0, 1, 1}, N: 3, Dim: 2}
	test := features.Features{X: []float32{2, 0}, Y: []int32{0}, N: 1, Dim: 2}
	for _, tc := range []struct {
		temp float64
		top1 float64
	}{{0.1, 100}, {10, 0}} {
		res, err := Classify(train, test, 2, Options{K: 3, Temperature: tc.temp})
		if err != nil {
			t.Fatal(err)
		}
		if res.Top1 != tc.top1 {
			t.Errorf("T %g: top-1 %.0f%%, want %.0f%%", tc.temp, res.Top1, tc.top1)
		}
	}
}

func TestClassifyRejectsBadInput(t *testing.T) {
	f := randomFeatures(10, 4, 3, 1, 1)
	f.Y[2] = 9
	if _, err := Classify(f, f, 3, Options{}); err == nil || !strings.Contains(err.Error(), "label 9 of row 2") {
		t.Errorf("error %v", err)
	}
	if _, err := Classify(features.Features{Dim: 4}, f, 3, Options{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("error %v", err)
	}
	f.Y[2] = 1
	if _, err := Classify(f, f, 3, Options{K: -3}); err == nil || !strings.Contains(err.Error(), "k = -3") {
		t.Errorf("negative k: error %v, want one naming k = -3", err)
	}
}

// BenchmarkClassifyCIFARSize is kNN with 50,000 training and 10,000 test
// rows of 512 features.
func BenchmarkClassifyCIFARSize(b *testing.B) {
	train := randomFeatures(50000, 512, 10, 0.2, 1)
	test := randomFeatures(10000, 512, 10, 0.2, 2)
	b.ResetTimer()
	for range b.N {
		if _, err := Classify(train, test, 10, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
