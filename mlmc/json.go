package mlmc

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// finite is x, or nil for NaN and infinities, which JSON cannot hold.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MarshalJSON writes a missing rate or standard error as null.
func (f RateFit) MarshalJSON() ([]byte, error) {
	type plain RateFit
	return json.Marshal(struct {
		plain
		Rate *float64 `json:"rate"`
		SE   *float64 `json:"se"`
	}{plain(f), finite(f.Rate), finite(f.SE)})
}

// MarshalJSON writes quantities that could not be predicted as null.
func (p Prediction) MarshalJSON() ([]byte, error) {
	type plain Prediction
	return json.Marshal(struct {
		plain
		Var        *float64 `json:"var"`
		RelImages  *float64 `json:"rel_images"`
		RelSeconds *float64 `json:"rel_seconds"`
	}{plain(p), finite(p.Var), finite(p.RelImages), finite(p.RelSeconds)})
}

// ReadLevelsReport reads a LevelsReport from the JSON file path, as
// MeasureLevels' callers write it (`simclr levels --json` embeds it at its
// top level): the one reader of the file, for the trainer's measured level
// law and the scripts' tables and plots. A quantity written as null (not
// predicted) reads as 0.
func ReadLevelsReport(path string) (*LevelsReport, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep LevelsReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("%s is not the JSON of a levels report: %w", path, err)
	}
	return &rep, nil
}
