package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

func scored(m experiment.Method, score float64, stays ...float64) experiment.Scored {
	r := experiment.Scored{Setting: m, Score: &score}
	for _, s := range stays {
		r.StaysBelow = append(r.StaysBelow, &s)
	}
	return r
}

func lsgdAt(l int, step, decay float64) experiment.Method {
	return experiment.Method{Kind: mlmc.Kind{Method: mlmc.LSGD}, Config: mlmc.Config{MaxLevel: l}, Step: step, Decay: decay}
}

// A choice at the largest L tried gets L+1; a step and a t0 that are the
// only ones tried get both neighbours; a choice inside the grid gets
// nothing on that axis; the cap on L stops the widening with a note.
func TestWidenings(t *testing.T) {
	rows := []experiment.Scored{
		scored(lsgdAt(2, 1, 300), 3, 30),
		scored(lsgdAt(3, 1, 300), 2, 20),
		scored(lsgdAt(4, 1, 300), 1, 10),
	}
	tried := map[string]bool{}
	for _, r := range rows {
		tried[r.Setting.Key()] = true
	}
	next, stuck := widenings(rows, experiment.Choose(rows, 1), tried)
	var names []string
	for _, m := range next {
		names = append(names, m.String())
	}
	want := []string{"L-SGD L=5 step=1 t0=300", "L-SGD L=4 step=0.5 t0=300", "L-SGD L=4 step=2 t0=300",
		"L-SGD L=4 step=1 t0=100", "L-SGD L=4 step=1 t0=1000"}
	if !slices.Equal(names, want) || len(stuck) != 0 {
		t.Errorf("widenings %q (stuck %q), want %q", names, stuck, want)
	}
	if e := edgeNotes(rows, experiment.Choose(rows, 1)); len(e) != 3 {
		t.Errorf("edges %q, want L, step and t0 of L=4", e)
	}

	capped := []experiment.Scored{scored(lsgdAt(maxWidenLevel-1, 1, 0), 2, 20), scored(lsgdAt(maxWidenLevel, 1, 0), 1, 10)}
	for _, r := range capped {
		tried[r.Setting.Key()] = true
	}
	next, stuck = widenings(capped, experiment.Choose(capped, 1), tried)
	if len(stuck) != 1 || !strings.Contains(stuck[0], "cap L = 14") {
		t.Errorf("stuck %q, want the cap on L", stuck)
	}
	for _, m := range next {
		if m.Config.MaxLevel > maxWidenLevel {
			t.Errorf("widened past the cap: %s", m)
		}
	}
}

// --tuning-from takes only summaries of the same budget and targets, a
// setting scored twice once.
func TestPriorSettingsErrors(t *testing.T) {
	dir := t.TempDir()
	sum := experiment.Summary{Problem: "p", Budget: 1 << 10, Targets: targets, F0: 1,
		Tuning:  &experiment.Tuning{Settings: []experiment.Scored{scored(lsgdAt(2, 1, 0), 1, 1)}},
		Methods: []experiment.MethodSummary{{Name: "L-SGD", Setting: lsgdAt(2, 1, 0)}}}
	for _, x := range targets {
		sum.PerTarget = append(sum.PerTarget, experiment.TargetSummary{Target: x})
	}
	path := filepath.Join(dir, "s.summary.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sum.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fams := []experiment.Family{{Kind: mlmc.Kind{Method: mlmc.LSGD}}}
	if _, err := priorSettings(path, 1<<11, targets, fams); err == nil || !strings.Contains(err.Error(), "give the same --budget") {
		t.Errorf("budget mismatch: error %v", err)
	}
	rows, err := priorSettings(path, 1<<10, targets, fams)
	if err != nil || len(rows) != 1 || rows[0].Score == nil {
		t.Errorf("same budget: %v, %v", rows, err)
	}
	// Two files: the setting both scored is taken once, from the first.
	if rows, err := priorSettings(path+","+path, 1<<10, targets, fams); err != nil || len(rows) != 1 {
		t.Errorf("the same file twice: %d rows, %v; want the one setting", len(rows), err)
	}
	if _, err := priorSettings(path+","+filepath.Join(dir, "none.json"), 1<<10, targets, fams); err == nil || !strings.Contains(err.Error(), "--tuning-from") {
		t.Errorf("missing file: error %v", err)
	}
}
