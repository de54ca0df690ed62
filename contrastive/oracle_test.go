package contrastive

import (
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// syntheticSplits is a small labelled image set: each class has its own
// mean colour, so the images are learnable but not trivially equal.
func syntheticSplits(nTrain, nTest, side, classes int) *data.Splits {
	r := rand.New(rand.NewPCG(7, 7))
	mk := func(name string, n int) *data.Set {
		s := &data.Set{Name: name, H: side, W: side, Pix: make([]uint8, n*3*side*side), Labels: make([]int32, n)}
		for c := 0; c < classes; c++ {
			s.Classes = append(s.Classes, string(rune('a'+c)))
		}
		for i := 0; i < n; i++ {
			c := i % classes
			s.Labels[i] = int32(c)
			for ch := 0; ch < 3; ch++ {
				base := 40 + 60*((c+ch)%3)
				for p := 0; p < side*side; p++ {
					s.Pix[(i*3+ch)*side*side+p] = uint8(base + r.IntN(80))
				}
			}
		}
		return s
	}
	return &data.Splits{Train: mk("synthetic train", nTrain), Test: mk("synthetic test", nTest),
		Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.25, 0.25, 0.25}}
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
