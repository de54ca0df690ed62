package train

import (
	"fmt"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/optim"
)

// Choices are the settings that name one of a few options, parsed once
// (Settings.Choices) into the types of the packages that act on them, so
// that no setting travels further down as a string to be read again. They
// are the part of the RunPlan known before a session learns its Facts: setup
// opens the device and the ranks with them.
type Choices struct {
	Device    backend.Device    // --device
	Precision backend.Precision // --precision
	Optimizer optim.Kind        // --optimizer
	Halves    contrastive.Halves
	// Loss is the contrastive loss --loss names.
	Loss contrastive.LossKind
	Dist collective.Kind // --dist
	// Augment is the view recipe --augment names ("" is simclr), before
	// it is fitted to the images (contrastive.AtImageSize).
	Augment augment.Config
	Norm    resnet18.Norm // --norm
}

// Choices parses the settings' options, each error naming its flag.
func (c *Settings) Choices() (Choices, error) {
	var ch Choices
	var err error
	if ch.Device, err = backend.ParseDevice(c.Device); err != nil {
		return ch, fmt.Errorf("--device %q: use auto, cpu or cuda", c.Device)
	}
	if ch.Precision, err = backend.ParsePrecision(c.Precision); err != nil {
		return ch, fmt.Errorf("--precision %q: use tf32, fp32 or bf16", c.Precision)
	}
	if ch.Precision == backend.BF16 && ch.Device == backend.DeviceCPU {
		return ch, fmt.Errorf("--precision bf16 with --device cpu: the CPU backend computes in fp32 only; bf16 needs --device cuda (or auto) on a GPU of compute capability 8.0 or newer: use --precision fp32 on the CPU")
	}
	if ch.Optimizer, err = optim.ParseKind(c.Optimizer); err != nil {
		return ch, fmt.Errorf("--optimizer %q: use sgd or lars", c.Optimizer)
	}
	if ch.Norm, err = resnet18.ParseNorm(c.Norm); err != nil {
		return ch, fmt.Errorf("--norm %q: use batch (batch norm, the recipe) or group (group norm, which makes the one-forward multilevel correction exact)", c.Norm)
	}
	if ch.Halves, err = contrastive.ParseHalves(c.Halves); err != nil {
		return ch, fmt.Errorf("--halves %w", err)
	}
	if ch.Dist, err = collective.ParseKind(c.Dist); err != nil {
		return ch, err // it names --dist
	}
	ch.Augment = augment.SimCLR()
	if c.Augment != "" {
		if ch.Augment, err = augment.Preset(c.Augment); err != nil {
			return ch, fmt.Errorf("--augment: %w", err)
		}
	}
	if ch.Loss, err = contrastive.ParseLoss(c.Loss); err != nil {
		return ch, fmt.Errorf("--loss %w", err)
	}
	return ch, nil
}
