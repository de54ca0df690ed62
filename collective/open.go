package collective

import (
	"fmt"
	"time"

	"github.com/simclr-go/simclr/tensor"
)

// Options are the settings of Open beyond the kind.
type Options struct {
	// Addr is the host:port of rank 0's TCP rendezvous for NCCL when the
	// ranks were not started by mpirun; Rank and Size then say who this
	// process is.
	Addr       string
	Rank, Size int
	// Timeout bounds the rendezvous (default 2 minutes).
	Timeout time.Duration
	// Getenv reads the launcher's environment (default os.Getenv).
	Getenv func(string) string
}

// Open returns the communicator kind asks for, over buffers of b, and a
// line for the run's log saying what was chosen and why. KindAuto chooses
// Single when no launcher started the process and no rendezvous is given,
// NCCL on a CUDA backend, MPI otherwise.
func Open(kind Kind, b tensor.Backend, opts Options) (Comm, string, error) {
	launch, err := DetectLaunch(opts.Getenv)
	if err != nil {
		return nil, "", err
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	underMPI := launch.Size > 0
	if kind == KindAuto {
		switch {
		case !underMPI && opts.Addr == "":
			kind = KindNone
		case b.Name() == "cuda" && ncclAvailable(b) == nil:
			kind = KindNCCL
		case !underMPI:
			// Only NCCL has a rendezvous; MPI outside mpirun would make
			// every process a world of its own, each taking itself for
			// rank 0 of the run folder.
			why := "the CPU backend"
			if b.Name() == "cuda" {
				why = fmt.Sprintf("no NCCL here (%v)", ncclAvailable(b))
			}
			return nil, "", fmt.Errorf("--dist-addr %s is NCCL's rendezvous, which needs a CUDA backend and libnccl.so.2, but this process has %s: start the ranks with mpirun instead (--dist auto or mpi)", opts.Addr, why)
		default:
			// On a CUDA backend without NCCL, MPI stages the buffers
			// through host memory: slower, but it runs.
			kind = KindMPI
		}
	}
	switch kind {
	case KindNone:
		if launch.Size > 1 {
			return nil, "", fmt.Errorf("--dist none, but %s started %d ranks: each would train alone; use --dist auto or mpi, or start one process", launch.By, launch.Size)
		}
		return Single{}, "dist none: single process", nil
	case KindMPI:
		// On a CUDA backend Open MPI's buffers are staged through host
		// memory (Open MPI may not be CUDA-aware): it works everywhere but
		// costs two copies; NCCL avoids them.
		m, err := OpenMPI(b)
		if err != nil {
			return nil, "", fmt.Errorf("--dist mpi: %w", err)
		}
		return m, "dist mpi: " + m.Describe(), nil
	case KindNCCL:
		var n Comm
		if underMPI {
			n, err = openNCCLOverMPI(b)
		} else {
			if opts.Addr == "" || opts.Size < 1 {
				return nil, "", fmt.Errorf("--dist nccl without mpirun needs --dist-addr host:port (rank 0's rendezvous), --rank and --world-size")
			}
			n, err = openNCCLRendezvous(b, opts)
		}
		if err != nil {
			return nil, "", fmt.Errorf("--dist nccl: %w", err)
		}
		return n, "dist nccl: " + n.Describe(), nil
	}
	return nil, "", fmt.Errorf("unknown --dist %q", kind)
}
