package resnet18

import (
	"fmt"

	"github.com/simclr-go/simclr/checkpoint"
)

// groupHead is the "head" metadata of a group-norm checkpoint: head.0
// BatchNorm1d without affine parameters, applied with its running
// statistics, head.1 Linear, ReLU, head.3 Linear (PyTorch, in evaluation
// mode: Sequential(BatchNorm1d(F, affine=False), Linear, ReLU, Linear)).
const groupHead = "runningnorm-linear-relu-linear"

// oldGroupHead is the head of the group-norm checkpoints of the previous
// version: head.0 Linear (initialised from data), ReLU, head.3 Linear.
const oldGroupHead = "linear-relu-linear"

// Save writes every tensor of m under its torchvision name
// (num_batches_tracked as a float) and meta to path, atomically. The
// metadata also records the normalisation ("norm": batch or group), which
// the tensor names alone do not tell apart from a batch-norm model that lost
// its running statistics, and with group norm the head ("head":
// runningnorm-linear-relu-linear), which a PyTorch user needs to rebuild it.
func (m *Model) Save(path string, meta map[string]string) error {
	withNorm := map[string]string{"norm": m.cfg.Norm.String()}
	if m.cfg.Norm == NormGroup {
		withNorm["head"] = groupHead
	}
	for k, v := range meta {
		withNorm[k] = v
	}
	meta = withNorm
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
	// Checkpoints without "norm" predate group norm: batch norm.
	norm, err := ParseNorm(f.Metadata["norm"])
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if norm != m.cfg.Norm {
		return nil, fmt.Errorf("checkpoint %s holds a network with %s norm, this one has %s norm: pass --norm %s", path, norm, m.cfg.Norm, norm)
	}
	// Group-norm checkpoints of earlier versions had another head: a
	// GroupNorm head.1 (recorded as "head_groups"), or Linear-ReLU-Linear
	// ("head": linear-relu-linear, whose head.0 is a Linear where this
	// head's is the running-statistics norm); they would load wrongly.
	if m.cfg.Norm == NormGroup && f.Metadata["head"] != groupHead {
		old := fmt.Sprintf("a GroupNorm in its projection head (head_groups %q)", f.Metadata["head_groups"])
		if f.Metadata["head"] == oldGroupHead {
			old = "the projection head Linear-ReLU-Linear"
		}
		return nil, fmt.Errorf("checkpoint %s holds a group-norm network with %s, written by an earlier simclr whose group-norm network collapsed at small batches; this version's group-norm head normalises the features with running statistics first (%s): train the network again", path, old, groupHead)
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
