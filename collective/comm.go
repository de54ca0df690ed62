package collective

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/simclr-go/simclr/tensor"
)

// Comm is a communicator over Size ranks. Every rank must make the same
// calls in the same order with buffers of the same length; a call returns
// when this rank's part of it is done (for a device buffer: queued on the
// device's stream, ordered with the backend's kernels).
type Comm interface {
	// Rank is this process's rank, 0..Size()-1; rank 0 writes the run folder.
	Rank() int
	// Size is the number of ranks.
	Size() int
	// Describe says which library carries the communication.
	Describe() string
	// AllReduceSum replaces buf, on every rank, with the element-wise sum of
	// buf over the ranks.
	AllReduceSum(buf tensor.Buffer) error
	// Broadcast replaces buf on every rank with root's buf.
	Broadcast(buf tensor.Buffer, root int) error
	// AllReduceFloat64 replaces the host values x, on every rank, with their
	// element-wise sum over the ranks (costs, losses, flags: a few values).
	AllReduceFloat64(x []float64) error
	// Barrier returns once every rank has called it.
	Barrier() error
	// Abort stops every rank of the job, without waiting for them: a rank
	// that fails alone would otherwise leave the others waiting in their
	// next collective call forever. It may not return.
	Abort(code int)
	// Close releases the communicator; it is not usable afterwards.
	Close() error
}

// Kind names an implementation for the --dist flag.
type Kind string

const (
	KindAuto        Kind = "auto" // MPI when started by mpirun (NCCL on a CUDA backend), else none
	KindNone        Kind = "none" // world size 1
	KindMPI         Kind = "mpi"  // Open MPI
	KindNCCL        Kind = "nccl" // NCCL, its id over MPI or a TCP rendezvous
	envMPISize           = "OMPI_COMM_WORLD_SIZE"
	envMPIRank           = "OMPI_COMM_WORLD_RANK"
	envMPILocalRank      = "OMPI_COMM_WORLD_LOCAL_RANK"
)

// Kinds lists the accepted values of --dist.
var Kinds = []Kind{KindAuto, KindNone, KindMPI, KindNCCL}

