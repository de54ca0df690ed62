package cpu_test

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/optim"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkTmpFullStep(b *testing.B) {
	b.Run("New", func(b *testing.B) { fullStep(b, false) })
	b.Run("NewThenBlasOpen", func(b *testing.B) { fullStep(b, true) })
}

func fullStep(b *testing.B, reopen bool) {
	be := cpu.New()
	if reopen {
		blas.Open()
	}
	m := resnet18.New(be, resnet18.Config{Width: 1, ProjDim: 128, InputSize: 32}, 1)
	const n = 64
	rng := rand.New(rand.NewPCG(1, 1))
	host := make([]float32, 2*n*m.InputLen())
	for i := range host {
		host[i] = float32(rng.NormFloat64())
	}
	x := be.Alloc(len(host))
	be.Upload(x, host)
	dz := be.Alloc(2 * n * 128)
	opt, err := optim.New(be, m.Params(), optim.Config{Kind: "sgd", Momentum: 0.9, WeightDecay: 5e-4})
	if err != nil {
		b.Fatal(err)
	}
	step := func() {
		z := m.Forward(x, 2*n, true, true)
		be.NTXent(n, 128, 0.5, false, z, dz)
		m.Backward(dz)
		opt.Step(0.01)
	}
	step()
	b.ResetTimer()
	c0 := cpuTime()
	for b.Loop() {
		step()
	}
	c := (cpuTime() - c0).Seconds()
	b.ReportMetric(float64(2*n*b.N)/b.Elapsed().Seconds(), "views/s")
	b.ReportMetric(float64(2*n*b.N)/c, "views/cpu-s")
}
