package optim

import "math"

// Schedule is the learning rate of step 0, 1, 2, ...: a linear warm-up from
// BaseLR/WarmupSteps to BaseLR over the first WarmupSteps steps, then a
// cosine decay from BaseLR to FinalLR (0 by default) reached at TotalSteps,
// and FinalLR from then on. The zero WarmupSteps means no warm-up.
type Schedule struct {
	BaseLR      float32
	WarmupSteps int
	TotalSteps  int
	FinalLR     float32
}

// LR is the learning rate of the 0-based step.
func (s Schedule) LR(step int) float32 {
	if step < 0 {
		step = 0
	}
	if step < s.WarmupSteps {
		// (step+1)/W so that the first step already moves and step W-1
		// reaches BaseLR.
		return s.BaseLR * float32(step+1) / float32(s.WarmupSteps)
	}
	decay := s.TotalSteps - s.WarmupSteps
	if decay <= 0 {
		return s.BaseLR
	}
	if step >= s.TotalSteps {
		return s.FinalLR
	}
	progress := float64(step-s.WarmupSteps) / float64(decay)
	cos := 0.5 * (1 + math.Cos(math.Pi*progress))
	return s.FinalLR + float32(float64(s.BaseLR-s.FinalLR)*cos)
}
