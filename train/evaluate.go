package train

import (
	"path/filepath"
	"time"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/eval/knn"
	"github.com/simclr-go/simclr/eval/linear"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
	"github.com/simclr-go/simclr/train/runfolder"
)

// featureBatch is the number of images per evaluation-mode forward pass.
const featureBatch = 256

// ExtractFeatures returns the backbone features (set.Len() x FeatureDim) of
// the un-augmented, normalised images of set, batch norm in evaluation
// mode.
func ExtractFeatures(b tensor.Backend, m *resnet18.Model, set *data.Set, mean, std [3]float32) []float32 {
	dim := m.FeatureDim()
	out := make([]float32, set.Len()*dim)
	imgLen := m.InputLen()
	host := make([]float32, featureBatch*imgLen)
	idx := make([]int, 0, featureBatch)
	inputs := map[int]tensor.Buffer{}
	for lo := 0; lo < set.Len(); lo += featureBatch {
		n := min(featureBatch, set.Len()-lo)
		idx = idx[:0]
		for i := lo; i < lo+n; i++ {
			idx = append(idx, i)
		}
		loader.EvalBatch(set, idx, mean, std, host[:n*imgLen])
		x := inputs[n]
		if x == nil {
			x = b.Alloc(n * imgLen)
			inputs[n] = x
		}
		b.Upload(x, host[:n*imgLen])
		feat := m.Features(x, n)
		b.Download(out[lo*dim:(lo+n)*dim], feat)
	}
	for _, x := range inputs {
		b.Free(x)
	}
	return out
}

// KNN extracts features of splits' training and test images and scores the
// test set by weighted kNN (k neighbours, temperature 0.1).
func KNN(b tensor.Backend, m *resnet18.Model, splits *data.Splits, k int) (knn.Result, error) {
	dim := m.FeatureDim()
	train := knn.Features{X: ExtractFeatures(b, m, splits.Train, splits.Mean, splits.Std), Y: splits.Train.Labels, N: splits.Train.Len(), Dim: dim}
	test := knn.Features{X: ExtractFeatures(b, m, splits.Test, splits.Mean, splits.Std), Y: splits.Test.Labels, N: splits.Test.Len(), Dim: dim}
	m.FreeEvalPlans() // the training plans stay: KNN also runs mid-training
	return knn.Classify(train, test, len(splits.Train.Classes), knn.Options{K: k})
}

// LinearProbe extracts features and fits the linear probe of SPEC
// section 3.
func LinearProbe(b tensor.Backend, m *resnet18.Model, splits *data.Splits, seed uint64) (linear.Result, error) {
	dim := m.FeatureDim()
	train := linear.Features{X: ExtractFeatures(b, m, splits.Train, splits.Mean, splits.Std), Y: splits.Train.Labels, N: splits.Train.Len(), Dim: dim}
	test := linear.Features{X: ExtractFeatures(b, m, splits.Test, splits.Mean, splits.Std), Y: splits.Test.Labels, N: splits.Test.Len(), Dim: dim}
	m.FreeEvalPlans()
	return linear.Probe(train, test, len(splits.Train.Classes), linear.Options{Seed: seed})
}

// ProbeRecord turns a linear-probe result into linear_probe.json's form.
func ProbeRecord(res linear.Result, checkpoint, dataset string, iteration int, seconds float64) *runfolder.Probe {
	p := &runfolder.Probe{Checkpoint: checkpoint, Iteration: iteration, Dataset: dataset, Top1: res.Top1, Top5: res.Top5,
		L2: res.L2, TrainImages: res.Train, TestImages: res.Test, FeatureDim: res.Dim, Seconds: seconds}
	for _, g := range res.Grid {
		p.Grid = append(p.Grid, runfolder.GridPoint{L2: g.L2, HoldOutTop1: g.HoldOutTop1})
	}
	return p
}

func (t *trainer) evalKNN() error {
	start := time.Now()
	res, err := KNN(t.b, t.model, t.splits, t.cfg.KNNK)
	if err != nil {
		return err
	}
	rec := runfolder.Eval{Iteration: t.iter, Epoch: float64(t.iter) / float64(t.cfg.ItersPerEpoch),
		SamplesDrawn: t.est.Totals().Samples, WallSeconds: t.wall(), KNNTop1: res.Top1, KNNTop5: res.Top5, K: res.K,
		TrainImages: t.splits.Train.Len(), TestImages: t.splits.Test.Len()}
	app, err := runfolder.OpenAppender(filepath.Join(t.cfg.Out, runfolder.EvalFile))
	if err != nil {
		return err
	}
	defer app.Close()
	if err := app.Append(rec); err != nil {
		return err
	}
	t.logf("kNN (k=%d) at iteration %d: top-1 %.2f%% top-5 %.2f%% (%.1f s)", res.K, t.iter, res.Top1, res.Top5, time.Since(start).Seconds())
	return nil
}

// linearProbe runs the probe on the trained network (and, when asked, on
// the same network at initialisation) and writes linear_probe.json.
func (t *trainer) linearProbe() (*runfolder.Probe, error) {
	start := time.Now()
	res, err := LinearProbe(t.b, t.model, t.splits, t.cfg.Seed)
	if err != nil {
		return nil, err
	}
	rec := ProbeRecord(res, filepath.Join(t.cfg.Out, runfolder.ModelFile), t.cfg.Dataset, t.iter, time.Since(start).Seconds())
	t.logf("linear probe: top-1 %.2f%% top-5 %.2f%% (l2 %g, %d train / %d test images, %.1f s)",
		res.Top1, res.Top5, res.L2, res.Train, res.Test, rec.Seconds)
	if t.cfg.ProbeBaseline {
		init := resnet18.New(t.b, t.model.Config(), t.cfg.Seed)
		base, err := LinearProbe(t.b, init, t.splits, t.cfg.Seed)
		init.FreePlans()
		init.Params().Free()
		if err != nil {
			return nil, err
		}
		rec.BaselineTop1 = &base.Top1
		t.logf("linear probe of the same network at initialisation: top-1 %.2f%% (trained: %.2f%%, %+.2f points)",
			base.Top1, res.Top1, res.Top1-base.Top1)
	}
	if err := runfolder.WriteJSON(filepath.Join(t.cfg.Out, runfolder.ProbeFile), rec); err != nil {
		return nil, err
	}
	return rec, nil
}
