package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// tuningFromFile takes the settings of data set name from an earlier
// --json output (--tuned), of the methods ks: a summary of package
// experiment, or the earlier format of this command (methods keyed by
// their table names, one setting per gap chosen by the first touch).
func tuningFromFile(path, name string, ks []mlmc.Kind) (*experiment.Tuning, error) {
	sums, err := experiment.ReadSummaries(path)
	if err != nil {
		if t, lerr := legacyTuning(path, name, ks); lerr == nil {
			return t, nil
		}
		return nil, fmt.Errorf("--tuned: %w", err)
	}
	for _, s := range sums {
		if s.Problem != name {
			continue
		}
		t, err := experiment.TuningFrom(s)
		if err != nil {
			return nil, fmt.Errorf("--tuned %s: %w", path, err)
		}
		t.Choices = slices.DeleteFunc(t.Choices, func(c experiment.Choice) bool { return !slices.Contains(ks, c.Best.Kind) })
		for _, k := range ks {
			if !slices.ContainsFunc(t.Choices, func(c experiment.Choice) bool { return c.Best.Kind == k }) {
				return nil, fmt.Errorf("--tuned: data set %s has no tuned setting of %s", name, experiment.Family{Kind: k}.Name())
			}
		}
		return t, nil
	}
	return nil, fmt.Errorf("--tuned %s has no data set %s", path, name)
}

// legacySetting and legacySummary are the parts of the earlier format that
// name the chosen settings.
type legacySetting struct {
	L    *int    `json:"L"`
	Step float64 `json:"step"`
	D1   int     `json:"d1"`
}

type legacySummary struct {
	Dataset string                   `json:"dataset"`
	FStar   float64                  `json:"F_star"`
	Methods map[string]legacySetting `json:"methods"`
	PerGap  map[string]struct {
		Methods map[string]legacySetting `json:"methods"`
	} `json:"per_gap"`
}

func legacyTuning(path, name string, ks []mlmc.Kind) (*experiment.Tuning, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var s legacySummary
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, err
		}
		if s.Dataset != name {
			continue
		}
		var choices []experiment.Choice
		for _, k := range ks {
			label := experiment.Family{Kind: k}.Name()
			set := func(ls legacySetting) experiment.Method {
				l := 0
				if ls.L != nil {
					l = *ls.L
				}
				return method(k, l, ls.Step, ls.D1)
			}
			best, ok := s.Methods[label]
			if !ok {
				return nil, fmt.Errorf("no setting of %s", label)
			}
			c := experiment.Choice{Best: set(best)}
			for _, g := range gaps {
				pg, ok := s.PerGap[strconv.FormatFloat(g, 'g', -1, 64)].Methods[label]
				if !ok {
					return nil, fmt.Errorf("no setting of %s for the gap %g", label, g)
				}
				c.First = append(c.First, set(pg))
			}
			c.Stays = c.First
			choices = append(choices, c)
		}
		fStar := math.Inf(1)
		if ds, err := findDataset(name); err != nil || !ds.Convex {
			fStar = s.FStar
		}
		return experiment.TuningOf("settings from "+path+" (chosen by the first touch)", choices, fStar), nil
	}
	return nil, fmt.Errorf("%s: no data set %s", path, name)
}
