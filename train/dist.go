package train

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/tensor"
)

// Data-parallel training. Every rank holds the same parameters,
// optimizer state and VR state; each iteration every rank computes its own
// estimate and the ranks average them (an all-reduce) before the optimizer
// step, which they all take identically.
//   - MLMC estimators (and L-SGD's VR corrections alike): rank r draws its
//     own levels and images from streams seeded by rank, so P ranks make P
//     independent draws per iteration and the estimate is their mean.
//   - L-SGD: the 2^L images of the one draw are split over the ranks, 2^L/P
//     each, with batch norm over each rank's share; the projections are
//     gathered so that the loss (its negatives) is that of all 2^L images.
// Costs are summed over ranks. Rank 0 writes the run folder.

// rankSeed is the seed of rank r's loader stream and level draws. Rank 0
// keeps the run's seed, so that a world of one rank is the single-process
// run.
func rankSeed(seed uint64, rank int) uint64 {
	return seed + uint64(rank)*0x9e3779b97f4a7c15
}

// splitsBatch says whether the estimator's draws are split over the ranks
// (L-SGD) rather than made independently by each rank (MLMC): the method
// says.
func splitsBatch(estimator mlmc.Kind, ranks int) bool {
	return ranks > 1 && estimator.Method.SplitsBatch()
}

// launchRank is this process's rank as far as it is known before the
// communicator is opened: the caller's communicator, the launcher's
// environment, or --rank for a rendezvous.
func launchRank(sess Session) int {
	if sess.Comm != nil {
		return sess.Comm.Rank()
	}
	if l, err := collective.DetectLaunch(os.Getenv); err == nil && l.Size > 0 {
		return l.Rank
	}
	return sess.Rank
}

// localGPU is the GPU this rank uses: ranks started by mpirun take the GPU
// of their rank on the node (OMPI_COMM_WORLD_LOCAL_RANK), so that P ranks
// on a node of P GPUs use one each, unless the launcher already gave each
// rank one GPU through CUDA_VISIBLE_DEVICES; otherwise GPU 0.
func localGPU(dist collective.Kind) int {
	if dist == collective.KindNone {
		return 0
	}
	if v := os.Getenv("CUDA_VISIBLE_DEVICES"); v != "" && !strings.Contains(v, ",") {
		return 0 // the launcher gave this rank its one GPU
	}
	if l, err := collective.DetectLaunch(os.Getenv); err == nil && l.Size > 0 {
		return l.LocalRank
	}
	return 0
}

// errRankLost is returned (wrapped) when a collective call was still
// waiting for other ranks after this rank was told to stop: under mpirun
// that is what happens when another rank dies.
var errRankLost = errors.New("the other ranks stopped answering")

// rankGrace is how long a rank told to stop (SIGTERM, SIGINT) still waits
// for a collective call in flight: long enough for healthy ranks told to
// stop at the same time to finish their iteration and agree to stop (a
// batch system's SIGTERM to every task), short enough that a rank waiting
// on a dead one does not hang. mpirun does not wait that long: it sends
// SIGTERM to the survivors when a rank dies and SIGKILL one second later
// (odls_base_sigkill_timeout), which is why onStall speaks at once.
const rankGrace = 30 * time.Second

// guardedComm is a communicator whose calls give up when the run is told to
// stop while they wait: a call blocked on a dead rank would otherwise
// never return.
type guardedComm struct {
	collective.Comm
	done    <-chan struct{}   // the run's context; nil until the loop starts
	onStall func(what string) // told once when a stop arrives during a call
	stalled bool
	lost    bool
}

func (g *guardedComm) wait(what string, f func() error) error {
	if g.lost {
		return fmt.Errorf("%s: %w", what, errRankLost)
	}
	result := make(chan error, 1)
	go func() { result <- f() }()
	select {
	case err := <-result:
		return err
	case <-g.done:
	}
	if !g.stalled && g.onStall != nil {
		g.stalled = true
		g.onStall(what)
	}
	select {
	case err := <-result:
		return err
	case <-time.After(rankGrace):
		g.lost = true
		return fmt.Errorf("%s: %w", what, errRankLost)
	}
}

func (g *guardedComm) AllReduceSum(buf tensor.Buffer) error {
	return g.wait("all-reduce", func() error { return g.Comm.AllReduceSum(buf) })
}

