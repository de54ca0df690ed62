package resnet18

import (
	"fmt"

	"github.com/simclr-go/simclr/checkpoint"
)

// Save writes every tensor of m under its torchvision name
// (num_batches_tracked as a float) and meta to path, atomically.
func (m *Model) Save(path string, meta map[string]string) error {
	var tensors []checkpoint.Tensor
	for _, nt := range m.params.Tensors() {
		data := make([]float32, nt.Len)
		m.backend.Download(data, nt.Value)
		tensors = append(tensors, checkpoint.Tensor{Name: nt.Name, Shape: nt.Shape, Data: data})
	}
	return checkpoint.Write(path, tensors, meta)
}

// Load fills m's tensors from a model checkpoint written by Save and returns
// the file (its metadata says what trained it).
func (m *Model) Load(path string) (*checkpoint.File, error) {
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	if missing := f.Missing(m.params.Names()); missing != "" {
		return nil, fmt.Errorf("checkpoint %s lacks %s: it was not written by simclr for a ResNet-18 of this width", path, missing)
	}
	for _, nt := range m.params.Tensors() {
		x, _ := f.Get(nt.Name)
		if len(x.Data) != nt.Len {
			return nil, fmt.Errorf("checkpoint %s: %s has shape %v, the network wants %v: pass the --width the model was trained with (checkpoint metadata: width %s)",
				path, nt.Name, x.Shape, nt.Shape, f.Metadata["width"])
		}
		m.backend.Upload(nt.Value, x.Data)
	}
	return f, nil
}
