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

// Decoupled is ref's Decoupled (internal/ref) on the host slices, the
// tensor.DecoupledLoss of the CPU backend.
func (b *Backend) Decoupled(n, d int, tau, gamma float32, u, z, dz tensor.Buffer) tensor.LossResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	var host []float32
	if u != nil {
		host = Data(u)
	}
	value := b.lossScratch.Decoupled(n, d, float64(tau), float64(gamma), host, Data(z), Data(dz))
	return tensor.LossResult{Loss: value, Full: value}
}

var (
	_ tensor.ContrastiveLoss = (*Backend)(nil)
	_ tensor.DecoupledLoss   = (*Backend)(nil)
)
