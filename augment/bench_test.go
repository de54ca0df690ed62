package augment

import (
	"testing"

	"github.com/simclr-go/simclr/data"
)

// BenchmarkView is the full SimCLR transform of one 32x32 view on one
// goroutine (the per-core rate), on real CIFAR-10 images when the shared
// data is there and on noise (the worst case for branch prediction):
// go test -run XXX -bench View -cpu 1 ./augment/
func BenchmarkView(b *testing.B) {
	cases := []struct {
		name string
		cfg  func() Config
	}{
		{"simclr", SimCLR},
		{"simclr+blur", func() Config { c := SimCLR(); c.BlurProb = 0.5; return c }},
		{"crop-only", func() Config {
			c := Identity()
			c.Crop, c.CropScale, c.CropRatio = true, [2]float64{0.2, 1}, [2]float64{0.75, 4.0 / 3}
			return c
		}},
		{"jitter-always", func() Config { c := SimCLR(); c.JitterProb = 1; return c }},
	}
	sets := []struct {
		name string
		set  *data.Set
	}{{"cifar", cifarImages(b, 64)}, {"noise", randomSet(64, 32, 32, 1)}}
	for _, s := range sets {
		set := s.set
		for _, c := range cases {
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				tr := mustTransform(b, c.cfg(), 32, 32, [3]float32{0.49, 0.48, 0.45}, [3]float32{0.25, 0.24, 0.26})
				dst := make([]float32, tr.ViewLen())
				i := 0
				cpu0 := processCPUSeconds()
				for b.Loop() {
					tr.Apply(set.Image(i%64), Key{Seed: 1, Index: i}, dst)
					i++
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "views/s")
				if cpu := processCPUSeconds() - cpu0; cpu > 0 {
					b.ReportMetric(float64(b.N)/cpu, "views/cpu-s")
				}
			})
		}
	}
}
