package train

import (
	"path/filepath"
	"time"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/eval"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/runfolder"
)

// evalKNN appends the kNN accuracy at this iteration to eval.jsonl.
func (t *trainer) evalKNN() error {
	start := time.Now()
	if err := t.preciseBN(); err != nil {
		return err
	}
	res, err := eval.KNN(t.b, t.model, t.evalSplits(), t.plan.Run.KNNK)
	if err != nil {
		return err
	}
	rec := runfolder.Eval{Iteration: t.iter, Epoch: float64(t.iter) / float64(t.plan.ItersPerEpoch),
		SamplesDrawn: t.totals.Samples, WallSeconds: t.wall(), KNNTop1: res.Top1, KNNTop5: res.Top5, K: res.K,
		TrainImages: t.evalSplits().Train.Len(), TestImages: t.splits.Test.Len()}
	app, err := runfolder.OpenAppender(filepath.Join(t.plan.Out, runfolder.EvalFile))
	if err != nil {
		return err
	}
	defer app.Close()
	if err := app.Append(rec); err != nil {
		return err
	}
	t.logf("kNN (k=%d) at iteration %d: top-1 %.2f%% top-5 %.2f%% (%.1f s)", res.K, t.iter, res.Top1, res.Top5, time.Since(start).Seconds())
	return nil
}

// evalSplits is what the kNN monitor and the probe read: the run's splits
// with the training images cut to --eval-train-subset (class-balanced; the
// scored images are all kept).
func (t *trainer) evalSplits() *data.Splits {
	if t.evalSet == nil {
		t.evalSet = t.splits
		if n := t.plan.Run.EvalTrainSubset; n > 0 && n < t.splits.Train.Len() {
			t.evalSet = t.splits.Subset(n, 0)
		}
	}
	return t.evalSet
}

// preciseBN recalibrates the running statistics before an evaluation or
// the final checkpoint, unless --precise-bn=false.
func (t *trainer) preciseBN() error {
	if !t.plan.Run.PreciseBN {
		return nil
	}
	start := time.Now()
	if err := recalibrateBN(t.model, t.splits, &t.plan, t.plan.Augment, t.iter); err != nil {
		return err
	}
	t.logf("precise BN at iteration %d: running statistics re-estimated over %d views (%.1f s)",
		t.iter, preciseBNBatches(t.plan.Run.MaxLevel)*(2<<t.plan.Run.MaxLevel), time.Since(start).Seconds())
	return nil
}

// linearProbe runs the probe on the trained network (and, when asked, on
// the same network at initialisation) and writes linear_probe.json.
func (t *trainer) linearProbe() (*runfolder.Probe, error) {
	start := time.Now()
	res, err := eval.LinearProbe(t.b, t.model, t.evalSplits(), t.plan.Run.Seed)
	if err != nil {
		return nil, err
	}
	rec := eval.ProbeRecord(res, filepath.Join(t.plan.Out, runfolder.ModelFile), t.plan.Run.Dataset, t.iter, time.Since(start).Seconds())
	t.logf("linear probe: top-1 %.2f%% top-5 %.2f%% (l2 %g, %d train / %d test images, %.1f s)",
		res.Top1, res.Top5, res.L2, res.Train, res.Test, rec.Seconds)
	if t.plan.Run.ProbeBaseline {
		init := resnet18.New(t.b, t.model.Config(), t.plan.Run.Seed)
		// The baseline is measured as the trained network is: with
		// recalibrated statistics (its own are the initial 0 and 1).
		if t.plan.Run.PreciseBN {
			if err := recalibrateBN(init, t.splits, &t.plan, t.plan.Augment, 0); err != nil {
				return nil, err
			}
		}
		base, err := eval.LinearProbe(t.b, init, t.evalSplits(), t.plan.Run.Seed)
		init.Free()
		if err != nil {
			return nil, err
		}
		rec.BaselineTop1 = &base.Top1
		t.logf("linear probe of the same network at initialisation: top-1 %.2f%% (trained: %.2f%%, %+.2f points)",
			base.Top1, res.Top1, res.Top1-base.Top1)
	}
	if err := runfolder.WriteJSON(filepath.Join(t.plan.Out, runfolder.ProbeFile), rec); err != nil {
		return nil, err
	}
	return rec, nil
}
