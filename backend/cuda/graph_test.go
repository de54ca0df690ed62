package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// Step graphs against eager steps on the same backend: two models made
// from the same seed train side by side on the same views, one calling the
// backend directly, the other through GraphStep (eager, then recorded,
// then replayed). Every loss, gradient, parameter and running statistic
// must agree bit for bit: a replay queues the very kernels and library
// calls of the eager step, so any difference is a graph that does other
// work (stale addresses, a conversion left out, a missed write).
//
// On a GPU the agreement is within graphTolerance, and the graphed model
// starts each iteration from the eager one's weights, momentum and running
// statistics (copied in place, so that the recorded addresses stay):
// cuDNN's fastest algorithms sum in a different order from call to call,
// and on these small networks (batch norm over four views) SGD steps grow
// such rounding differences (two eager tf32 models part from 1e-7 to 0.5
// in three steps) until they hide what a broken graph would show. There a
// second eager model, started from the same weights too, measures the
// rounding of each query, and the graph may not be more than a few times
// as far from the eager model as that.

// graphCfg is a narrow ResNet-18 on 8x8 inputs: every layer and kernel of
// the full network, at a size the emulator runs in moments.
func graphCfg(norm resnet18.Norm) resnet18.Config {
	return resnet18.Config{Width: 0.125, ProjDim: 16, InputSize: 8, Norm: norm}
}

// graphRig is one model trained eagerly or through GraphStep.
type graphRig struct {
	g      *cuda.Backend
	m      *resnet18.Model
	x, dz  tensor.Buffer
	mom    tensor.Buffer
	images int
}

func newGraphRig(g *cuda.Backend, cfg resnet18.Config, seed uint64, images int) *graphRig {
	m := resnet18.New(g, cfg, seed)
	views := 2 * images
	return &graphRig{g: g, m: m, images: images,
		x: g.Alloc(views * m.InputLen()), dz: g.Alloc(views * cfg.ProjDim), mom: g.Alloc(m.Params().Len())}
}

func (r *graphRig) free() {
	r.m.Free()
	for _, b := range []tensor.Buffer{r.x, r.dz, r.mom} {
		r.g.Free(b)
	}
}

// pass is the device work of one query: forward, loss, backward.
func (r *graphRig) pass(multilevel bool) {
	views := 2 * r.images
	z := r.m.Forward(r.x, views, true, true)
	r.g.QueueNTXent(r.images, r.m.Config().ProjDim, 0.5, multilevel, z, r.dz)
	r.m.Backward(r.dz)
}

// query uploads the views, runs the pass (through GraphStep when graphed)
// and returns the loss.
func (r *graphRig) query(t *testing.T, views []float32, multilevel, graphed bool) tensor.LossResult {
	t.Helper()
	r.g.Upload(r.x, views)
	if graphed {
		key := fmt.Sprintf("images=%d multilevel=%v", r.images, multilevel)
		if err := r.g.GraphStep(key, func() { r.pass(multilevel) }); err != nil {
			t.Fatal(err)
		}
	} else {
		r.pass(multilevel)
	}
	return r.g.ReadNTXent(multilevel)
}

// sgd updates the parameters from the last query's gradient.
func (r *graphRig) sgd() {
	p := r.m.Params()
	r.g.SGDStep(tensor.SGDConfig{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4}, p.Flat(), p.Grad(), r.mom)
}

// follow makes r's parameters, running statistics and momentum those of
// src, in place: the addresses a recorded graph holds stay, and the bf16
// weight copies are marked stale as an SGD step would.
func (r *graphRig) follow(src *graphRig) {
	p, q := r.m.Params(), src.m.Params()
	r.g.Copy(p.Flat(), q.Flat())
	r.g.Copy(p.State(), q.State())
	r.g.Copy(r.mom, src.mom)
}

// onGPU reports whether g runs on a GPU rather than the emulator.
func onGPU(g *cuda.Backend) bool { return !strings.Contains(g.Describe(), "emulator") }

