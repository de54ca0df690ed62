package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/runfolder"
)

func (t *trainer) loop(ctx context.Context) (*Summary, error) {
	cfg := &t.cfg
	lead := t.comm.Rank() == 0 // writes the run folder and evaluates
	var metrics *runfolder.Appender
	if lead {
		var err error
		metrics, err = runfolder.OpenAppender(filepath.Join(t.plan.Out, runfolder.MetricsFile))
		if err != nil {
			return nil, err
		}
		defer metrics.Close()
	}
	var bar *progressbar.ProgressBar
	if t.sess.Progress {
		bar = progressbar.NewOptions(t.plan.TotalIters,
			progressbar.OptionSetWriter(t.log),
			progressbar.OptionSetDescription("train"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionFullWidth())
		bar.Set(t.iter)
	}
	n := t.plan.TrainImages
	sessionStart := t.iter
	imagesAtStart := t.totals.Samples
	t.lastCheckpoint = -1 // before the first
	if t.iter > 0 {
		t.lastCheckpoint = t.iter // a resumed session starts from one
	}
	// Wall time counts training (and its evaluations), not loading the data.
	t.start = time.Now()
	t.lastLogTime = t.start
	lastCheckpointTime := t.start
	for t.iter < t.plan.TotalIters {
		if cfg.MaxSamples > 0 && t.totals.Samples >= cfg.MaxSamples {
			break
		}
		// Every rank stops at the same iteration, when any rank is told to.
		atLimit := t.sess.StopAfter > 0 && t.iter-sessionStart >= t.sess.StopAfter
		stop, err := collective.Agree(t.comm, ctx.Err() != nil || atLimit)
		if err != nil {
			return nil, t.lostRank(err)
		}
		if stop {
			if err := t.checkpoint(); err != nil {
				return nil, err
			}
			// A signal wins over the limit; a rank that saw neither was
			// stopped by another rank's signal.
			why, what := ErrInterrupted, "interrupted"
			if atLimit && ctx.Err() == nil {
				why, what = ErrIterationsLimit, "stopped at the iterations limit"
			}
			t.logf("\n%s at iteration %d: checkpoint saved; continue with: simclr train --resume %s", what, t.iter, t.plan.Out)
			return t.summary(), fmt.Errorf("%w at iteration %d (resume with --resume %s)", why, t.iter, t.plan.Out)
		}
		lr := t.sched.LR(t.iter)
		if t.oracle.Loss() == contrastive.SogCLR {
			t.oracle.SetGamma(t.cfg.SogCLRGammaAt(t.iter, t.plan.TotalIters))
		}
		step, err := t.iterate(lr)
		if err != nil {
			if errors.Is(err, contrastive.ErrNonFinite) {
				kept := fmt.Sprintf("the last good checkpoint (iteration %d) is kept in %s", t.lastCheckpoint, t.plan.Out)
				if t.lastCheckpoint < 0 {
					kept = "no checkpoint had been written yet"
				}
				return nil, fmt.Errorf("iteration %d: %w; training stopped and %s: lower --lr (now %g) or raise --temperature and train again",
					t.iter+1, err, kept, t.plan.LR)
			}
			if errors.Is(err, errRankLost) {
				return nil, t.lostRank(fmt.Errorf("iteration %d: %w", t.iter+1, err))
			}
			if t.comm.Size() == 1 {
				// One process: save what the failed query left intact.
				return nil, fmt.Errorf("iteration %d: %w; %s", t.iter+1, err, t.checkpointAfterFailure())
			}
			return nil, fmt.Errorf("iteration %d: %w", t.iter+1, err)
		}
		t.iter++
		if t.sess.OnStep != nil {
			if err := t.sess.OnStep(t.iter, t.model.Params().Flat(), t.model.Params().State()); err != nil {
				return nil, fmt.Errorf("iteration %d: %w", t.iter, err)
			}
		}
		totals := t.totals
		last := t.iter == t.plan.TotalIters || (cfg.MaxSamples > 0 && totals.Samples >= cfg.MaxSamples)
		if lead && cfg.LogEvery > 0 && (t.iter%cfg.LogEvery == 0 || last) {
			m := runfolder.Metrics{Iteration: t.iter, Epoch: float64(t.iter) / float64(t.plan.ItersPerEpoch),
				DataEpoch: float64(totals.Samples) / float64(n), Levels: step.Levels, SamplesDrawn: totals.Samples,
				Evaluations: totals.Evals, Redraws: totals.Redraws, Loss: t.lastLoss, LR: float64(lr), WallSeconds: t.wall()}
			if excess := t.lastExcess; !math.IsNaN(excess) {
				m.LossMinusLog2NMinus1 = &excess
			}
			if err := metrics.Append(m); err != nil {
				return nil, err
			}
		}
		if bar != nil {
			rate := float64(totals.Samples-imagesAtStart) / time.Since(t.start).Seconds()
			bar.Describe(fmt.Sprintf("epoch %.2f loss-%s %.4f %.0f images/s", float64(t.iter)/float64(t.plan.ItersPerEpoch), t.excessScale(), t.lastExcess, rate))
			bar.Set(t.iter)
		} else if time.Since(t.lastLogTime) > 10*time.Second || last || t.iter == sessionStart+1 {
			elapsed := time.Since(t.start).Seconds()
			rate := float64(totals.Samples-imagesAtStart) / elapsed
			eta := time.Duration(float64(t.plan.TotalIters-t.iter)*elapsed/float64(t.iter-sessionStart)) * time.Second
			t.logf("iter %d/%d epoch %.2f loss %.4f (L_B-%s %.4f) lr %.4g images/s %.1f eta %s",
				t.iter, t.plan.TotalIters, float64(t.iter)/float64(t.plan.ItersPerEpoch), t.lastLoss, t.excessScale(), t.lastExcess, lr, rate, eta.Round(time.Second))
			t.lastLogTime = time.Now()
		}
		if every := t.plan.EvalPeriod; lead && every > 0 && t.iter%every == 0 {
			if err := t.evalKNN(); err != nil {
				return nil, err
			}
		}
		// Periodic checkpoints by wall time, so that a crash loses at most
		// that much work whatever an iteration costs; the ranks agree on
		// when (their clocks differ).
		due := false
		if every := time.Duration(cfg.CheckpointEvery); every > 0 && !last {
			if due, err = collective.Agree(t.comm, time.Since(lastCheckpointTime) >= every); err != nil {
				return nil, t.lostRank(err)
			}
		}
		if due {
			every := time.Duration(cfg.CheckpointEvery)
			if err := t.checkpoint(); err != nil {
				return nil, t.lostRank(err)
			}
			t.lastCheckpoint, lastCheckpointTime = t.iter, time.Now()
			if bar == nil {
				t.logf("checkpoint at iteration %d (every %s of wall time)", t.iter, every)
			}
		}
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(t.log)
	}
	// The final checkpoint, and the probe after it, get recalibrated
	// statistics.
	if err := t.preciseBN(); err != nil {
		return nil, err
	}
	t.finished = true
	if err := t.checkpoint(); err != nil {
		return nil, err
	}
	sum := t.summary()
	t.logf("done: %d iterations, %d images drawn, %d evaluations, loss %.4f, %.1f s; checkpoint %s",
		sum.Iterations, sum.SamplesDrawn, sum.Evaluations, sum.Loss, sum.WallSeconds, filepath.Join(t.plan.Out, runfolder.ModelFile))
	if cfg.Probe && lead {
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
	passes := t.oracle.Passes()
	step, err := t.est.Estimate(t.iter, t.grad)
	// Oracle evaluations are network passes (docs/definitions.md, section 3
	// "Cost accounting"): three per H^l with separate halves.
	step.Evals = t.oracle.Passes() - passes
	if err == nil {
		err = t.reduceEstimate()
	}
	if err == nil && !t.b.AllFinite(t.grad) {
		err = fmt.Errorf("gradient estimate: %w", contrastive.ErrNonFinite)
	}
	if err != nil {
		return step, err
	}
	loss, excess := t.oracle.Losses()
	step, t.lastLoss, t.lastExcess, err = t.reduceStep(step, loss, excess)
	if err != nil {
		return step, err
	}
	t.totals.Iterations++
	t.totals.Samples += step.Samples
	t.totals.Evals += step.Evals
	t.totals.Redraws += int64(step.Redraws)
	if t.prev != nil {
		t.b.Copy(t.prev, params.Flat())
	}
	t.b.Copy(params.Grad(), t.grad)
	t.opt.Step(lr)
	// The group-norm head's running statistics move once per iteration,
	// so that every pass of the iteration used the same ones, and by the
	// mean of the ranks' updates, so that the ranks keep one network.
	if err := t.reduceHeadStatistics(); err != nil {
		return step, err
	}
	t.model.CommitHeadStatistics()
	if err := t.b.Sync(); err != nil {
		return step, fmt.Errorf("device: %w", err)
	}
	return step, nil
}

func (t *trainer) summary() *Summary {
	tot := t.totals
	return &Summary{Out: t.plan.Out, Iterations: t.iter, SamplesDrawn: tot.Samples, Evaluations: tot.Evals,
		Loss: t.lastLoss, LossExcess: t.lastExcess, WallSeconds: t.wall(), Rank: t.comm.Rank()}
}

// recoverer is a backend that can clear a recorded failure that left the
// device usable (an allocation it refused), so that the parameters can
// still be read back; it returns the failure when the device state is lost.
type recoverer interface{ Recover() error }

// checkpointAfterFailure saves a checkpoint after a query failed on the
// device (out of memory at a high RU/RR level, say), so that the run loses
// nothing: the failed iteration never reached the optimizer step, and the
// estimator keeps its VR state unless an iteration completes. It returns
// what happened, for the error message.
func (t *trainer) checkpointAfterFailure() string {
	if r, ok := t.b.(recoverer); ok {
		if err := r.Recover(); err != nil {
			return "no checkpoint could be saved (the device state is lost); the last one stands"
		}
	} else if err := t.b.Sync(); err != nil {
		return "no checkpoint could be saved (the device state is lost); the last one stands"
	}
	if err := t.checkpoint(); err != nil {
		return fmt.Sprintf("saving a checkpoint failed too (%v); the last one stands", err)
	}
	return fmt.Sprintf("checkpoint of iteration %d saved: continue with simclr train --resume %s (the failing level comes again only if drawn again), or start anew with a lower --max-servable-level",
		t.iter, t.plan.Out)
}

// lostRank explains an error of a run whose other ranks stopped answering
// (one was killed or failed; mpirun's own message says which): the run
// stops where it is, and the last checkpoint is intact.
func (t *trainer) lostRank(err error) error {
	if !errors.Is(err, errRankLost) {
		return err
	}
	return fmt.Errorf("%w; training stopped at iteration %d and %s", err, t.iter, t.keptCheckpoint())
}

// keptCheckpoint says which checkpoint a run of several ranks that stops
// now can resume from, and how.
func (t *trainer) keptCheckpoint() string {
	if t.lastCheckpoint < 0 {
		return "no checkpoint had been written yet: start the run again"
	}
	return fmt.Sprintf("the last checkpoint (iteration %d) in %s is intact: resume it with mpirun -np %d simclr train --resume %s",
		t.lastCheckpoint, t.plan.Out, t.comm.Size(), t.plan.Out)
}

// stalled is told when a stop (a signal) arrives while this rank waits for
// the others in a collective call. Under mpirun that is how the death of
// another rank shows (mpirun sends SIGTERM, then SIGKILL a second later),
// so the rank says at once what is intact.
func (t *trainer) stalled(what string) {
	fmt.Fprintf(os.Stderr, "rank %d of %d: told to stop while waiting for the other ranks (%s, iteration %d): if a rank died, the job ends here; %s\n",
		t.comm.Rank(), t.comm.Size(), what, t.iter+1, t.keptCheckpoint())
}

// excessScale names what the excess loss subtracts: log(2N-1) for NT-Xent,
// log(2N-2) for the decoupled losses, whose denominators leave the
// positive out (contrastive.Oracle.Losses).
func (t *trainer) excessScale() string {
	if t.oracle.Loss() != contrastive.NTXent {
		return "log(2N-2)"
	}
	return "log(2N-1)"
}
