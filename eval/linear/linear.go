// Package linear is the linear probe of docs/definitions.md, section 6
// "Training recipe": multinomial logistic regression with an L2 penalty fitted
// on frozen features (the caller supplies feature matrices), the penalty chosen
// on a held-out part of the training features from a grid, refitted on all of
// them, and scored by test top-1 and top-5 accuracy.
//
// Features are standardised with the training mean and standard deviation.
// The objective is minimised in float64 by full-batch L-BFGS; each
// evaluation of the objective and its gradient is one pass over the rows,
// split across threads.
package linear

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/eval/features"
	"github.com/simclr-go/simclr/internal/parallel"
)

func check(f features.Features, what string, classes int) error {
	if f.N <= 0 || f.Dim <= 0 {
		return fmt.Errorf("linear probe: %s features are empty (%d rows of %d)", what, f.N, f.Dim)
	}
	if len(f.X) != f.N*f.Dim || len(f.Y) != f.N {
		panic(fmt.Sprintf("linear: %s features: %d values and %d labels for %d x %d", what, len(f.X), len(f.Y), f.N, f.Dim))
	}
	for i, y := range f.Y {
		if y < 0 || int(y) >= classes {
			return fmt.Errorf("linear probe: %s label %d of row %d is outside 0..%d", what, y, i, classes-1)
		}
	}
	return nil
}

// Options configure Probe. Zero values take the stated defaults.
type Options struct {
	// L2Grid are the penalties tried (lambda in lambda/2 ||W||^2 added to
	// the mean cross-entropy); default DefaultGrid().
	L2Grid []float64
	// HoldOut is the fraction of training rows held out to choose the
	// penalty (default 0.1).
	HoldOut float64
	// MaxIter bounds L-BFGS iterations per fit (default 300).
	MaxIter int
	// Tol stops a fit when the gradient's max-norm falls below it (default 1e-5).
	Tol float64
	// Threads splits each pass over the rows (default GOMAXPROCS).
	Threads int
	// Seed chooses the held-out rows.
	Seed uint64
	// Gemm runs the matrix products (default blas.Open()).
	Gemm blas.Gemm
}

// DefaultGrid spans strong to weak penalties for standardised features and
// ends at 0, the unpenalised fit, so the held-out choice can never sit at an
// open end of the grid on the weak side (trained networks' features chose
// 1e-5, the old smallest value); L-BFGS's iteration bound keeps the
// unpenalised fit finite even on separable features.
func DefaultGrid() []float64 { return []float64{1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 0} }

func (o Options) withDefaults() Options {
	if len(o.L2Grid) == 0 {
		o.L2Grid = DefaultGrid()
	}
	if o.HoldOut == 0 {
		o.HoldOut = 0.1
	}
	if o.MaxIter == 0 {
		o.MaxIter = 300
	}
	if o.Tol == 0 {
		o.Tol = 1e-5
	}
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.Gemm == nil {
		o.Gemm = blas.Open()
	}
	return o
}

// GridPoint is the held-out accuracy of one penalty.
type GridPoint struct {
	L2          float64 `json:"l2"`
	HoldOutTop1 float64 `json:"holdout_top1"`
}

// Result is what Probe reports; accuracies are percentages.
type Result struct {
	Top1       float64     `json:"top1"`
	Top5       float64     `json:"top5"`
	TrainTop1  float64     `json:"train_top1"`
	L2         float64     `json:"l2"`
	Grid       []GridPoint `json:"grid"`
	Train      int         `json:"train_rows"`
	Test       int         `json:"test_rows"`
	Dim        int         `json:"dim"`
	Classes    int         `json:"classes"`
	Iterations int         `json:"iterations"`
}

