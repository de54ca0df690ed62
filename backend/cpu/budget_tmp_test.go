package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/tensor"
)

func BenchmarkTmpBudget(b *testing.B) {
	for _, c := range resnet18Convs {
		if c.name != "L1_3x3_64_32" && c.name != "L3_3x3_256_8" && c.name != "L4_3x3_512_4" {
			continue
		}
		for _, budget := range []int{1 << 19, 1 << 20, 1 << 22, 1 << 24} {
			b.Run(fmt.Sprintf("%s/%d", c.name, budget), func(b *testing.B) {
				be := New()
				be.chunkBudget = budget
				s := c.shape
				rng := rand.New(rand.NewPCG(1, 1))
				x, w := upload(be, randSlice(rng, s.InLen())), upload(be, randSlice(rng, s.WeightLen()))
				dy, dw := upload(be, randSlice(rng, s.OutLen())), be.Alloc(s.WeightLen())
				var dx tensor.Buffer = be.Alloc(s.InLen())
				be.Conv2dBackward(s, x, w, dy, dx, dw)
				b.ResetTimer()
				cpu0 := processCPUTime()
				for b.Loop() {
					be.Conv2dForward(s, x, w, dy)
					be.Conv2dBackward(s, x, w, dy, dx, dw)
				}
				reportRates(b, 3*s.FLOPs(), processCPUTime()-cpu0)
			})
		}
	}
}
