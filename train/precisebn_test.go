package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/runfolder"
)

// Precise BN runs before every kNN evaluation and the final checkpoint, on
// a data stream of its own: a run with it and one without (--precise-bn=
// false) train exactly alike (same losses, levels, images, parameters, bit
// for bit), and differ only in the running statistics, which with precise
// BN are those a recalibration of the final network gives. That the
// recalibration itself estimates the population statistics is
// resnet18.TestRecalibrateBNMatchesPopulationStatistics.
func TestPreciseBNLeavesTrainingUntouched(t *testing.T) {
	splits := syntheticSplits(48, 16, 16, 3)
	runs := map[bool]Settings{}
	for _, precise := range []bool{true, false} {
		cfg := tinyConfig(t, "vr-rtmlmc")
		cfg.Iterations = 12
		cfg.EvalEvery = 1 // kNN after 6 and 12 iterations (6 per epoch)
		cfg.KNNK = 5
		cfg.PreciseBN = precise
		if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
			t.Fatal(err)
		}
		runs[precise] = cfg
	}
	on, off := runs[true], runs[false]
	linesOn, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(on.Out, runfolder.MetricsFile))
	linesOff, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(off.Out, runfolder.MetricsFile))
	if len(linesOn) != 12 || len(linesOff) != 12 {
		t.Fatalf("%d and %d metrics lines, want 12", len(linesOn), len(linesOff))
	}
	for i := range linesOn {
		a, b := linesOn[i], linesOff[i]
		if a.Loss != b.Loss || !slices.Equal(a.Levels, b.Levels) || a.SamplesDrawn != b.SamplesDrawn || a.Evaluations != b.Evaluations {
			t.Errorf("iteration %d: with precise BN %+v, without %+v", i+1, a, b)
		}
	}
	evals, _ := runfolder.ReadLines[runfolder.Eval](filepath.Join(on.Out, runfolder.EvalFile))
	if len(evals) != 2 {
		t.Errorf("%d kNN evaluations, want 2", len(evals))
	}

	// The recalibration below must compute with the SGEMM the runs trained
	// with (tinyHooks's built-in kernel), not the one New's start-up race
	// picks, or its statistics round differently from the saved ones.
	b := tinyHooks(splits).Backend
	load := func(cfg Settings) *resnet18.Model {
		netCfg, err := ModelConfig(cfg, splits)
		if err != nil {
			t.Fatal(err)
		}
		m := resnet18.New(b, netCfg, 99)
		if _, err := m.Load(filepath.Join(cfg.Out, runfolder.ModelFile)); err != nil {
			t.Fatal(err)
		}
		return m
	}
	mOn, mOff := load(on), load(off)
	isStat := func(name string) bool {
		return strings.HasSuffix(name, "running_mean") || strings.HasSuffix(name, "running_var") || strings.HasSuffix(name, "num_batches_tracked")
	}
	statsDiffer := false
	offTensors := mOff.Params().Tensors()
	for i, nt := range mOn.Params().Tensors() {
		a, c := cpu.Data(nt.Value), cpu.Data(offTensors[i].Value)
		if isStat(nt.Name) {
			statsDiffer = statsDiffer || !slices.Equal(a, c)
			continue
		}
		for j := range a {
			if math.Float32bits(a[j]) != math.Float32bits(c[j]) {
				t.Fatalf("%s[%d] = %v with precise BN, %v without: precise BN changed training", nt.Name, j, a[j], c[j])
			}
		}
	}
	if !statsDiffer {
		t.Error("the running statistics are the same with and without precise BN")
	}
	// Recalibrating the network without precise BN as the trainer does at
	// the end gives the saved statistics of the run with it.
	ch, err := off.Choices()
	if err != nil {
		t.Fatal(err)
	}
	if err := recalibrateBN(mOff, splits, &RunPlan{Run: off.runSettings()}, ch.Augment, off.Iterations); err != nil {
		t.Fatal(err)
	}
	for i, nt := range mOn.Params().Tensors() {
		if strings.HasSuffix(nt.Name, "running_mean") || strings.HasSuffix(nt.Name, "running_var") {
			if !slices.Equal(cpu.Data(nt.Value), cpu.Data(offTensors[i].Value)) {
				t.Errorf("%s: the final checkpoint's statistics are not those of a recalibration", nt.Name)
			}
		}
	}
}

// A validation split is held out of training: no image of it is ever
// drawn by the training stream (over three epochs), the kNN monitor and the
// probe score it instead of the test set, and config.json records it.
func TestValSplitIsNeverTrainedOn(t *testing.T) {
	const n, val = 64, 12
	splits := syntheticSplits(n, 8, 16, 4)
	// Image i's first pixel byte is i: the images can be told apart after
	// any subset or split.
	for i := range n {
		splits.Train.Image(i)[0] = uint8(i)
	}
	cfg := tinyConfig(t, "lsgd")
	cfg.ValSplit = val
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	tr := &trainer{sess: tinyHooks(splits), log: ioDiscard{}}
	if err := tr.setup(cfg, opening{}); err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	id := func(s interface{ Image(int) []uint8 }, i int) uint8 { return s.Image(i)[0] }
	held := map[uint8]bool{}
	for i := range tr.splits.Test.Len() {
		held[id(tr.splits.Test, i)] = true
	}
	if len(held) != val || tr.splits.Train.Len() != n-val {
		t.Fatalf("%d held-out images and %d training images, want %d and %d", len(held), tr.splits.Train.Len(), val, n-val)
	}
	views := make([]float32, 8*2*tr.stream.ViewLen())
	seen := map[uint8]bool{}
	for range 3 * (n - val) / 8 {
		d := tr.stream.Next(8, views)
		for _, i := range d.Indices {
			img := id(tr.splits.Train, i)
			if held[img] {
				t.Fatalf("held-out image %d drawn by the training stream", img)
			}
			seen[img] = true
		}
	}
	if len(seen) != n-val {
		t.Errorf("the stream drew %d distinct images, want all %d training images", len(seen), n-val)
	}
	var saved Settings
	if err := runfolder.ReadJSON(filepath.Join(cfg.Out, runfolder.ConfigFile), &saved); err != nil || saved.ValSplit != val {
		t.Errorf("config.json: val_split %d (%v), want %d", saved.ValSplit, err, val)
	}
}