// Probe chooses the penalty on a held-out part of train, refits on all of
// train and scores test.
func Probe(train, test features.Features, classes int, opts Options) (Result, error) {
	opts = opts.withDefaults()
	if classes < 2 {
		return Result{}, fmt.Errorf("linear probe: %d classes; need at least 2", classes)
	}
	if err := check(train, "training", classes); err != nil {
		return Result{}, err
	}
	if err := check(test, "test", classes); err != nil {
		return Result{}, err
	}
	if test.Dim != train.Dim {
		panic(fmt.Sprintf("linear: training features have %d dimensions, test %d", train.Dim, test.Dim))
	}
	mean, std := columnStats(train)
	xTrain := standardise(train, mean, std)
	xTest := standardise(test, mean, std)
	res := Result{Train: train.N, Test: test.N, Dim: train.Dim, Classes: classes}

	// Hold out a random part of the training rows to choose the penalty.
	perm := rand.New(rand.NewPCG(opts.Seed, 0x5eed)).Perm(train.N)
	nHold := int(math.Round(opts.HoldOut * float64(train.N)))
	best := opts.L2Grid[0]
	if nHold >= 1 && nHold < train.N && len(opts.L2Grid) > 1 {
		fitRows, holdRows := perm[nHold:], perm[:nHold]
		sort.Ints(fitRows)
		sort.Ints(holdRows)
		fitX, fitY := gather(xTrain, train.Y, train.Dim, fitRows)
		holdX, holdY := gather(xTrain, train.Y, train.Dim, holdRows)
		grid := append([]float64(nil), opts.L2Grid...)
		sort.Sort(sort.Reverse(sort.Float64Slice(grid)))
		var warm []float64
		bestAcc := -1.0
		for _, l2 := range grid { // strong to weak, each fit warm-started from the last
			c, iters := fit(fitX, fitY, train.Dim, classes, l2, warm, opts)
			warm = c.params
			res.Iterations += iters
			top1, _ := c.accuracy(holdX, holdY, opts.Gemm)
			res.Grid = append(res.Grid, GridPoint{L2: l2, HoldOutTop1: top1})
			if top1 > bestAcc {
				bestAcc, best = top1, l2
			}
		}
	}
	res.L2 = best
	c, iters := fit(xTrain, train.Y, train.Dim, classes, best, nil, opts)
	res.Iterations += iters
	res.TrainTop1, _ = c.accuracy(xTrain, train.Y, opts.Gemm)
	res.Top1, res.Top5 = c.accuracy(xTest, test.Y, opts.Gemm)
	return res, nil
}

func columnStats(f features.Features) (mean, std []float64) {
	mean = make([]float64, f.Dim)
	sq := make([]float64, f.Dim)
	for i := 0; i < f.N; i++ {
		row := f.X[i*f.Dim : (i+1)*f.Dim]
		for j, v := range row {
			mean[j] += float64(v)
			sq[j] += float64(v) * float64(v)
		}
	}
	std = make([]float64, f.Dim)
	for j := range mean {
		mean[j] /= float64(f.N)
		v := sq[j]/float64(f.N) - mean[j]*mean[j]
		std[j] = math.Sqrt(math.Max(v, 0))
		if std[j] < 1e-8 {
			std[j] = 1 // a constant feature carries no information; leave it centred at 0
		}
	}
	return mean, std
}

func standardise(f features.Features, mean, std []float64) []float32 {
	out := make([]float32, len(f.X))
	for i := 0; i < f.N; i++ {
		for j := 0; j < f.Dim; j++ {
			out[i*f.Dim+j] = float32((float64(f.X[i*f.Dim+j]) - mean[j]) / std[j])
		}
	}
	return out
}

func gather(x []float32, y []int32, dim int, rows []int) ([]float32, []int32) {
	gx := make([]float32, 0, len(rows)*dim)
	gy := make([]int32, 0, len(rows))
	for _, r := range rows {
		gx = append(gx, x[r*dim:(r+1)*dim]...)
		gy = append(gy, y[r])
	}
	return gx, gy
}

// classifier holds W (classes x dim) followed by the biases (classes) in
// one vector, the layout L-BFGS works on.
type classifier struct {
	dim, classes int
	params       []float64
}

func (c *classifier) weights() []float64 { return c.params[:c.classes*c.dim] }
func (c *classifier) biases() []float64  { return c.params[c.classes*c.dim:] }

// accuracy is the top-1 and top-5 accuracy in percent of the classifier on x.
func (c *classifier) accuracy(x []float32, y []int32, gemm blas.Gemm) (top1, top5 float64) {
	n := len(y)
	w32 := make([]float32, c.classes*c.dim)
	for i, v := range c.weights() {
		w32[i] = float32(v)
	}
	logits := make([]float32, n*c.classes)
	gemm.Sgemm(false, true, n, c.classes, c.dim, 1, x, c.dim, w32, c.dim, 0, logits, c.classes)
	s := make([]float64, c.classes)
	var hits1, hits5 int
	for i := 0; i < n; i++ {
		for k := range s {
			s[k] = float64(logits[i*c.classes+k]) + c.biases()[k]
		}
		r := Rank(s, int(y[i]))
		if r < 1 {
			hits1++
		}
		if r < 5 {
			hits5++
		}
	}
	return 100 * float64(hits1) / float64(n), 100 * float64(hits5) / float64(n)
}

// Rank is the 0-based position of class label when scores are sorted in
// decreasing order, ties broken towards the lower class index (the
// order a stable sort gives): the prediction is top-k correct when
// Rank < k.
func Rank(scores []float64, label int) int {
	r := 0
	s := scores[label]
	for k, v := range scores {
		if v > s || (v == s && k < label) {
			r++
		}
	}
	return r
}

