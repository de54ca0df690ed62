// Package eval evaluates a network's frozen backbone: it extracts the
// features of un-augmented images (batch norm in evaluation mode) and runs
// the kNN monitor (eval/knn) or the linear probe of docs/definitions.md,
// section 6 "Training recipe" (eval/linear) on them. The trainer calls it
// mid-run and after training; `simclr eval` calls it on a saved model.
package eval

import (
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/eval/features"
	"github.com/simclr-go/simclr/eval/knn"
	"github.com/simclr-go/simclr/eval/linear"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
)

// ImageSize is the side of the images the network is trained and evaluated
// on: folder data sets are scaled and centre-cropped to it (CIFAR and SVHN
// have it), so a folder of large or mixed sizes costs what CIFAR does.
const ImageSize = 32

// featureBatch is the number of images per evaluation-mode forward pass.
const featureBatch = 256

// Extract returns the backbone features (set.Len() x FeatureDim) of the
// un-augmented images of set, normalised with mean and std, batch norm in
// evaluation mode, labelled with set's labels.
func Extract(b tensor.Backend, m *resnet18.Model, set *data.Set, mean, std [3]float32) features.Features {
	dim := m.FeatureDim()
	out := make([]float32, set.Len()*dim)
	imgLen := m.InputLen()
	host := make([]float32, featureBatch*imgLen)
	idx := make([]int, 0, featureBatch)
	inputs := map[int]tensor.Buffer{} // one input buffer per batch size
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
	return features.Features{X: out, Y: set.Labels, N: set.Len(), Dim: dim}
}

// extractSplits extracts the features of both splits, then frees the
// evaluation plans (the training plans stay: kNN also runs mid-training).
func extractSplits(b tensor.Backend, m *resnet18.Model, splits *data.Splits) (train, test features.Features) {
	train = Extract(b, m, splits.Train, splits.Mean, splits.Std)
	test = Extract(b, m, splits.Test, splits.Mean, splits.Std)
	m.FreeEvalPlans()
	return train, test
}

// KNN extracts features of splits' training and test images and scores the
// test set by weighted kNN (k neighbours, temperature 0.1).
func KNN(b tensor.Backend, m *resnet18.Model, splits *data.Splits, k int) (knn.Result, error) {
	train, test := extractSplits(b, m, splits)
	return knn.Classify(train, test, len(splits.Train.Classes), knn.Options{K: k})
}

// LinearProbe extracts features and fits the linear probe of
// docs/definitions.md, section 6 "Training recipe"; seed chooses the held-out
// rows that pick the penalty.
func LinearProbe(b tensor.Backend, m *resnet18.Model, splits *data.Splits, seed uint64) (linear.Result, error) {
	train, test := extractSplits(b, m, splits)
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
