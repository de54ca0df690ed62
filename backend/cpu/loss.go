package cpu

import "github.com/simclr-go/simclr/tensor"

// NTXent is ref.NTXent (internal/ref) on the host slices: the CPU backend's
// buffers are host memory, so the reference is the kernel. b.lossScratch
// keeps its similarity matrices from step to step.
func (b *Backend) NTXent(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) tensor.LossResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	value, full := b.lossScratch.NTXent(n, d, float64(tau), multilevel, Data(z), Data(dz))
	return tensor.LossResult{Loss: value, Full: full}
}
