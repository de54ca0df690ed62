package experiment

import (
	"encoding/json"
	"fmt"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/auto"
)

// methodJSON is a Method in results files: the estimator by its package
// name ("rtmlmc", "vr-rtmlmc", "auto") and the settings that are not zero.
type methodJSON struct {
	Method     string    `json:"method"`
	L          *int      `json:"L"` // null: RU-MLMC and RR-MLMC, which have no top level
	Step       float64   `json:"step"`
	Decay      float64   `json:"decay,omitempty"`
	D1         int       `json:"d1,omitempty"`
	D2         int       `json:"d2,omitempty"`
	QE         int       `json:"qe,omitempty"`
	NL         int       `json:"nl,omitempty"`
	MinLevel   int       `json:"min_level,omitempty"`
	B          float64   `json:"b,omitempty"`
	C          float64   `json:"c,omitempty"`
	N          float64   `json:"n,omitempty"`
	LevelProbs []float64 `json:"level_probs,omitempty"`
	LevelDraws []int     `json:"level_draws,omitempty"`
	Budget     int64     `json:"budget,omitempty"`
}

// MarshalJSON writes the method as its estimator name and settings.
func (m Method) MarshalJSON() ([]byte, error) {
	if m.Auto != nil {
		return json.Marshal(methodJSON{Method: "auto"})
	}
	c := m.Config
	j := methodJSON{Method: m.Kind.String(), Step: m.Step, Decay: m.Decay, D1: c.D1, D2: c.D2, QE: c.QE,
		NL: c.NL, MinLevel: c.MinLevel, B: c.B, C: c.C, N: c.N, LevelProbs: c.LevelProbs, LevelDraws: c.LevelDraws,
		Budget: m.Budget}
	if !m.Family().Unbounded() {
		l := c.MaxLevel
		j.L = &l
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote. An auto method comes back
// with default settings and no target: it cannot be run again from a file.
func (m *Method) UnmarshalJSON(b []byte) error {
	var j methodJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Method == "auto" {
		*m = Method{Auto: &auto.Settings{}}
		return nil
	}
	k, err := mlmc.ParseKind(j.Method)
	if err != nil {
		return fmt.Errorf("method: %w", err)
	}
	*m = Method{Kind: k, Step: j.Step, Decay: j.Decay, Budget: j.Budget, Config: mlmc.Config{
		MinLevel: j.MinLevel, B: j.B, C: j.C, N: j.N, NL: j.NL, D1: j.D1, D2: j.D2, QE: j.QE,
		LevelProbs: j.LevelProbs, LevelDraws: j.LevelDraws}}
	if j.L != nil {
		m.Config.MaxLevel = *j.L
	}
	return nil
}
