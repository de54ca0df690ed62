package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/tensor"
)

// resnet18Convs are the distinct convolutions of the CIFAR ResNet-18 at
// 128 views (64 images x 2) of 32x32, with how often each runs per
// forward pass.
var resnet18Convs = []struct {
	name  string
	shape tensor.ConvShape
	count int
}{
	{"Stem3x3_3to64_32", tensor.ConvShape{N: 128, C: 3, H: 32, W: 32, K: 64, R: 3, S: 3, Stride: 1, Pad: 1}, 1},
	{"L1_3x3_64_32", tensor.ConvShape{N: 128, C: 64, H: 32, W: 32, K: 64, R: 3, S: 3, Stride: 1, Pad: 1}, 4},
	{"L2Down3x3_64to128_s2", tensor.ConvShape{N: 128, C: 64, H: 32, W: 32, K: 128, R: 3, S: 3, Stride: 2, Pad: 1}, 1},
	{"L2Short1x1_64to128_s2", tensor.ConvShape{N: 128, C: 64, H: 32, W: 32, K: 128, R: 1, S: 1, Stride: 2, Pad: 0}, 1},
	{"L2_3x3_128_16", tensor.ConvShape{N: 128, C: 128, H: 16, W: 16, K: 128, R: 3, S: 3, Stride: 1, Pad: 1}, 3},
	{"L3Down3x3_128to256_s2", tensor.ConvShape{N: 128, C: 128, H: 16, W: 16, K: 256, R: 3, S: 3, Stride: 2, Pad: 1}, 1},
	{"L3_3x3_256_8", tensor.ConvShape{N: 128, C: 256, H: 8, W: 8, K: 256, R: 3, S: 3, Stride: 1, Pad: 1}, 3},
	{"L4Down3x3_256to512_s2", tensor.ConvShape{N: 128, C: 256, H: 8, W: 8, K: 512, R: 3, S: 3, Stride: 2, Pad: 1}, 1},
	{"L4_3x3_512_4", tensor.ConvShape{N: 128, C: 512, H: 4, W: 4, K: 512, R: 3, S: 3, Stride: 1, Pad: 1}, 3},
}

// BenchmarkConvForward and BenchmarkConvBackward time each ResNet-18
// convolution shape at batch 128 and report GFLOP/s (the backward pass
// counts 2x the forward FLOPs: data and filter gradients; 1x for the stem,
// whose input needs no gradient).
//
//	go test ./backend/cpu -run '^$' -bench Conv -benchtime 3x
func BenchmarkConvForward(b *testing.B) {
	for _, c := range resnet18Convs {
		b.Run(c.name, func(b *testing.B) {
			be := New()
			s := c.shape
			rng := rand.New(rand.NewPCG(1, 1))
			x, w, y := upload(be, randSlice(rng, s.InLen())), upload(be, randSlice(rng, s.WeightLen())), be.Alloc(s.OutLen())
			be.Conv2dForward(s, x, w, y) // grow the workspace
			b.ResetTimer()
			cpu0 := processCPUTime()
			for b.Loop() {
				be.Conv2dForward(s, x, w, y)
			}
			reportRates(b, s.FLOPs(), processCPUTime()-cpu0)
		})
	}
}

func BenchmarkConvBackward(b *testing.B) {
	for _, c := range resnet18Convs {
		b.Run(c.name, func(b *testing.B) {
			be := New()
			s := c.shape
			rng := rand.New(rand.NewPCG(1, 1))
			x, w := upload(be, randSlice(rng, s.InLen())), upload(be, randSlice(rng, s.WeightLen()))
			dy, dw := upload(be, randSlice(rng, s.OutLen())), be.Alloc(s.WeightLen())
			var dx tensor.Buffer
			flops := s.FLOPs()
			if s.C > 3 {
				dx = be.Alloc(s.InLen())
				flops *= 2
			}
			be.Conv2dBackward(s, x, w, dy, dx, dw)
			b.ResetTimer()
			cpu0 := processCPUTime()
			for b.Loop() {
				be.Conv2dBackward(s, x, w, dy, dx, dw)
			}
			reportRates(b, flops, processCPUTime()-cpu0)
		})
	}
}

