package cuda_test

// Benchmarks of the CUDA backend; they skip without a GPU. On a GPU machine:
//
//	go test -c -o cuda.test ./backend/cuda && ./cuda.test -test.run '^$' -test.bench . -test.benchtime 20x

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

// openBench opens one backend for a whole benchmark function and its
// sub-benchmarks. It is called from the top-level function (run once, with
// b.N = 1, when it has sub-benchmarks), never inside b.Run: the testing
// package calls a sub-benchmark's function several times while it sizes
// b.N, and an Open each time (context, NVRTC compile or cache load, cuDNN
// handle) costs seconds and device memory that are no part of what is
// measured.
//
// Two settings for finding out why a convolution is slow:
// SIMCLR_BENCH_CUDNN_LOG=1 writes cuDNN's measured algorithms and the
// choice of each shape to stderr (Options.AlgoLog), and
// SIMCLR_BENCH_WORKSPACE_MIB=N bounds the convolution workspace at N MiB
// instead of the default.
func openBench(b *testing.B, precision, convAPI string) *cuda.Backend {
	opts := cuda.Options{Precision: precision, ConvAPI: convAPI}
	if os.Getenv("SIMCLR_BENCH_CUDNN_LOG") == "1" {
		opts.AlgoLog = os.Stderr
	}
	if v := os.Getenv("SIMCLR_BENCH_WORKSPACE_MIB"); v != "" {
		mib, err := strconv.ParseUint(v, 10, 64)
		if err != nil || mib == 0 {
			b.Fatalf("SIMCLR_BENCH_WORKSPACE_MIB=%q: want a whole number of MiB above 0", v)
		}
		opts.WorkspaceBytes = mib << 20
	}
	g, err := cuda.Open(opts)
	if err != nil {
		b.Skipf("no usable GPU: %v", err)
	}
	b.Cleanup(func() { g.Close() })
	return g
}

// benchVariant is a precision and the cuDNN convolution API it runs on;
// the legacy API's runs keep the plain precision as their name.
type benchVariant struct{ precision, convAPI string }

func (v benchVariant) name() string {
	if v.convAPI == cuda.ConvAPILegacy {
		return v.precision
	}
	return v.precision + "-" + v.convAPI
}

// benchVariants: each precision on the legacy API, and bf16 (whose fast
// kernels only the backend API reaches) and tf32 on the backend API,
// falling back to the legacy API per shape where it has no engine (the
// reason on stderr).
var benchVariants = []benchVariant{
	{"tf32", cuda.ConvAPILegacy}, {"fp32", cuda.ConvAPILegacy}, {"bf16", cuda.ConvAPILegacy},
	{"bf16", cuda.ConvAPIGraph}, {"tf32", cuda.ConvAPIGraph},
}

// BenchmarkConv is forward + backward of ResNet-18's most expensive 3x3
// convolutions at 512 views; it reports TFLOP/s (forward FLOPs x 3).
func BenchmarkConv(b *testing.B) {
	shapes := []tensor.ConvShape{
		{N: 512, C: 64, H: 32, W: 32, K: 64, R: 3, S: 3, Stride: 1, Pad: 1},
		{N: 512, C: 128, H: 16, W: 16, K: 128, R: 3, S: 3, Stride: 1, Pad: 1},
		{N: 512, C: 512, H: 4, W: 4, K: 512, R: 3, S: 3, Stride: 1, Pad: 1},
	}
	for _, v := range benchVariants {
		g := openBench(b, v.precision, v.convAPI)
		for _, s := range shapes {
			b.Run(fmt.Sprintf("%s/C=%d/HW=%d", v.name(), s.C, s.H), func(b *testing.B) {
				x, w, y := g.Alloc(s.InLen()), g.Alloc(s.WeightLen()), g.Alloc(s.OutLen())
				dx, dw := g.Alloc(s.InLen()), g.Alloc(s.WeightLen())
				defer freeAll(g, x, w, y, dx, dw)
				g.Conv2dForward(s, x, w, y) // plan and find algorithms outside the timing
				g.Conv2dBackward(s, x, w, y, dx, dw)
				if err := g.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					g.Conv2dForward(s, x, w, y)
					g.Conv2dBackward(s, x, w, y, dx, dw)
				}
				if err := g.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(3*s.FLOPs()*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
			})
		}
	}
}

