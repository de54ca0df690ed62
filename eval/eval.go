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

// Output names what extraction returns for each image.
type Output int

const (
	// Backbone is the pooled backbone features (FeatureDim per image):
	// what the probes and kNN score and what a downstream task uses.
	Backbone Output = iota
	// Projection is the projection head's output z (ProjDim per image),
	// before L2 normalisation: what the SimCLR loss compares.
	Projection
)

// Dim is the number of values per image of output o of m.
func (o Output) Dim(m *resnet18.Model) int {
	if o == Projection {
		return m.Config().ProjDim
	}
	return m.FeatureDim()
}

// Extract returns the backbone features (set.Len() x FeatureDim) of the
// un-augmented images of set, normalised with mean and std, batch norm in
// evaluation mode, labelled with set's labels.
func Extract(b tensor.Backend, m *resnet18.Model, set *data.Set, mean, std [3]float32) features.Features {
	dim := m.FeatureDim()
	out := make([]float32, set.Len()*dim)
	// The sink only copies, so it never fails.
	_ = ExtractBatches(b, m, set, mean, std, Backbone, func(lo int, rows []float32) error {
		copy(out[lo*dim:], rows)
		return nil
	})
	return features.Features{X: out, Y: set.Labels, N: set.Len(), Dim: dim}
}

// ExtractBatches runs the un-augmented images of set, normalised with mean
// and std, through m in evaluation mode (batch norm with its running
// statistics) a batch at a time, in order, and hands each batch's rows of
// output o (row-major, o.Dim(m) values per image) to sink with the index of
// its first image. rows is reused for the next batch. An error from sink
// stops the extraction and is returned.
func ExtractBatches(b tensor.Backend, m *resnet18.Model, set *data.Set, mean, std [3]float32, o Output,
	sink func(lo int, rows []float32) error) error {
	dim := o.Dim(m)
	imgLen := m.InputLen()
	host := make([]float32, featureBatch*imgLen)
	rows := make([]float32, featureBatch*dim)
	idx := make([]int, 0, featureBatch)
	inputs := map[int]tensor.Buffer{} // one input buffer per batch size
	defer func() {
		for _, x := range inputs {
			b.Free(x)
		}
	}()
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
		var y tensor.Buffer
		if o == Projection {
			y = m.Forward(x, n, false, false)
		} else {
			y = m.Features(x, n)
		}
		b.Download(rows[:n*dim], y)
		if err := sink(lo, rows[:n*dim]); err != nil {
			return err
		}
	}
	return nil
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
