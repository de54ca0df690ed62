package train

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
)

// LevelLawMeasured prefixes --level-law's file form, measured:FILE.
const LevelLawMeasured = "measured:"

// measuredLawPath is the file of --level-law measured:FILE ("" for the
// rates' law), after checking that the estimator draws its levels from a
// law on --min-level..--max-level. It reads no file.
func (c *Settings) measuredLawPath() (string, error) {
	if c.LevelLaw == "" || c.LevelLaw == "rates" {
		return "", nil
	}
	path, ok := strings.CutPrefix(c.LevelLaw, LevelLawMeasured)
	if !ok || path == "" {
		return "", fmt.Errorf("--level-law %q: use rates (q_l and n_l from --b and --c, the default) or measured:FILE (the optimal law of a `simclr levels --json` file)", c.LevelLaw)
	}
	k, err := c.Kind()
	if err != nil {
		return "", err
	}
	if k.Method.Explicit() == mlmc.NoExplicitLaw {
		return "", fmt.Errorf("--level-law %s: only %s (and their vr- versions) draw levels from a law on --min-level..--max-level; --estimator %s does not",
			c.LevelLaw, strings.Join(explicitLawNames(), " and "), c.Estimator)
	}
	return path, nil
}

// readLevelLaw reads the `simclr levels --json` file of --level-law
// measured:FILE for a new run (nil for the rates' law), checking that it
// measures the run's levels, so that a bad file stops the run before any
// data is read. A resumed run keeps the law its config.json recorded
// instead (Facts.Previous), even if the file has changed since.
func readLevelLaw(s Settings) (*mlmc.LevelsReport, error) {
	path, err := s.measuredLawPath()
	if err != nil || path == "" {
		return nil, err
	}
	rep, err := readLevelsReport(path)
	if err != nil {
		return nil, fmt.Errorf("--level-law: %w", err)
	}
	if _, _, err := levelLaw(s, rep, nil); err != nil {
		return nil, err
	}
	return rep, nil
}

// levelLaw is the level law of --level-law measured:FILE: RT-MLMC's q_l
// or V-MLMC's n_l (the other nil; both nil for the rates' law), from the
// previous plan of a resumed run when it holds one, else from rep, the
// file's report.
func levelLaw(s Settings, rep *mlmc.LevelsReport, prev *RunPlan) (probs []float64, draws []int, err error) {
	path, err := s.measuredLawPath()
	if err != nil {
		return nil, nil, err
	}
	if path == "" {
		if prev != nil && (prev.LevelProbs != nil || prev.LevelDraws != nil) {
			return nil, nil, errors.New("config: explicit level probabilities or draws without --level-law measured:FILE")
		}
		return nil, nil, nil
	}
	if prev != nil && (prev.LevelProbs != nil || prev.LevelDraws != nil) {
		return prev.LevelProbs, prev.LevelDraws, nil
	}
	if rep == nil {
		return nil, nil, fmt.Errorf("--level-law %s: the levels file was not read", s.LevelLaw)
	}
	probs, draws, err = MeasuredAllocation(rep, s.MinLevel, s.MaxLevel, s.B, s.C, s.VMLMCN)
	if err != nil {
		return nil, nil, fmt.Errorf("--level-law: %s: %w", path, err)
	}
	if k, _ := s.Kind(); k.Method.Explicit() == mlmc.ExplicitProbs {
		return probs, nil, nil
	}
	return nil, draws, nil
}

// explicitLawNames lists the estimators that take a measured law, in the
// order of mlmc.Names.
func explicitLawNames() []string {
	var names []string
	for _, n := range mlmc.Names() {
		if k, err := mlmc.ParseKind(n); err == nil && !k.VR && k.Method.Explicit() != mlmc.NoExplicitLaw {
			names = append(names, n)
		}
	}
	return names
}

// readLevelsReport reads a `simclr levels --json` file.
func readLevelsReport(path string) (*mlmc.LevelsReport, error) {
	rep, err := mlmc.ReadLevelsReport(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return nil, fmt.Errorf("read the levels file: %w (write one with `simclr levels --json > FILE`)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (write one with `simclr levels --json > FILE`)", err)
	}
	return rep, nil
}

// MeasuredAllocation is the variance-optimal allocation of the measured levels
// minL..maxL of rep (docs/definitions.md, section 2 "The estimators"), with C_l
// the seconds per query when every level has one, else the images:
//
//	RT-MLMC: q_l proportional to sqrt(E|Y_l|^2 / C_l)
//	V-MLMC:  n_l = ceil(s sqrt(V_l / C_l) / sqrt(V_L / C_L)), s = N / 2^((b+c)L/2)
//
// so that with the default N (n = 0) the top level gets one draw, as the
// default law's n_L = 1, and a larger --vmlmc-n scales every n_l alike.
// These are the allocations `simclr levels` predicts as rtmlmc-opt and
// vmlmc-opt. Errors say what the file lacks and how to measure it.
func MeasuredAllocation(rep *mlmc.LevelsReport, minL, maxL int, b, c, n float64) ([]float64, []int, error) {
	if rep.MinLevel != minL || rep.MaxLevel != maxL {
		return nil, nil, fmt.Errorf("measures levels %d..%d, the run uses --min-level %d --max-level %d: measure with `simclr levels --min-level %d --max-level %d`",
			rep.MinLevel, rep.MaxLevel, minL, maxL, minL, maxL)
	}
	k := maxL - minL + 1
	if len(rep.Levels) != k {
		return nil, nil, fmt.Errorf("holds %d levels, levels %d..%d are %d", len(rep.Levels), minL, maxL, k)
	}
	bySeconds := true
	for i, st := range rep.Levels {
		if st.Level != minL+i {
			return nil, nil, fmt.Errorf("level %d is listed where level %d belongs: the levels must run %d..%d in order", st.Level, minL+i, minL, maxL)
		}
		if !(st.Var > 0) || !(st.Moment2 > 0) || math.IsInf(st.Var, 0) || math.IsInf(st.Moment2, 0) {
			return nil, nil, fmt.Errorf("level %d has variance %g and second moment %g; the optimal law needs positive, finite values at every level", st.Level, st.Var, st.Moment2)
		}
		if !(st.Images > 0) {
			return nil, nil, fmt.Errorf("level %d has a cost of %g images; a measured level costs at least one", st.Level, st.Images)
		}
		if !(st.Seconds > 0) {
			bySeconds = false
		}
	}
	cost := func(st mlmc.LevelStat) float64 {
		if bySeconds {
			return st.Seconds
		}
		return st.Images
	}
	probs := make([]float64, k)
	sum := 0.0
	for i, st := range rep.Levels {
		probs[i] = math.Sqrt(st.Moment2 / cost(st))
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	if n == 0 {
		n = math.Ceil(math.Exp2((b + c) * float64(maxL) / 2))
	}
	scale := n / math.Exp2((b+c)*float64(maxL)/2)
	top := rep.Levels[k-1]
	topRatio := math.Sqrt(top.Var / cost(top))
	draws := make([]int, k)
	for i, st := range rep.Levels {
		draws[i] = max(1, int(math.Ceil(scale*math.Sqrt(st.Var/cost(st))/topRatio-1e-9)))
	}
	return probs, draws, nil
}
