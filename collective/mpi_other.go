//go:build !(linux || darwin || freebsd || netbsd)

package collective

import (
	"errors"

	"github.com/simclr-go/simclr/tensor"
)

// MPI is not available on this system.
type MPI struct{ Single }

// OpenMPI fails: purego cannot load libraries here.
func OpenMPI(tensor.Backend) (*MPI, error) {
	return nil, errors.New("MPI is not supported on this operating system")
}
