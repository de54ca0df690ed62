package train

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/train/runfolder"
)

func (t *trainer) loop(ctx context.Context) (*Summary, error) {
	cfg := &t.cfg
	metrics, err := runfolder.OpenAppender(filepath.Join(cfg.Out, runfolder.MetricsFile))
	if err != nil {
		return nil, err
	}
	defer metrics.Close()
	var bar *progressbar.ProgressBar
	if t.hooks.Progress {
		bar = progressbar.NewOptions(cfg.TotalIters,
			progressbar.OptionSetWriter(t.log),
			progressbar.OptionSetDescription("train"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionFullWidth())
		bar.Set(t.iter)
	}
	n := cfg.TrainImages
	sessionStart := t.iter
	imagesAtStart := t.est.Totals().Samples
	lastCheckpoint := -1 // iteration of the last checkpoint written, -1 before the first
	if t.iter > 0 {
		lastCheckpoint = t.iter // a resumed session starts from one
	}
	// Wall time counts training (and its evaluations), not loading the data.
	t.start = time.Now()
	t.lastLogTime = t.start
	for t.iter < cfg.TotalIters {
		if cfg.MaxSamples > 0 && t.est.Totals().Samples >= cfg.MaxSamples {
			break
		}
		if ctx.Err() != nil || (t.hooks.StopAfter > 0 && t.iter-sessionStart >= t.hooks.StopAfter) {
			if err := t.checkpoint(); err != nil {
				return nil, err
			}
			t.logf("\ninterrupted at iteration %d: checkpoint saved; continue with: simclr train --resume %s", t.iter, cfg.Out)
			return t.summary(), fmt.Errorf("%w at iteration %d (resume with --resume %s)", ErrInterrupted, t.iter, cfg.Out)
		}
		lr := t.sched.LR(t.iter)
		step, err := t.iterate(lr)
		if err != nil {
			if errors.Is(err, ErrNonFinite) {
				kept := fmt.Sprintf("the last good checkpoint (iteration %d) is kept in %s", lastCheckpoint, cfg.Out)
				if lastCheckpoint < 0 {
					kept = "no checkpoint had been written yet"
				}
				return nil, fmt.Errorf("iteration %d: %w; training stopped and %s: lower --lr (now %g) or raise --temperature and train again",
					t.iter+1, err, kept, cfg.ResolvedLR)
			}
			return nil, fmt.Errorf("iteration %d: %w", t.iter+1, err)
		}
		t.iter++
		totals := t.est.Totals()
		last := t.iter == cfg.TotalIters || (cfg.MaxSamples > 0 && totals.Samples >= cfg.MaxSamples)
		if cfg.LogEvery > 0 && (t.iter%cfg.LogEvery == 0 || last) {
			m := runfolder.Metrics{Iteration: t.iter, Epoch: float64(t.iter) / float64(cfg.ItersPerEpoch),
				DataEpoch: float64(totals.Samples) / float64(n), Levels: step.Levels, SamplesDrawn: totals.Samples,
				Evaluations: totals.Evals, Redraws: totals.Redraws, Loss: t.lastLoss, LR: float64(lr), WallSeconds: t.wall()}
			if err := metrics.Append(m); err != nil {
				return nil, err
			}
		}
		if bar != nil {
			rate := float64(totals.Samples-imagesAtStart) / time.Since(t.start).Seconds()
			bar.Describe(fmt.Sprintf("epoch %.2f loss %.4f %.0f images/s", float64(t.iter)/float64(cfg.ItersPerEpoch), t.lastLoss, rate))
			bar.Set(t.iter)
		} else if time.Since(t.lastLogTime) > 10*time.Second || last || t.iter == sessionStart+1 {
			elapsed := time.Since(t.start).Seconds()
			rate := float64(totals.Samples-imagesAtStart) / elapsed
			eta := time.Duration(float64(cfg.TotalIters-t.iter)*elapsed/float64(t.iter-sessionStart)) * time.Second
			t.logf("iter %d/%d epoch %.2f loss %.4f lr %.4g images/s %.1f eta %s",
				t.iter, cfg.TotalIters, float64(t.iter)/float64(cfg.ItersPerEpoch), t.lastLoss, lr, rate, eta.Round(time.Second))
			t.lastLogTime = time.Now()
		}
		if cfg.EvalEvery > 0 && t.iter%(cfg.EvalEvery*cfg.ItersPerEpoch) == 0 {
			if err := t.evalKNN(); err != nil {
				return nil, err
			}
		}
		if cfg.CheckpointEvery > 0 && t.iter%cfg.CheckpointEvery == 0 && !last {
			if err := t.checkpoint(); err != nil {
				return nil, err
			}
			lastCheckpoint = t.iter
		}
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(t.log)
	}
	if err := t.checkpoint(); err != nil {
		return nil, err
	}
	sum := t.summary()
	t.logf("done: %d iterations, %d images drawn, %d evaluations, loss %.4f, %.1f s; checkpoint %s",
		sum.Iterations, sum.SamplesDrawn, sum.Evaluations, sum.Loss, sum.WallSeconds, filepath.Join(cfg.Out, runfolder.ModelFile))
	if cfg.Probe {
		probe, err := t.linearProbe()
		if err != nil {
			return sum, err
		}
		sum.Probe = probe
	}
	return sum, nil
}

// iterate runs iteration t.iter with learning rate lr: the estimate v_t at
// x_t, then x_{t-1} <- x_t (for VR) and the optimizer step to x_{t+1}. It
// leaves t.iter alone.
func (t *trainer) iterate(lr float32) (mlmc.Step, error) {
	params := t.model.Params()
	step, err := t.est.Estimate(t.iter, t.grad)
	if err == nil && !t.b.AllFinite(t.grad) {
		err = fmt.Errorf("gradient estimate: %w", ErrNonFinite)
	}
	if err != nil {
		return step, err
	}
	t.lastLoss = t.oracle.Losses()
	if t.prev != nil {
		t.b.Copy(t.prev, params.Flat())
	}
	t.b.Copy(params.Grad(), t.grad)
	t.opt.Step(lr)
	if err := t.b.Sync(); err != nil {
		return step, fmt.Errorf("device: %w", err)
	}
	return step, nil
}

func (t *trainer) summary() *Summary {
	tot := t.est.Totals()
	return &Summary{Out: t.cfg.Out, Iterations: t.iter, SamplesDrawn: tot.Samples, Evaluations: tot.Evals,
		Loss: t.lastLoss, WallSeconds: t.wall()}
}
