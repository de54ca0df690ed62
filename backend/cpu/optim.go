package cpu

import (
	"github.com/simclr-go/simclr/internal/ref"
	"github.com/simclr-go/simclr/tensor"
)

// SGDStep is ref.SGDStep on the host slices.
func (b *Backend) SGDStep(c tensor.SGDConfig, w, g, v tensor.Buffer) {
	ref.SGDStep(c, Data(w), Data(g), Data(v))
}

// LARSStep is ref.LARSStep on the host slices.
func (b *Backend) LARSStep(c tensor.LARSConfig, w, g, v tensor.Buffer) {
	ref.LARSStep(c, Data(w), Data(g), Data(v))
}