// freeAll returns benchmark buffers to the shared backend's arena.
// benchStep is what a training-step benchmark holds: a full-width
// ResNet-18 at 32x32, the views of images images, the loss's gradient and
// the optimiser's momentum.
type benchStep struct {
	g          *cuda.Backend
	m          *resnet18.Model
	x, dz, mom tensor.Buffer
	p          *nn.Params
	views      int
}

const benchProjDim = 128

var benchSGD = tensor.SGDConfig{LR: 0.01, Momentum: 0.9, WeightDecay: 5e-4}

func newBenchStep(g *cuda.Backend, images int) *benchStep {
	m := resnet18.New(g, resnet18.Config{Width: 1, ProjDim: benchProjDim, InputSize: 32}, 1)
	views := 2 * images
	p := m.Params()
	return &benchStep{g: g, m: m, x: g.Alloc(views * 3 * 32 * 32), dz: g.Alloc(views * benchProjDim), mom: g.Alloc(p.Len()), p: p, views: views}
}

func (s *benchStep) free() {
	freeAll(s.g, s.x, s.dz, s.mom)
	s.m.Free()
}

func freeAll(g *cuda.Backend, bufs ...tensor.Buffer) {
	for _, x := range bufs {
		g.Free(x)
	}
}

// BenchmarkNTXent is the multilevel loss and its gradient at 512 images.
func BenchmarkNTXent(b *testing.B) {
	g := openBench(b, "tf32", cuda.ConvAPILegacy)
	b.Run("images=512", func(b *testing.B) {
		n, d := 512, 128
		z, dz := g.Alloc(2*n*d), g.Alloc(2*n*d)
		defer freeAll(g, z, dz)
		g.Upload(z, make([]float32, 2*n*d))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			g.NTXent(n, d, 0.5, true, z, dz)
		}
		if err := g.Sync(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkResNet18Step is one training step (forward, loss, backward,
// SGD) of ResNet-18 at 2^L images; it reports views/s and the arena's
// peak. One backend serves each precision; every run frees what it
// allocated and the sizes grow, so the peak read after a run is that run's.
func BenchmarkResNet18Step(b *testing.B) {
	for _, v := range benchVariants {
		g := openBench(b, v.precision, v.convAPI)
		for _, images := range []int{64, 256, 512} {
			b.Run(fmt.Sprintf("%s/images=%d", v.name(), images), func(b *testing.B) {
				st := newBenchStep(g, images)
				defer st.free()
				m, x, dz, p, mom, views := st.m, st.x, st.dz, st.p, st.mom, st.views
				step := func() {
					z := m.Forward(x, views, true, true)
					g.NTXent(images, benchProjDim, 0.5, false, z, dz)
					m.Backward(dz)
					g.SGDStep(benchSGD, p.Flat(), p.Grad(), mom)
				}
				step()
				if err := g.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					step()
				}
				if err := g.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(views*b.N)/b.Elapsed().Seconds(), "views/s")
				_, peak, _ := g.MemoryInUse()
				b.ReportMetric(float64(peak)/(1<<20), "peakMiB")
			})
		}
	}
}

// BenchmarkGraphStep is the training step of BenchmarkResNet18Step
// (forward, NT-Xent with its loss read to the host, backward, SGD) at the
// small level shapes MLMC queries most often, run eagerly and through
// GraphStep (recorded once, then replayed with one launch): the difference
// is the host's cost per kernel and library call. It reports ms/step,
// views/s and the share of timed steps that were replays (1 when the
// graph held, 0 when the capture was refused).
func BenchmarkGraphStep(b *testing.B) {
	for _, precision := range []string{"tf32", "bf16"} {
		g := openBench(b, precision, cuda.ConvAPILegacy)
		for _, images := range []int{2, 8, 32} {
			for _, graphed := range []bool{false, true} {
				mode := "eager"
				if graphed {
					mode = "graph"
				}
				b.Run(fmt.Sprintf("%s/images=%d/%s", precision, images, mode), func(b *testing.B) {
					st := newBenchStep(g, images)
					defer st.free()
					m, x, dz, p, mom, views := st.m, st.x, st.dz, st.p, st.mom, st.views
					pass := func() {
						z := m.Forward(x, views, true, true)
						g.QueueNTXent(images, benchProjDim, 0.5, false, z, dz)
						m.Backward(dz)
					}
					key := fmt.Sprintf("bench images=%d", images)
					step := func() {
						if graphed {
							if err := g.GraphStep(key, pass); err != nil {
								b.Fatal(err)
							}
						} else {
							pass()
						}
						g.ReadNTXent(false)
						g.SGDStep(benchSGD, p.Flat(), p.Grad(), mom)
					}
					// Eager, recorded, first replay: all before the clock.
					for range 3 {
						step()
					}
					if err := g.Sync(); err != nil {
						b.Fatal(err)
					}
					before := g.GraphStats().Replays
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						step()
					}
					if err := g.Sync(); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/step")
					b.ReportMetric(float64(views*b.N)/b.Elapsed().Seconds(), "views/s")
					b.ReportMetric(float64(g.GraphStats().Replays-before)/float64(b.N), "replays/step")
					if why, refused := g.GraphStats().Refused[key]; refused && graphed {
						b.Logf("%s: the step ran eagerly: %s", key, why)
					}
				})
			}
		}
	}
}

// BenchmarkStageOne times the layers of ResNet-18's first stage one by one
// at 512 images (1,024 views of 64 channels, 32x32), where a step spends
// most of its time: the convolution (forward and both gradients), the
// training-mode batch norm with residual add and ReLU, its backward pass,
// and the ReLU's backward pass. Set against a step's time, it says how much
// of the step the convolutions take and how much the fp32 layers between
// them.
func BenchmarkStageOne(b *testing.B) {
	const views, c, hw = 1024, 64, 32
	s := tensor.ConvShape{N: views, C: c, H: hw, W: hw, K: c, R: 3, S: 3, Stride: 1, Pad: 1}
	bn := tensor.BNShape{N: views, C: c, HW: hw * hw, Eps: 1e-5, Momentum: 0.1}
	for _, precision := range []string{"tf32", "bf16"} {
		g := openBench(b, precision, cuda.ConvAPILegacy)
		n := s.InLen()
		x, y, dy, dx := g.Alloc(n), g.Alloc(n), g.Alloc(n), g.Alloc(n)
		w, dw := g.Alloc(s.WeightLen()), g.Alloc(s.WeightLen())
		gamma, beta, mean, inv, rm, rv, dg, db := g.Alloc(c), g.Alloc(c), g.Alloc(c), g.Alloc(c), g.Alloc(c), g.Alloc(c), g.Alloc(c), g.Alloc(c)
		for _, l := range []struct {
			name string
			run  func()
		}{
			{"conv", func() { g.Conv2dForward(s, x, w, y); g.Conv2dBackward(s, x, w, dy, dx, dw) }},
			{"bn-add-relu", func() { g.BatchNormAddReLUForwardTrain(bn, x, gamma, beta, dy, y, mean, inv, rm, rv) }},
			{"bn-backward", func() { g.BatchNormBackward(bn, x, dy, gamma, mean, inv, dx, dg, db) }},
			{"relu-backward", func() { g.ReLUBackward(y, dy, dy) }},
		} {
			b.Run(precision+"/"+l.name, func(b *testing.B) {
				l.run() // plans and algorithm searches outside the timing
				if err := g.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					l.run()
				}
				if err := g.Sync(); err != nil {
					b.Fatal(err)
				}
			})
		}
		freeAll(g, x, y, dy, dx, w, dw, gamma, beta, mean, inv, rm, rv, dg, db)
	}
}
