package cuda_test

import (
	"fmt"
	"testing"

	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/internal/testsupport/synthdata"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// TestOracleGraphsMatchEager trains two copies of a network side by side
// through the SimCLR oracle as a VR estimator queries it (h^l and H^l at
// x_t and at x_{t-1}, levels 1 to 3, an SGD step and the head statistics'
// commit each iteration), one oracle with step graphs (the default) and
// one without, on the same draws. Their estimates, parameters and running
// statistics must agree bit for bit (on a GPU within graphTolerance, each
// iteration from the same weights), and the graphed oracle must have
// replayed graphs. Group norm is the case with host state in the pass
// (the head's pending statistics, the previous ones at x_{t-1}).
func TestOracleGraphsMatchEager(t *testing.T) {
	for _, tc := range []struct {
		norm                 resnet18.Norm
		maxLevel, iterations int
	}{
		{resnet18.NormBatch, 3, 6},
		// Group norm's kernels are slow on the emulator: level 1 only.
		{resnet18.NormGroup, 1, 5},
	} {
		norm := tc.norm
		t.Run(norm.String(), func(t *testing.T) {
			g := openCUDA(t, cuda.Options{Precision: "fp32"})
			defer g.Close()
			splits := synthdata.Splits(16, 4, 8, 4)
			aug, err := contrastive.ViewTransform("", splits.Train)
			if err != nil {
				t.Fatal(err)
			}
			cfg := resnet18.Config{Width: 0.125, ProjDim: 16, InputSize: 8, Norm: norm}
			type side struct {
				m         *resnet18.Model
				o         *contrastive.Oracle
				prev, out tensor.Buffer
			}
			newSide := func(graphs bool) *side {
				m := resnet18.New(g, cfg, 9)
				stream, err := loader.Open(splits.Train, splits.Mean, splits.Std, aug, 1, 1)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { stream.Close() })
				s := &side{m: m, prev: g.Alloc(m.Params().Len()), out: g.Alloc(m.Params().Len())}
				g.Copy(s.prev, m.Params().Flat())
				s.o = contrastive.NewOracle(g, m, stream, 0.5, 3, s.prev)
				if !graphs {
					s.o.SetStepGraphs(0)
				}
				return s
			}
			eager, graphed := newSide(false), newSide(true)
			for it := range tc.iterations {
				// On a GPU rounding differences grow from step to step
				// (graphTolerance): each iteration starts the graphed
				// oracle from the eager one's weights, copied in place.
				if onGPU(g) {
					gp, ep := graphed.m.Params(), eager.m.Params()
					g.Copy(gp.Flat(), ep.Flat())
					g.Copy(gp.State(), ep.State())
					g.Copy(graphed.prev, eager.prev)
				}
				for _, s := range []*side{eager, graphed} {
					g.Zero(s.out)
				}
				for level := 1; level <= tc.maxLevel; level++ {
					// One draw for both: the eager oracle's.
					d, _, err := eager.o.Draw(level)
					if err != nil {
						t.Fatal(err)
					}
					for _, q := range []struct {
						at   mlmc.Point
						diff bool
					}{{mlmc.Current, false}, {mlmc.Current, true}, {mlmc.Previous, true}} {
						if q.at == mlmc.Previous && it == 0 {
							continue
						}
						for _, s := range []*side{eager, graphed} {
							if err := s.o.Eval(d, q.at, q.diff, 0.25, s.out); err != nil {
								t.Fatal(err)
							}
						}
					}
					eager.o.Release(d)
				}
				sameBits(t, g, fmt.Sprintf("iteration %d estimate", it), eager.out, graphed.out)
				for _, s := range []*side{eager, graphed} {
					p := s.m.Params()
					g.Copy(s.prev, p.Flat())
					g.Axpy(p.Flat(), -0.05, s.out)
					s.m.CommitHeadStatistics()
				}
			}
			sameBits(t, g, "parameters", eager.m.Params().Flat(), graphed.m.Params().Flat())
			sameBits(t, g, "running statistics", eager.m.Params().State(), graphed.m.Params().State())
			re, _ := eager.o.Losses()
			rg, _ := graphed.o.Losses()
			sameLoss(t, g, "mean loss", re, rg)
			st := g.GraphStats()
			if st.Replays == 0 || len(st.Refused) != 0 {
				t.Fatalf("graph stats %+v: want replays and no refusal", st)
			}
			t.Logf("graph stats: %d eager, %d captures, %d replays", st.Eager, st.Captures, st.Replays)
		})
	}
}