// processCPUTime is the user+system CPU time of the process, all threads
// (OpenBLAS's included).
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRates reports GFLOP/s of wall time and GFLOP per CPU-second: on a
// machine shared with other work the wall rate drops with the share of the
// cores the benchmark gets, while the CPU rate measures the kernel's own
// efficiency (times the cores it would get alone, roughly its wall rate then).
func reportRates(b *testing.B, flopsPerOp float64, cpu time.Duration) {
	total := flopsPerOp * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu > 0 {
		b.ReportMetric(total/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// convStep is every convolution of one ResNet-18 training step at a batch
// of views, with random inputs on a backend, and the model FLOPs of its
// forward and backward passes.
type convStep struct {
	layers []convStepLayer
	flops  float64
}

type convStepLayer struct {
	s               tensor.ConvShape
	count           int
	x, w, y, dx, dw tensor.Buffer
}

func newConvStep(be *Backend, views int) convStep {
	rng := rand.New(rand.NewPCG(1, 1))
	var c convStep
	for _, conv := range resnet18Convs {
		s := conv.shape
		s.N = views
		l := convStepLayer{s: s, count: conv.count, x: upload(be, randSlice(rng, s.InLen())), w: upload(be, randSlice(rng, s.WeightLen())),
			y: upload(be, randSlice(rng, s.OutLen())), dw: be.Alloc(s.WeightLen())}
		c.flops += float64(conv.count) * s.FLOPs() * 2
		if s.C > 3 { // the stem needs no data gradient
			l.dx = be.Alloc(s.InLen())
			c.flops += float64(conv.count) * s.FLOPs()
		}
		c.layers = append(c.layers, l)
	}
	return c
}

// run is the step's forward convolutions in order, then the backward ones
// in reverse, each as often as the network has it.
func (c convStep) run(be *Backend) {
	for _, l := range c.layers {
		for range l.count {
			be.Conv2dForward(l.s, l.x, l.w, l.y)
		}
	}
	for i := len(c.layers) - 1; i >= 0; i-- {
		l := c.layers[i]
		for range l.count {
			be.Conv2dBackward(l.s, l.x, l.w, l.y, l.dx, l.dw)
		}
	}
}

// BenchmarkResNet18Convs runs every convolution of one ResNet-18 training
// step at 128 views (forward, then backward), each as often as the network
// does, and reports the views per second the convolutions alone allow.
//
//	go test ./backend/cpu -run '^$' -bench ResNet18Convs -benchtime 2x
func BenchmarkResNet18Convs(b *testing.B) {
	be := New()
	step := newConvStep(be, 128)
	b.ResetTimer()
	cpu0 := processCPUTime()
	for b.Loop() {
		step.run(be)
	}
	reportRates(b, step.flops, processCPUTime()-cpu0)
	b.ReportMetric(128*float64(b.N)/b.Elapsed().Seconds(), "views/s")
}

// BenchmarkSmallBatchConvs runs every convolution of one ResNet-18 training
// step (forward, then backward) at MLMC's small batches, once with the work
// split over images and once over channels, and reports the views per
// second the convolutions alone allow; auto-purego is the automatic split on
// the pure-Go SGEMM, which should stay within 2x of OpenBLAS.
//
//	go test ./backend/cpu -run '^$' -bench SmallBatchConvs -benchtime 10x
func BenchmarkSmallBatchConvs(b *testing.B) {
	for _, views := range []int{4, 8, 16, 32} {
		for _, sp := range []struct {
			name   string
			split  convSplit
			pureGo bool
		}{{"images", splitImages, false}, {"channels", splitChannels, false}, {"auto", splitAuto, false}, {"auto-purego", splitAuto, true}} {
			b.Run(fmt.Sprintf("views%d/%s", views, sp.name), func(b *testing.B) {
				be := New()
				if sp.pureGo {
					be = NewWith(blas.PureGo(1), runtime.NumCPU())
				}
				be.convSplit = sp.split
				step := newConvStep(be, views)
				step.run(be)
				b.ResetTimer()
				cpu0 := processCPUTime()
				for b.Loop() {
					step.run(be)
				}
				reportRates(b, step.flops, processCPUTime()-cpu0)
				b.ReportMetric(float64(views)*float64(b.N)/b.Elapsed().Seconds(), "views/s")
			})
		}
	}
}

// BenchmarkConvAlgorithms times each 3x3 stride-1 ResNet-18 convolution
// (and the stem) forward and backward at 4 to 128 views with each
// algorithm forced, reporting model GFLOP (three times the forward FLOPs)
// per CPU-second: the per-layer evidence behind convAlgorithm.
//
//	go test ./backend/cpu -run '^$' -bench ConvAlgorithms -benchtime 5x
func BenchmarkConvAlgorithms(b *testing.B) {
	for _, views := range []int{4, 8, 16, 32, 128} {
		for _, c := range resnet18Convs {
			if !winogradEligible(c.shape) {
				continue
			}
			for _, algo := range []struct {
				name string
				algo convAlgo
			}{{"im2col", algoIm2col}, {"winograd", algoWinograd}} {
				b.Run(fmt.Sprintf("views%d/%s/%s", views, c.name, algo.name), func(b *testing.B) {
					be := New()
					be.convAlgo = algo.algo
					s := c.shape
					s.N = views
					rng := rand.New(rand.NewPCG(1, 1))
					x, w := upload(be, randSlice(rng, s.InLen())), upload(be, randSlice(rng, s.WeightLen()))
					y, dy, dw := be.Alloc(s.OutLen()), upload(be, randSlice(rng, s.OutLen())), be.Alloc(s.WeightLen())
					var dx tensor.Buffer
					flops := 2 * s.FLOPs()
					if s.C > 3 {
						dx = be.Alloc(s.InLen())
						flops += s.FLOPs()
					}
					run := func() {
						be.Conv2dForward(s, x, w, y)
						be.Conv2dBackward(s, x, w, dy, dx, dw)
					}
					run()
					b.ResetTimer()
					cpu0 := processCPUTime()
					for b.Loop() {
						run()
					}
					reportRates(b, flops, processCPUTime()-cpu0)
				})
			}
		}
	}
}

// BenchmarkWinoFilters times the filter transform of a 256-channel 3x3
// layer (ResNet-18's third stage), which runs every forward and backward
// call of a Winograd layer whatever the batch.
func BenchmarkWinoFilters(b *testing.B) {
	const K, C = 256, 256
	w := make([]float32, K*C*9)
	for i := range w {
		w[i] = float32(i%11) - 5
	}
	u := make([]float32, winoTile*planeStride(K*C))
	for b.Loop() {
		winoFilters(w, K, C, 0, K, u)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(K*C), "ns/filter")
}

// BenchmarkBatchNormAddReLU times the training-mode batch norm, residual
// add and ReLU after a first-stage ResNet-18 convolution at 4 and 16
// views, as three kernels and fused into one.
//
//	go test ./backend/cpu -run '^$' -bench BatchNormAddReLU
func BenchmarkBatchNormAddReLU(b *testing.B) {
	be := New()
	for _, views := range []int{4, 16} {
		s := tensor.BNShape{N: views, C: 64, HW: 32 * 32, Eps: 1e-5, Momentum: 0.1}
		rng := rand.New(rand.NewPCG(1, 2))
		n := s.N * s.C * s.HW
		x, res, y := upload(be, randSlice(rng, n)), upload(be, randSlice(rng, n)), be.Alloc(n)
		g, bt, m, is := upload(be, randSlice(rng, s.C)), upload(be, randSlice(rng, s.C)), be.Alloc(s.C), be.Alloc(s.C)
		b.Run(fmt.Sprintf("views%d/separate", views), func(b *testing.B) {
			for b.Loop() {
				be.BatchNormForwardTrain(s, x, g, bt, y, m, is, nil, nil)
				be.Add(y, y, res)
				be.ReLUForward(y, y)
			}
		})
		b.Run(fmt.Sprintf("views%d/fused", views), func(b *testing.B) {
			for b.Loop() {
				be.BatchNormAddReLUForwardTrain(s, x, g, bt, res, y, m, is, nil, nil)
			}
		})
	}
}