// graphTolerance is how far a graphed query may be from the eager one
// made from the same weights: nothing on the emulator, whose libraries
// compute the same bits every time; on a GPU, cuDNN's fastest algorithms
// may sum in a different order from one call to the next (atomics), so
// the parity tolerance of a training step instead (a graph using stale
// buffers is off by far more).
func graphTolerance(g *cuda.Backend) float64 {
	if !onGPU(g) {
		return 0
	}
	return 1e-2
}

// relDiff is how far b is from a (relErr: the largest difference over the
// largest magnitude of a).
func relDiff(g *cuda.Backend, a, b tensor.Buffer) float64 {
	x, y := make([]float32, a.Len()), make([]float32, b.Len())
	g.Download(x, a)
	g.Download(y, b)
	e, _ := relErr(y, x)
	return e
}

// graphNoiseFactor and graphNoiseFloor bound, on a GPU, a graphed query's
// difference from the eager one by the difference between two eager
// queries from the same weights: at most graphNoiseFactor times it, or
// graphNoiseFloor where the two agree more closely (bf16's eager queries
// agree bit for bit). A graph that used stale weights or buffers would
// differ by orders of magnitude more.
const (
	graphNoiseFactor = 10
	graphNoiseFloor  = 1e-4
)

// sameAsNoise fails, on a GPU, when graph is further from eager than a
// second eager model, twin, allows (graphNoiseFactor, graphNoiseFloor); it
// logs both differences.
func sameAsNoise(t *testing.T, g *cuda.Backend, what string, eager, twin, graph tensor.Buffer) {
	t.Helper()
	noise, got := relDiff(g, eager, twin), relDiff(g, eager, graph)
	t.Logf("%s: the graph %.3g from the eager model, a second eager model %.3g", what, got, noise)
	if bound := max(graphNoiseFloor, graphNoiseFactor*noise); got > bound {
		t.Fatalf("%s: the graph is %.3g from the eager model, more than %.3g (%d times the %.3g between two eager models)", what, got, bound, graphNoiseFactor, noise)
	}
}

// sameBits fails unless a and b hold the same float32 bit patterns (within
// graphTolerance on a GPU).
func sameBits(t *testing.T, g *cuda.Backend, what string, a, b tensor.Buffer) {
	t.Helper()
	x, y := make([]float32, a.Len()), make([]float32, b.Len())
	g.Download(x, a)
	g.Download(y, b)
	if tol := graphTolerance(g); tol > 0 {
		if e, at := relErr(y, x); e > tol {
			t.Fatalf("%s: relative difference %.3g > %.3g (at %d: eager %g, graph %g)", what, e, tol, at, x[at], y[at])
		}
		return
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			t.Fatalf("%s differs at %d of %d: eager %g, graph %g", what, i, len(x), x[i], y[i])
		}
	}
}

// sameLoss is sameBits for a loss.
func sameLoss(t *testing.T, g *cuda.Backend, what string, eager, graph float64) {
	t.Helper()
	tol := graphTolerance(g)
	if tol == 0 && math.Float64bits(eager) != math.Float64bits(graph) || !(math.Abs(eager-graph) <= tol*math.Abs(eager)) {
		t.Fatalf("%s: eager %v, graph %v", what, eager, graph)
	}
}