// ParseKind checks a --dist value.
func ParseKind(s string) (Kind, error) {
	k := Kind(strings.ToLower(strings.TrimSpace(s)))
	if k == "" {
		return KindAuto, nil
	}
	for _, ok := range Kinds {
		if k == ok {
			return k, nil
		}
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown --dist %q: use one of %s", s, strings.Join(names, ", "))
}

// Launch is what the launcher told this process: the world it belongs to.
type Launch struct {
	// Size and Rank from the launcher's environment; Size is 0 when the
	// process was not started by a launcher.
	Size, Rank int
	// LocalRank is the rank among the ranks on this node (selects the GPU).
	LocalRank int
	// By names the launcher ("mpirun (Open MPI)").
	By string
}

// DetectLaunch reads the launcher's environment (Open MPI's mpirun sets
// OMPI_COMM_WORLD_SIZE, _RANK and _LOCAL_RANK in every rank).
func DetectLaunch(getenv func(string) string) (Launch, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	sizeStr := getenv(envMPISize)
	if sizeStr == "" {
		return Launch{}, nil
	}
	atoi := func(name string) (int, error) {
		v, err := strconv.Atoi(getenv(name))
		if err != nil {
			return 0, fmt.Errorf("%s=%q from the launcher is not a number: %w", name, getenv(name), err)
		}
		return v, nil
	}
	var l Launch
	var err error
	if l.Size, err = atoi(envMPISize); err != nil {
		return Launch{}, err
	}
	if l.Rank, err = atoi(envMPIRank); err != nil {
		return Launch{}, err
	}
	if getenv(envMPILocalRank) != "" {
		if l.LocalRank, err = atoi(envMPILocalRank); err != nil {
			return Launch{}, err
		}
	}
	if l.Size < 1 || l.Rank < 0 || l.Rank >= l.Size {
		return Launch{}, fmt.Errorf("launcher says rank %d of %d: not a valid rank", l.Rank, l.Size)
	}
	l.By = "mpirun (Open MPI)"
	return l, nil
}

// Single is the communicator of a world of one rank: every operation leaves
// its arguments as they are.
type Single struct{}

func (Single) Rank() int                          { return 0 }
func (Single) Size() int                          { return 1 }
func (Single) Describe() string                   { return "single process (no communication)" }
func (Single) AllReduceSum(tensor.Buffer) error   { return nil }
func (Single) Broadcast(tensor.Buffer, int) error { return nil }
func (Single) AllReduceFloat64([]float64) error   { return nil }
func (Single) Barrier() error                     { return nil }
func (Single) Abort(int)                          {}
func (Single) Close() error                       { return nil }

var _ Comm = Single{}

// ErrClosed is returned by the operations of a closed communicator.
var ErrClosed = errors.New("collective: communicator is closed")

// BroadcastBytes returns root's data on every rank. It is built on
// AllReduceFloat64 (every other rank contributes zeros), which suits the
// small states it carries (generator states, stream positions).
func BroadcastBytes(c Comm, data []byte, root int) ([]byte, error) {
	n := []float64{0}
	if c.Rank() == root {
		n[0] = float64(len(data))
	}
	if err := c.AllReduceFloat64(n); err != nil {
		return nil, fmt.Errorf("broadcast length: %w", err)
	}
	vals := make([]float64, int(n[0]))
	if c.Rank() == root {
		for i, b := range data {
			vals[i] = float64(b)
		}
	}
	if err := c.AllReduceFloat64(vals); err != nil {
		return nil, fmt.Errorf("broadcast %d bytes: %w", len(vals), err)
	}
	out := make([]byte, len(vals))
	for i, v := range vals {
		out[i] = byte(v)
	}
	return out, nil
}

// AllGatherBytes returns every rank's data, indexed by rank, on every rank.
func AllGatherBytes(c Comm, data []byte) ([][]byte, error) {
	p, r := c.Size(), c.Rank()
	lens := make([]float64, p)
	lens[r] = float64(len(data))
	if err := c.AllReduceFloat64(lens); err != nil {
		return nil, fmt.Errorf("gather lengths: %w", err)
	}
	off := make([]int, p+1)
	for i, l := range lens {
		off[i+1] = off[i] + int(l)
	}
	vals := make([]float64, off[p])
	for i, b := range data {
		vals[off[r]+i] = float64(b)
	}
	if err := c.AllReduceFloat64(vals); err != nil {
		return nil, fmt.Errorf("gather %d bytes: %w", len(vals), err)
	}
	out := make([][]byte, p)
	for i := range out {
		out[i] = make([]byte, off[i+1]-off[i])
		for j := range out[i] {
			out[i][j] = byte(vals[off[i]+j])
		}
	}
	return out, nil
}

// AllReduceMean replaces buf with its mean over the ranks.
func AllReduceMean(c Comm, b tensor.Backend, buf tensor.Buffer) error {
	if c.Size() == 1 {
		return nil
	}
	if err := c.AllReduceSum(buf); err != nil {
		return err
	}
	b.Scale(buf, float32(1/float64(c.Size())))
	return nil
}

// Agree returns whether flag is set on any rank (an OR over ranks), so that
// every rank takes the same decision, e.g. to stop at the same iteration.
func Agree(c Comm, flag bool) (bool, error) {
	if c.Size() == 1 {
		return flag, nil
	}
	x := []float64{0}
	if flag {
		x[0] = 1
	}
	if err := c.AllReduceFloat64(x); err != nil {
		return false, err
	}
	return x[0] > 0, nil
}

// maxCount is the largest element count one MPI or NCCL call is given (MPI
// counts are C ints); longer buffers go in pieces.
const maxCount = math.MaxInt32
