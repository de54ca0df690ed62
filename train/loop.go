package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/runfolder"
)

// loop trains until the run's length (or --max-samples) is reached or the
// ranks agree to stop, then finishes the run: precise BN, the final
// checkpoint and the linear probe. What happens around each step is in the
// recorders (recorders.go).
func (t *trainer) loop(ctx context.Context) (*Summary, error) {
	sessionStart := t.iter
	t.lastCheckpoint = -1 // before the first
	if t.iter > 0 {
		t.lastCheckpoint = t.iter // a resumed session starts from one
	}
	// Wall time counts training (and its evaluations), not loading the data.
	t.start = time.Now()
	recs, err := t.recorders()
	if err != nil {
		return nil, err
	}
	defer closeRecorders(recs)
	for t.iter < t.plan.TotalIters && !t.samplesReached() {
		if err := t.agreeStop(ctx, sessionStart); err != nil {
			return t.summaryOf(err), err
		}
		lr := t.sched.LR(t.iter)
		t.oracle.SetIteration(t.iter, t.plan.TotalIters)
		step, err := t.iterate(lr)
		if err != nil {
			return nil, t.stepError(err)
		}
		t.iter++
		it := iteration{n: t.iter, step: step, lr: lr, last: t.iter == t.plan.TotalIters || t.samplesReached()}
		for _, r := range recs {
			if err := r.record(it); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range recs {
		if f, ok := r.(finisher); ok {
			f.finish()
		}
	}
	return t.finish()
}

// samplesReached says whether --max-samples ends the run here.
func (t *trainer) samplesReached() bool {
	return t.plan.Run.MaxSamples > 0 && t.totals.Samples >= t.plan.Run.MaxSamples
}

func closeRecorders(recs []recorder) {
	for _, r := range recs {
		if c, ok := r.(closer); ok {
			c.close()
		}
	}
}

// agreeStop stops every rank at the same iteration when any rank is told
// to (a signal, or Session.StopAfter reached in this session): it saves a
// checkpoint and returns ErrInterrupted or ErrIterationsLimit, wrapped.
func (t *trainer) agreeStop(ctx context.Context, sessionStart int) error {
	atLimit := t.sess.StopAfter > 0 && t.iter-sessionStart >= t.sess.StopAfter
	stop, err := collective.Agree(t.comm, ctx.Err() != nil || atLimit)
	if err != nil {
		return t.lostRank(err)
	}
	if !stop {
		return nil
	}
	if err := t.checkpoint(); err != nil {
		return err
	}
	// A signal wins over the limit; a rank that saw neither was stopped by
	// another rank's signal.
	why, what := ErrInterrupted, "interrupted"
	if atLimit && ctx.Err() == nil {
		why, what = ErrIterationsLimit, "stopped at the iterations limit"
	}
	t.logf("\n%s at iteration %d: checkpoint saved; continue with: simclr train --resume %s", what, t.iter, t.plan.Out)
	return fmt.Errorf("%w at iteration %d (resume with --resume %s)", why, t.iter, t.plan.Out)
}

// summaryOf is the summary a stop returns with its error: a run stopped
// on request reports where it stopped, a failed one nothing.
func (t *trainer) summaryOf(err error) *Summary {
	if errors.Is(err, ErrInterrupted) {
		return t.summary()
	}
	return nil
}

// stepError explains an iteration that failed: a non-finite estimate
// (with the checkpoint kept), a lost rank, or a device failure after which
// one process saves what it can.
func (t *trainer) stepError(err error) error {
	if errors.Is(err, contrastive.ErrNonFinite) {
		kept := fmt.Sprintf("the last good checkpoint (iteration %d) is kept in %s", t.lastCheckpoint, t.plan.Out)
		if t.lastCheckpoint < 0 {
			kept = "no checkpoint had been written yet"
		}
		return fmt.Errorf("iteration %d: %w; training stopped and %s: lower --lr (now %g) or raise --temperature and train again",
			t.iter+1, err, kept, t.plan.LR)
	}
	if errors.Is(err, errRankLost) {
		return t.lostRank(fmt.Errorf("iteration %d: %w", t.iter+1, err))
	}
	if t.comm.Size() == 1 {
		// One process: save what the failed query left intact.
		return fmt.Errorf("iteration %d: %w; %s", t.iter+1, err, t.checkpointAfterFailure())
	}
	return fmt.Errorf("iteration %d: %w", t.iter+1, err)
}

// finish ends a run that completed its length: the final checkpoint and
// the probe after it get recalibrated statistics.
func (t *trainer) finish() (*Summary, error) {
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
	if t.plan.Run.Probe && t.comm.Rank() == 0 {
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

// excessScale names what the excess loss subtracts: the loss's chance
// level, log(2N-1) for NT-Xent (contrastive.Oracle.Losses).
func (t *trainer) excessScale() string { return t.oracle.Loss().ChanceFormula() }