func randomViews(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func TestGraphStepMatchesEager(t *testing.T) {
	for _, tc := range []struct {
		precision string
		norm      resnet18.Norm
		images    []int
		seed      uint64
	}{
		{"fp32", resnet18.NormBatch, []int{2, 32}, 1},
		{"fp32", resnet18.NormBatch, []int{8}, 2},
		{"tf32", resnet18.NormBatch, []int{4}, 3},
		// Group norm's kernels are slow on the emulator: one shape.
		{"fp32", resnet18.NormGroup, []int{2}, 4},
		// bf16: the weight copies are remade by every replay after the
		// SGD step wrote the weights.
		{"bf16", resnet18.NormBatch, []int{2}, 5},
	} {
		t.Run(fmt.Sprintf("%s/%s/seed=%d", tc.precision, tc.norm, tc.seed), func(t *testing.T) {
			g := openCUDA(t, cuda.Options{Precision: tc.precision})
			defer g.Close()
			cfg := graphCfg(tc.norm)
			rng := rand.New(rand.NewPCG(tc.seed, 7))
			for _, images := range tc.images {
				eager := newGraphRig(g, cfg, tc.seed, images)
				graph := newGraphRig(g, cfg, tc.seed, images)
				var twin *graphRig // a second eager model, on a GPU
				if onGPU(g) {
					twin = newGraphRig(g, cfg, tc.seed, images)
				}
				// Each iteration queries L_B alone and H^l, as an MLMC
				// step's queries do, then takes an SGD step; each key sees
				// four queries: eager, recorded, then two replays. The
				// second query of an iteration finds the weights unchanged
				// since the first (bf16: their copies fresh), and the order
				// alternates, so that each graph is replayed both first and
				// second after a step though recorded in one place.
				for it := range 4 {
					if twin != nil {
						graph.follow(eager)
						twin.follow(eager)
					}
					views := randomViews(rng, 2*images*eager.m.InputLen())
					for _, multilevel := range [][]bool{{false, true}, {true, false}}[it%2] {
						what := fmt.Sprintf("images=%d iteration %d multilevel=%v", images, it, multilevel)
						le := eager.query(t, views, multilevel, false)
						if twin != nil {
							twin.query(t, views, multilevel, false)
						}
						lg := graph.query(t, views, multilevel, true)
						sameLoss(t, g, what+" loss", le.Loss, lg.Loss)
						sameLoss(t, g, what+" full loss", le.Full, lg.Full)
						sameBits(t, g, what+" gradient", eager.m.Params().Grad(), graph.m.Params().Grad())
						if twin != nil {
							sameAsNoise(t, g, what+" gradient", eager.m.Params().Grad(), twin.m.Params().Grad(), graph.m.Params().Grad())
						}
					}
					eager.sgd()
					graph.sgd()
				}
				sameBits(t, g, fmt.Sprintf("images=%d parameters", images), eager.m.Params().Flat(), graph.m.Params().Flat())
				sameBits(t, g, fmt.Sprintf("images=%d running statistics", images), eager.m.Params().State(), graph.m.Params().State())
				eager.free()
				graph.free()
				if twin != nil {
					twin.free()
				}
			}
			if err := g.Sync(); err != nil {
				t.Fatal(err)
			}
			st := g.GraphStats()
			// Two keys per level shape, each recorded once and replayed
			// twice; a shape's models freed afterwards drop its graphs.
			if want := 2 * len(tc.images); st.Captures != want || st.Replays != 2*want || len(st.Refused) != 0 {
				t.Fatalf("graph stats %+v: want %d captures, %d replays, none refused", st, want, 2*want)
			}
			if st.Invalidations != st.Captures {
				t.Fatalf("graph stats %+v: freeing the models dropped %d of %d graphs", st, st.Invalidations, st.Captures)
			}
		})
	}
}

// TestGraphStepInvalidatedWhenBuffersMove frees the graphed model's
// parameters and activations after its graph was recorded and puts a new
// model (same seed) at other addresses: a graph kept across that would
// read freed memory and train nothing. The step must be recorded again,
// and every step still match the eager model's.
func TestGraphStepInvalidatedWhenBuffersMove(t *testing.T) {
	g := openCUDA(t, cuda.Options{Precision: "fp32"})
	defer g.Close()
	cfg := graphCfg(resnet18.NormBatch)
	const images = 4
	rng := rand.New(rand.NewPCG(11, 12))
	eager := newGraphRig(g, cfg, 3, images)
	graph := newGraphRig(g, cfg, 3, images)
	defer eager.free()
	run := func(steps int) {
		for i := range steps {
			if onGPU(g) {
				graph.follow(eager)
			}
			views := randomViews(rng, 2*images*eager.m.InputLen())
			le := eager.query(t, views, false, false)
			lg := graph.query(t, views, false, true)
			sameLoss(t, g, "loss", le.Loss, lg.Loss)
			sameBits(t, g, fmt.Sprintf("step %d gradient", i), eager.m.Params().Grad(), graph.m.Params().Grad())
			eager.sgd()
			graph.sgd()
		}
	}
	run(3)
	if st := g.GraphStats(); st.Captures != 1 || st.Replays != 1 {
		t.Fatalf("before the move: %+v", st)
	}
	// The same trained weights, moved: copied out, the model freed, a
	// spacer taking the freed memory's start, a new model loaded with them.
	params := make([]float32, graph.m.Params().Len())
	state := make([]float32, graph.m.Params().State().Len())
	mom := make([]float32, graph.mom.Len())
	g.Download(params, graph.m.Params().Flat())
	g.Download(state, graph.m.Params().State())
	g.Download(mom, graph.mom)
	graph.free()
	spacer := g.Alloc(1 << 16)
	defer g.Free(spacer)
	graph = newGraphRig(g, cfg, 3, images)
	defer graph.free()
	g.Upload(graph.m.Params().Flat(), params)
	g.Upload(graph.m.Params().State(), state)
	g.Upload(graph.mom, mom)
	if st := g.GraphStats(); st.Invalidations != 1 {
		t.Fatalf("after the move: %+v, want the graph dropped", st)
	}
	run(4)
	sameBits(t, g, "parameters", eager.m.Params().Flat(), graph.m.Params().Flat())
	sameBits(t, g, "running statistics", eager.m.Params().State(), graph.m.Params().State())
	if st := g.GraphStats(); st.Captures != 2 || st.Replays != 3 {
		t.Fatalf("after the move: %+v, want the step recorded again and replayed", st)
	}

	// Activations moved (the plans freed and remade) drop it as well.
	graph.m.FreePlans()
	if st := g.GraphStats(); st.Invalidations != 2 {
		t.Fatalf("after FreePlans: %+v, want the graph dropped", st)
	}
	run(3)
	sameBits(t, g, "parameters after the plans moved", eager.m.Params().Flat(), graph.m.Params().Flat())
}

// TestGraphStepRefusesHostWork gives GraphStep steps that a graph cannot
// hold: the capture must be refused with the operation named, and the
// step run eagerly, exactly once per call (batch norm's running
// statistics would show a step run twice or not at all).
func TestGraphStepRefusesHostWork(t *testing.T) {
	for _, tc := range []struct {
		name, why string
		extra     func(g *cuda.Backend, r *graphRig)
	}{
		{"loss read", "a read of results to the host", func(g *cuda.Backend, r *graphRig) {
			g.ReadNTXent(false)
		}},
		{"sync", "Sync", func(g *cuda.Backend, r *graphRig) {
			_ = g.Sync()
		}},
		{"upload", "Upload", func(g *cuda.Backend, r *graphRig) {
			g.Upload(r.dz, make([]float32, r.dz.Len()))
		}},
		{"alloc", "Alloc", func(g *cuda.Backend, r *graphRig) {
			// Alloc promises zeros, even while its memset was recorded:
			// the gradient stays as it is.
			grad := r.m.Params().Grad()
			buf := g.Alloc(grad.Len())
			g.Axpy(grad, 1, buf)
			g.Free(buf)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := openCUDA(t, cuda.Options{Precision: "fp32"})
			defer g.Close()
			cfg := graphCfg(resnet18.NormBatch)
			const images = 2
			eager := newGraphRig(g, cfg, 5, images)
			graph := newGraphRig(g, cfg, 5, images)
			rng := rand.New(rand.NewPCG(21, 22))
			for it := range 4 {
				views := randomViews(rng, 2*images*eager.m.InputLen())
				for _, r := range []*graphRig{eager, graph} {
					g.Upload(r.x, views)
				}
				eager.pass(false)
				tc.extra(g, eager)
				if err := g.GraphStep("refused", func() {
					graph.pass(false)
					tc.extra(g, graph)
				}); err != nil {
					t.Fatal(err)
				}
				sameBits(t, g, fmt.Sprintf("step %d gradient", it), eager.m.Params().Grad(), graph.m.Params().Grad())
				sameBits(t, g, fmt.Sprintf("step %d running statistics", it), eager.m.Params().State(), graph.m.Params().State())
			}
			st := g.GraphStats()
			why := st.Refused["refused"]
			if !strings.Contains(why, tc.why) || st.Captures != 0 || st.Replays != 0 || st.Eager != 4 {
				t.Fatalf("graph stats %+v: want the capture refused for %q and 4 eager steps", st, tc.why)
			}
			t.Logf("refused: %s", why)
		})
	}
}

// TestGraphStepAllocationBeyondTheArenaFails: a step that needs a new
// chunk of device memory while it is recorded cannot have it (cuMemAlloc
// is not permitted during a capture); the backend must say so, not run on.
func TestGraphStepAllocationBeyondTheArenaFails(t *testing.T) {
	g := openCUDA(t, cuda.Options{Precision: "fp32", ChunkBytes: 1 << 20})
	defer g.Close()
	calls := 0
	step := func() {
		calls++
		if calls == 2 {
			buf := g.Alloc(1 << 20) // larger than what the chunks have free
			g.Free(buf)
		}
	}
	for range 2 {
		if err := g.GraphStep("grows", step); err != nil {
			if !strings.Contains(err.Error(), "while it was being recorded") {
				t.Fatalf("error %q does not say why", err)
			}
			return
		}
	}
	t.Fatal("a step that grew the arena while recorded did not fail")
}

// TestRefusedCaptureKeepsBF16WeightsCurrent: a capture that is refused
// after the step converted its weights to bf16 (a host read of the loss
// inside the step; cuDNN's backend API, which is never recorded) recorded
// conversions that never ran; the eager rerun must convert again, so that
// in bf16 a refused graph step trains as the eager one does, bit for bit,
// step after step of SGD (on a GPU within graphTolerance, each step from
// the eager model's weights).
func TestRefusedCaptureKeepsBF16WeightsCurrent(t *testing.T) {
	for _, tc := range []struct {
		name, api string
		hostRead  bool // the step reads its loss to the host (NTXent)
	}{
		{"loss read inside the step", cuda.ConvAPILegacy, true},
		{"backend API convolutions", cuda.ConvAPIGraph, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := openCUDA(t, cuda.Options{Precision: "bf16", ConvAPI: tc.api})
			defer g.Close()
			cfg := graphCfg(resnet18.NormBatch)
			rng := rand.New(rand.NewPCG(5, 7))
			const images = 2
			eager := newGraphRig(g, cfg, 5, images)
			graph := newGraphRig(g, cfg, 5, images)
			run := func(r *graphRig, views []float32, graphed bool) float64 {
				if !tc.hostRead {
					return r.query(t, views, false, graphed).Loss
				}
				r.g.Upload(r.x, views)
				var res tensor.LossResult
				pass := func() {
					z := r.m.Forward(r.x, 2*images, true, true)
					res = r.g.NTXent(images, cfg.ProjDim, 0.5, false, z, r.dz)
					r.m.Backward(r.dz)
				}
				if !graphed {
					pass()
				} else if err := r.g.GraphStep("refused", pass); err != nil {
					t.Fatal(err)
				}
				return res.Loss
			}
			for it := range 3 {
				if onGPU(g) {
					graph.follow(eager)
				}
				views := randomViews(rng, 2*images*eager.m.InputLen())
				le, lg := run(eager, views, false), run(graph, views, true)
				what := fmt.Sprintf("iteration %d", it)
				sameLoss(t, g, what+" loss", le, lg)
				sameBits(t, g, what+" gradient", eager.m.Params().Grad(), graph.m.Params().Grad())
				eager.sgd()
				graph.sgd()
			}
			if st := g.GraphStats(); st.Replays != 0 || len(st.Refused) == 0 {
				t.Errorf("graph stats %+v: want every capture refused, none replayed", st)
			}
		})
	}
}
