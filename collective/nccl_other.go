//go:build !linux

package collective

import (
	"errors"

	"github.com/simclr-go/simclr/tensor"
)

var errNoNCCL = errors.New("NCCL is available on Linux only")

func ncclAvailable(tensor.Backend) error                       { return errNoNCCL }
func openNCCLOverMPI(tensor.Backend) (Comm, error)             { return nil, errNoNCCL }
func openNCCLRendezvous(tensor.Backend, Options) (Comm, error) { return nil, errNoNCCL }
