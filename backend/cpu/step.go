package cpu

import (
	"github.com/simclr-go/simclr/internal/ref"
	"github.com/simclr-go/simclr/tensor"
)

// NTXent is ref.NTXent on the host slices: the CPU backend's buffers are
// host memory, so the reference is the kernel.
func (b *Backend) NTXent(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) tensor.LossResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	value, full := b.lossScratch.NTXent(n, d, float64(tau), multilevel, Data(z), Data(dz))
	return tensor.LossResult{Loss: value, Full: full}
}

// SGDStep is ref.SGDStep on the host slices.
func (b *Backend) SGDStep(c tensor.SGDConfig, w, g, v tensor.Buffer) {
	ref.SGDStep(c, Data(w), Data(g), Data(v))
}

// LARSStep is ref.LARSStep on the host slices.
func (b *Backend) LARSStep(c tensor.LARSConfig, w, g, v tensor.Buffer) {
	ref.LARSStep(c, Data(w), Data(g), Data(v))
}