func (g *guardedComm) Broadcast(buf tensor.Buffer, root int) error {
	return g.wait("broadcast", func() error { return g.Comm.Broadcast(buf, root) })
}

func (g *guardedComm) AllReduceFloat64(x []float64) error {
	return g.wait("all-reduce", func() error { return g.Comm.AllReduceFloat64(x) })
}

func (g *guardedComm) Barrier() error {
	return g.wait("barrier", g.Comm.Barrier)
}

// Close finalises the communicator unless a call was abandoned: that call
// still holds it, and finalising would wait for it forever.
func (g *guardedComm) Close() error {
	if g.lost {
		return nil
	}
	return g.Comm.Close()
}

// openComm opens the communicator of the run (the caller's, or the one
// --dist asks for) and checks the world against the session's rank and
// world size.
func (t *trainer) openComm(distAddr string) error {
	var c collective.Comm
	if t.sess.Comm != nil {
		c = t.sess.Comm
		t.logf("dist: given by caller: %s", c.Describe())
	} else {
		var line string
		var err error
		c, line, err = collective.Open(t.plan.Dist, t.b, collective.Options{Addr: distAddr, Rank: t.sess.Rank, Size: t.sess.WorldSize})
		if err != nil {
			return err
		}
		t.ownComm = true
		t.logf("%s", line)
	}
	// The folder and the log were set up for launchRank's guess; a world
	// that disagrees (--rank or --world-size without a launcher or
	// rendezvous that provides them) would leave no rank 0 or two.
	if want := launchRank(t.sess); c.Rank() != want || (t.sess.WorldSize > 0 && c.Size() != t.sess.WorldSize) {
		if t.ownComm {
			c.Close()
		}
		return fmt.Errorf("--rank %d --world-size %d (or the launcher) disagree with the communicator, %s, which is rank %d of %d: give --rank and --world-size only with --dist nccl --dist-addr, or start the ranks with mpirun",
			want, t.sess.WorldSize, c.Describe(), c.Rank(), c.Size())
	}
	t.comm = c
	if c.Size() > 1 {
		t.comm = &guardedComm{Comm: c}
	}
	return nil
}

// reduceHeadStatistics averages over the ranks the group-norm head's
// pending running statistics (each rank's were moved by its own share of
// the iteration's images), so that every rank commits the same ones.
func (t *trainer) reduceHeadStatistics() error {
	if t.comm.Size() == 1 {
		return nil
	}
	mean, variance, ok := t.model.PendingHeadStatistics()
	if !ok {
		return nil
	}
	if err := collective.AllReduceMean(t.comm, t.b, mean); err != nil {
		return err
	}
	return collective.AllReduceMean(t.comm, t.b, variance)
}

// reduceEstimate turns the ranks' estimates in t.grad into their mean, the
// estimate of the iteration, on every rank. A VR estimator's running
// estimate m_t then takes the mean too, so that it stays identical on all
// ranks: with m_{t-1} identical, the mean of m_{t-1} + c_r is m_{t-1} plus
// the mean correction, as if one process had averaged the P corrections.
func (t *trainer) reduceEstimate() error {
	if t.comm.Size() == 1 {
		return nil
	}
	if err := collective.AllReduceMean(t.comm, t.b, t.grad); err != nil {
		return err
	}
	if m, ok := t.est.VRState(); ok {
		t.b.Copy(m, t.grad)
	}
	return nil
}

// reduceStep sums the step's costs over the ranks and averages the loss,
// so that the metrics count what all ranks drew. A draw split over the
// ranks (L-SGD) is one oracle evaluation however many ranks share it: each
// rank passes only its share of the images through the network.
func (t *trainer) reduceStep(step mlmc.Step, loss, excess float64) (mlmc.Step, float64, float64, error) {
	if t.comm.Size() == 1 {
		return step, loss, excess, nil
	}
	x := []float64{float64(step.Samples), float64(step.Evals), float64(step.Redraws), loss, excess}
	if err := t.comm.AllReduceFloat64(x); err != nil {
		return step, loss, excess, fmt.Errorf("sum the costs over the ranks: %w", err)
	}
	step.Samples, step.Evals, step.Redraws = int64(x[0]), int64(x[1]), int(x[2])
	if t.plan.SplitBatch {
		step.Evals /= int64(t.comm.Size())
	}
	return step, x[3] / float64(t.comm.Size()), x[4] / float64(t.comm.Size()), nil
}
