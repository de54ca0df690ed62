package train

import (
	"strings"
	"testing"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/optim"
)

// The settings' options reach the plan parsed, and a bad one is an error
// naming its flag, from Validate and from Resolve alike.
func TestChoicesAreParsedIntoThePlan(t *testing.T) {
	facts := Facts{TrainImages: 64, ServableLevel: 5, Ranks: 1}
	for _, tc := range []struct {
		name    string
		edit    func(*Settings)
		want    Choices
		wantErr string
	}{
		{"defaults", func(*Settings) {}, Choices{Device: backend.DeviceAuto, Precision: backend.TF32, Optimizer: optim.SGD,
			Halves: contrastive.HalvesShared, Loss: contrastive.NTXent, Dist: collective.KindAuto, Augment: augment.SimCLR()}, ""},
		{"every option set", func(s *Settings) {
			s.Device, s.Precision, s.Optimizer, s.Halves, s.Loss, s.Dist = "CPU", "fp32", "lars", "separate", "sogclr", "none"
			s.Augment = "paper"
		}, Choices{Device: backend.DeviceCPU, Precision: backend.FP32, Optimizer: optim.LARS,
			Halves: contrastive.HalvesSeparate, Loss: contrastive.SogCLR, Dist: collective.KindNone, Augment: augment.Paper()}, ""},
		{"config.json before halves and augment", func(s *Settings) { s.Halves, s.Augment = "", "" }, Choices{Device: backend.DeviceAuto, Precision: backend.TF32,
			Optimizer: optim.SGD, Halves: contrastive.HalvesShared, Loss: contrastive.NTXent, Dist: collective.KindAuto, Augment: augment.SimCLR()}, ""},
		{"device", func(s *Settings) { s.Device = "tpu" }, Choices{}, "--device"},
		{"precision", func(s *Settings) { s.Precision = "fp16" }, Choices{}, "--precision"},
		{"bf16 on the cpu", func(s *Settings) { s.Device, s.Precision = "cpu", "bf16" }, Choices{}, "--precision bf16 with --device cpu"},
		{"bf16", func(s *Settings) { s.Precision = "bf16" }, Choices{Device: backend.DeviceAuto, Precision: backend.BF16, Optimizer: optim.SGD,
			Halves: contrastive.HalvesShared, Loss: contrastive.NTXent, Dist: collective.KindAuto, Augment: augment.SimCLR()}, ""},
		{"optimizer", func(s *Settings) { s.Optimizer = "adam" }, Choices{}, "--optimizer"},
		{"halves", func(s *Settings) { s.Halves = "both" }, Choices{}, "--halves"},
		{"dist", func(s *Settings) { s.Dist = "gloo" }, Choices{}, "--dist"},
		{"augment", func(s *Settings) { s.Augment = "autoaugment" }, Choices{}, "--augment"},
		{"loss", func(s *Settings) { s.Loss = "infonce" }, Choices{}, "--loss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Defaults()
			s.Iterations, s.MinLevel, s.MaxLevel, s.Out = 3, 1, 4, "runs/x"
			tc.edit(&s)
			verr := s.Validate()
			p, rerr := Resolve(s, facts)
			if tc.wantErr != "" {
				for _, err := range []error{verr, rerr} {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Errorf("error %v, want one naming %s", err, tc.wantErr)
					}
				}
				return
			}
			if verr != nil || rerr != nil {
				t.Fatalf("Validate: %v; Resolve: %v", verr, rerr)
			}
			if p.Choices != tc.want {
				t.Errorf("plan's choices %+v, want %+v", p.Choices, tc.want)
			}
		})
	}
}
