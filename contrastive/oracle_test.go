package contrastive

import (
	"math"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/internal/testsupport/synthdata"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// syntheticSplits is synthdata.Splits: a small learnable labelled image set.
func syntheticSplits(nTrain, nTest, side, classes int) *data.Splits {
	return synthdata.Splits(nTrain, nTest, side, classes)
}

// testOracle is the oracle as the trainer sets it up for a VR estimator,
// on a width-1/16 network over 64 synthetic 16x16 images: levels up to 3,
// x_{t-1} kept in prev.
type testOracle struct {
	b      tensor.Backend
	model  *resnet18.Model
	oracle *Oracle
	prev   tensor.Buffer
	cfg    struct {
		ProjDim     int
		Temperature float64
	}
}

func newTestOracle(t *testing.T) *testOracle {
	t.Helper()
	splits := syntheticSplits(64, 8, 16, 4)
	tr := &testOracle{b: cpu.New()}
	tr.cfg.ProjDim, tr.cfg.Temperature = 16, 0.5
	tr.model = resnet18.New(tr.b, resnet18.Config{Width: 0.0625, ProjDim: tr.cfg.ProjDim, InputSize: 16}, 1)
	aug, err := ViewTransform("", splits.Train)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := loader.Open(splits.Train, splits.Mean, splits.Std, aug, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	params := tr.model.Params()
	tr.prev = tr.b.Alloc(params.Len())
	tr.b.Copy(tr.prev, params.Flat())
	tr.oracle = NewOracle(tr.b, tr.model, stream, tr.cfg.Temperature, 3, tr.prev)
	t.Cleanup(func() {
		tr.oracle.Free()
		stream.Close()
		tr.model.Free()
	})
	return tr
}

// host copies a backend buffer.
func host(b interface {
	Download([]float32, tensor.Buffer)
}, buf tensor.Buffer) []float32 {
	out := make([]float32, buf.Len())
	b.Download(out, buf)
	return out
}

// A SogCLR query updates u of exactly the images it drew (from 0, their
// first visit, to the mean over their negatives: positive), and the
// decoupled losses refuse multilevel queries.
func TestSogCLRQueryUpdatesItsImages(t *testing.T) {
	tr := newTestOracle(t)
	loss, err := NewLoss(SogCLR, tr.b, LossConfig{Temperature: 0.5, TrainImages: 64, Gamma: GammaSchedule{Gamma: 0.9}})
	if err != nil {
		t.Fatal(err)
	}
	tr.oracle.SetLoss(loss)
	out := tr.b.Alloc(tr.model.Params().Len())
	defer tr.b.Free(out)
	drawn := map[int]bool{}
	for range 2 {
		s, _, err := tr.oracle.Draw(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, idx := range s.(*draw).indices {
			drawn[idx] = true
		}
		if err := tr.oracle.Eval(s, mlmc.Current, false, 1, out); err != nil {
			t.Fatal(err)
		}
		if err := tr.oracle.Eval(s, mlmc.Current, true, 1, out); err == nil {
			t.Fatal("a multilevel SogCLR query: no error")
		}
		tr.oracle.Release(s)
	}
	if len(drawn) != 16 {
		t.Fatalf("two draws of 8 from a 64-image epoch hold %d distinct images, want 16", len(drawn))
	}
	for idx, u := range loss.(ImageState).State() {
		if drawn[idx] != (u > 0) {
			t.Errorf("image %d (drawn %v): u = %g", idx, drawn[idx], u)
		}
	}
	raw, excess := tr.oracle.Losses()
	if math.IsNaN(raw) || math.Abs(raw-excess-math.Log(14)) > 1e-12 {
		t.Fatalf("losses %g and %g: their difference should be log(2n-2) = log 14", raw, excess)
	}
}
