package train

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/runfolder"
)

// iteration is what the loop tells its recorders after each optimizer
// step.
type iteration struct {
	n    int       // completed iterations, this one included
	step mlmc.Step // this iteration's draw
	lr   float32   // the learning rate it stepped with
	// last says that the run ends after this iteration (its length or
	// --max-samples reached): the final checkpoint follows anyway.
	last bool
}

// A recorder watches the training loop from outside the step: metrics,
// progress, evaluation and checkpoints are recorders, so that the loop is
// only the step and the stop agreement. record is called after every
// iteration, in the order recorders lists them; an error stops the run.
// The idea is gonum's optimize.Recorder.
type recorder interface {
	record(it iteration) error
}

// A finisher is a recorder with work at the end of a run that completed
// its length (not one that stopped early).
type finisher interface {
	finish()
}

// A closer is a recorder holding something open until the loop returns.
type closer interface {
	close()
}

// recorders are the loop's recorders of this session, in the order they
// run: the caller's callback, metrics.jsonl, progress, the kNN monitor,
// periodic checkpoints. Only rank 0 writes metrics and evaluates; every
// rank takes part in the checkpoints' agreement.
func (t *trainer) recorders() ([]recorder, error) {
	var rs []recorder
	if t.sess.OnStep != nil {
		rs = append(rs, stepCallback{t})
	}
	lead := t.comm.Rank() == 0
	if lead {
		app, err := runfolder.OpenAppender(filepath.Join(t.plan.Out, runfolder.MetricsFile))
		if err != nil {
			return nil, err
		}
		rs = append(rs, &metricsLog{t: t, app: app})
	}
	rs = append(rs, t.newProgress())
	if lead && t.plan.EvalPeriod > 0 {
		rs = append(rs, knnMonitor{t})
	}
	if t.plan.Run.CheckpointEvery > 0 {
		rs = append(rs, &periodicCheckpoint{t: t, every: t.plan.Run.CheckpointEvery, last: t.start})
	}
	return rs, nil
}

// stepCallback calls Session.OnStep.
type stepCallback struct{ t *trainer }

func (r stepCallback) record(it iteration) error {
	p := r.t.model.Params()
	if err := r.t.sess.OnStep(it.n, p.Flat(), p.State()); err != nil {
		return fmt.Errorf("iteration %d: %w", it.n, err)
	}
	return nil
}

// metricsLog appends a line to metrics.jsonl every --log-every iterations
// and after the last.
type metricsLog struct {
	t   *trainer
	app *runfolder.Appender
}

func (r *metricsLog) record(it iteration) error {
	t := r.t
	every := t.plan.Run.LogEvery
	if every <= 0 || (it.n%every != 0 && !it.last) {
		return nil
	}
	tot := t.totals
	m := runfolder.Metrics{Iteration: it.n, Epoch: float64(it.n) / float64(t.plan.ItersPerEpoch),
		DataEpoch: float64(tot.Samples) / float64(t.plan.TrainImages), Levels: slices.Clone(it.step.Levels), SamplesDrawn: tot.Samples,
		Evaluations: tot.Evals, Redraws: tot.Redraws, Loss: t.lastLoss, LR: float64(it.lr), WallSeconds: t.wall()}
	if excess := t.lastExcess; !math.IsNaN(excess) {
		m.LossMinusLog2NMinus1 = &excess
	}
	return r.app.Append(m)
}

func (r *metricsLog) close() { r.app.Close() }

// progress shows a progress bar (Session.Progress), or else a log line
// after the first iteration of the session, every 10 s and after the last.
type progress struct {
	t             *trainer
	bar           *progressbar.ProgressBar // nil: log lines
	sessionStart  int                      // iterations done when the session began
	imagesAtStart int64
	lastLine      time.Time
}

func (t *trainer) newProgress() *progress {
	p := &progress{t: t, sessionStart: t.iter, imagesAtStart: t.totals.Samples, lastLine: t.start}
	if t.sess.Progress {
		p.bar = progressbar.NewOptions(t.plan.TotalIters,
			progressbar.OptionSetWriter(t.log),
			progressbar.OptionSetDescription("train"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionFullWidth())
		p.bar.Set(t.iter)
	}
	return p
}

func (p *progress) record(it iteration) error {
	t := p.t
	epoch := float64(it.n) / float64(t.plan.ItersPerEpoch)
	elapsed := time.Since(t.start).Seconds()
	rate := float64(t.totals.Samples-p.imagesAtStart) / elapsed
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("epoch %.2f loss-%s %.4f %.0f images/s", epoch, t.excessScale(), t.lastExcess, rate))
		p.bar.Set(it.n)
		return nil
	}
	if time.Since(p.lastLine) <= 10*time.Second && !it.last && it.n != p.sessionStart+1 {
		return nil
	}
	eta := time.Duration(float64(t.plan.TotalIters-it.n)*elapsed/float64(it.n-p.sessionStart)) * time.Second
	t.logf("iter %d/%d epoch %.2f loss %.4f (L_B-%s %.4f) lr %.4g images/s %.1f eta %s",
		it.n, t.plan.TotalIters, epoch, t.lastLoss, t.excessScale(), t.lastExcess, it.lr, rate, eta.Round(time.Second))
	p.lastLine = time.Now()
	return nil
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.t.log)
	}
}

// knnMonitor appends the kNN accuracy to eval.jsonl every EvalPeriod
// iterations.
type knnMonitor struct{ t *trainer }

func (r knnMonitor) record(it iteration) error {
	if it.n%r.t.plan.EvalPeriod != 0 {
		return nil
	}
	return r.t.evalKNN()
}

// periodicCheckpoint checkpoints by wall time (--checkpoint-every), so that
// a crash loses at most that much work whatever an iteration costs; the
// ranks agree on when (their clocks differ). The last iteration is left to
// the final checkpoint.
type periodicCheckpoint struct {
	t     *trainer
	every time.Duration
	last  time.Time // of the last checkpoint, or the session's start
}

func (r *periodicCheckpoint) record(it iteration) error {
	if it.last {
		return nil
	}
	t := r.t
	due, err := collective.Agree(t.comm, time.Since(r.last) >= r.every)
	if err != nil {
		return t.lostRank(err)
	}
	if !due {
		return nil
	}
	if err := t.checkpoint(); err != nil {
		return t.lostRank(err)
	}
	t.lastCheckpoint, r.last = it.n, time.Now()
	if !t.sess.Progress {
		t.logf("checkpoint at iteration %d (every %s of wall time)", it.n, r.every)
	}
	return nil
}
