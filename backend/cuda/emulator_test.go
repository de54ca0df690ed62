package cuda_test

import (
	"testing"

	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/backend/cuda/cudaemu"
)

func TestEmulatorSmoke(t *testing.T) {
	cudaemu.Use(t)
	g, err := cuda.Open(cuda.Options{Precision: "fp32"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	t.Log(g.Describe())
	x := g.Alloc(1000)
	h := make([]float32, 1000)
	for i := range h {
		h[i] = float32(i)
	}
	g.Upload(x, h)
	g.Scale(x, 2)
	t.Log(g.Dot(x, x), g.Sync())
}