// TopK reports whether label is among the k highest scores.
func TopK(scores []float64, label, k int) bool { return Rank(scores, label) < k }

// objective is the mean cross-entropy of softmax(W x + b) plus
// l2/2 ||W||^2 (biases are not penalised), with its gradient.
//
// The two matrix products of an evaluation (logits X W^T and gradient
// R^T X) run through a float32 SGEMM (OpenBLAS when present): in float64
// pure Go they made one evaluation on CIFAR-10-sized features take 0.8 s
// here, and a probe needs hundreds. Everything else is float64: the
// parameters L-BFGS works on, the softmax, the loss, and the gradient,
// whose float32 products cover chunkRows rows each and are summed in
// float64, so rounding does not grow with the number of rows.
type objective struct {
	x            []float32 // standardised features, n x dim
	y            []int32
	dim, classes int
	l2           float64
	threads      int
	gemm         blas.Gemm

	w32      []float32 // W rounded for the SGEMM, classes x dim
	logits   []float32 // n x classes, then the residual softmax - onehot
	partial  []float32 // one chunk's gradient, classes x dim
	partLoss []float64
	partBias [][]float64
}

// chunkRows bounds the rows one float32 gradient product sums over.
const chunkRows = 2048

func newObjective(x []float32, y []int32, dim, classes int, l2 float64, threads int, gemm blas.Gemm) *objective {
	n := len(y)
	o := &objective{x: x, y: y, dim: dim, classes: classes, l2: l2, threads: threads, gemm: gemm,
		w32: make([]float32, classes*dim), logits: make([]float32, n*classes),
		partial: make([]float32, classes*dim), partLoss: make([]float64, threads),
		partBias: make([][]float64, threads)}
	for i := range o.partBias {
		o.partBias[i] = make([]float64, classes)
	}
	return o
}

// eval returns the objective at params and writes its gradient into grad.
func (o *objective) eval(params, grad []float64) float64 {
	c := classifier{dim: o.dim, classes: o.classes, params: params}
	n := len(o.y)
	for i, v := range c.weights() {
		o.w32[i] = float32(v)
	}
	o.gemm.Sgemm(false, true, n, o.classes, o.dim, 1, o.x, o.dim, o.w32, o.dim, 0, o.logits, o.classes)
	b := c.biases()
	parallel.For(n, o.threads, func(part, lo, hi int) {
		s := make([]float64, o.classes)
		gb := o.partBias[part]
		clear(gb)
		var loss float64
		for i := lo; i < hi; i++ {
			row := o.logits[i*o.classes : (i+1)*o.classes]
			m := math.Inf(-1)
			for k, v := range row {
				s[k] = float64(v) + b[k]
				m = math.Max(m, s[k])
			}
			// Stable log-sum-exp; row becomes softmax minus the one-hot label.
			var z float64
			for k, v := range s {
				s[k] = math.Exp(v - m)
				z += s[k]
			}
			label := int(o.y[i])
			loss += math.Log(z) - math.Log(s[label])
			for k := range s {
				r := s[k] / z
				if k == label {
					r--
				}
				row[k] = float32(r)
				gb[k] += r
			}
		}
		o.partLoss[part] = loss
	})
	var loss float64
	clear(grad)
	gw, gbias := grad[:o.classes*o.dim], grad[o.classes*o.dim:]
	for p := 0; p < o.threads && p < len(o.partLoss); p++ {
		loss += o.partLoss[p]
		for k, v := range o.partBias[p] {
			gbias[k] += v
		}
		o.partLoss[p] = 0
		clear(o.partBias[p])
	}
	for lo := 0; lo < n; lo += chunkRows {
		rows := min(chunkRows, n-lo)
		o.gemm.Sgemm(true, false, o.classes, o.dim, rows, 1, o.logits[lo*o.classes:], o.classes, o.x[lo*o.dim:], o.dim, 0, o.partial, o.dim)
		for i, v := range o.partial {
			gw[i] += float64(v)
		}
	}
	inv := 1 / float64(n)
	for i := range grad {
		grad[i] *= inv
	}
	var ww float64
	for i, v := range c.weights() {
		ww += v * v
		gw[i] += o.l2 * v
	}
	return loss*inv + 0.5*o.l2*ww
}

// fit minimises the objective from start (zeros when nil) and returns the
// classifier and the iterations used.
func fit(x []float32, y []int32, dim, classes int, l2 float64, start []float64, opts Options) (*classifier, int) {
	obj := newObjective(x, y, dim, classes, l2, opts.Threads, opts.Gemm)
	params := make([]float64, classes*(dim+1))
	copy(params, start)
	iters := lbfgs(obj.eval, params, opts.MaxIter, opts.Tol)
	return &classifier{dim: dim, classes: classes, params: params}, iters
}
