// Package collective is the communication data-parallel training needs: the
// element-wise sum of a float32 buffer over all ranks (all-reduce), a
// broadcast from one rank, a barrier, and small host-side sums (counts,
// losses, stop flags) and byte broadcasts built on them.
//
// Three implementations sit behind the Comm interface:
//   - Single, world size 1: every operation is the identity. It is the
//     default and changes nothing.
//   - MPI: Open MPI's libmpi.so.40, loaded at run time with purego (no cgo),
//     for ranks started by `mpirun -np P simclr train ...`. Buffers of the CPU
//     backend are reduced in place; buffers of another backend are staged
//     through host memory.
//   - NCCL: libnccl.so.2 built for the CUDA major of the backend's library
//     set (ncclset.go), loaded at run time, reducing CUDA buffers on the
//     backend's stream. Its communicator's unique id travels over MPI (under
//     mpirun) or over a TCP rendezvous (Rendezvous).
//
// Open MPI's handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) are the
// addresses of global objects of libmpi (ompi_mpi_comm_world, ...), so they
// are found with dlsym like functions. Other MPI implementations (MPICH,
// Intel MPI) use integer handles from their headers and are not supported.
package collective
