//go:build linux

package collective

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/simclr-go/simclr/tensor"
)

// NCCL constants (nccl.h).
const (
	ncclSuccess     = 0
	ncclUint8       = 1
	ncclFloat32     = 7
	ncclFloat64     = 8
	ncclSum         = 0
	ncclUniqueIDLen = NCCLIDLen
)

// NCCL is a communicator of NCCL over CUDA buffers: its operations are
// queued on the CUDA backend's stream, after the kernels that produced the
// buffer and before those that read it, without a host round trip.
type NCCL struct {
	b          streamBackend
	rank, size int
	path       string
	version    int
	comm       uintptr
	boot       *MPI // the MPI that carried the id, kept for Abort; nil after a TCP rendezvous

	fn struct {
		getVersion, getUniqueID, commInitRank, allReduce, broadcast, commDestroy, commAbort, errorString uintptr
	}
	scratch tensor.Buffer // device staging for AllReduceFloat64
	closed  bool
}

var _ Comm = (*NCCL)(nil)

// streamBackend is a backend NCCL can queue its operations on (the CUDA
// backend), which also says where it found the CUDA libraries and of which
// CUDA major, so that an NCCL of that major is looked for beside them.
type streamBackend interface {
	tensor.Backend
	tensor.ExternalStream
	LibraryDirs() []string
	CUDAMajor() int
}

// OpenNCCL makes rank's member of an NCCL communicator of size ranks on the
// CUDA backend b. exchange must hand rank 0's id (filled in before the call
// on rank 0) to every rank: Rendezvous, or a broadcast over MPI. b's device
// must be this rank's GPU.
func OpenNCCL(b tensor.Backend, rank, size int, exchange func(id []byte) error) (*NCCL, error) {
	cb, ok := b.(streamBackend)
	if !ok {
		return nil, fmt.Errorf("--dist nccl needs the CUDA backend (this run uses %s): use --device cuda, or --dist mpi on the CPU", b.Name())
	}
	n := &NCCL{b: cb, rank: rank, size: size}
	if err := n.load(cb.LibraryDirs(), cb.CUDAMajor()); err != nil {
		return nil, err
	}
	var v int32
	if call(n.fn.getVersion, uintptr(unsafe.Pointer(&v))) == ncclSuccess {
		n.version = int(v)
	}
	id := make([]byte, ncclUniqueIDLen)
	if rank == 0 {
		if err := n.check("ncclGetUniqueId", call(n.fn.getUniqueID, uintptr(unsafe.Pointer(&id[0])))); err != nil {
			return nil, err
		}
	}
	if size > 1 {
		if err := exchange(id); err != nil {
			return nil, fmt.Errorf("NCCL: hand out the communicator's id: %w", err)
		}
	}
	err := cb.RunExternal(func(uintptr, func(tensor.Buffer) uintptr) error {
		return n.check("ncclCommInitRank", n.commInitRank(id))
	})
	if err != nil {
		return nil, fmt.Errorf("%w (rank %d of %d; every rank needs its own GPU)", err, rank, size)
	}
	return n, nil
}

// ncclAvailable reports whether libnccl.so.2 can be loaded for backend b,
// before MPI is initialised (it cannot be initialised twice, so --dist auto
// must choose first).
func ncclAvailable(b tensor.Backend) error {
	sb, ok := b.(streamBackend)
	if !ok {
		return fmt.Errorf("NCCL needs the CUDA backend, not %s", b.Name())
	}
	return (&NCCL{}).load(sb.LibraryDirs(), sb.CUDAMajor())
}

// openNCCLOverMPI makes the NCCL communicator of ranks started by mpirun:
// MPI carries the id and stays open for Abort.
func openNCCLOverMPI(b tensor.Backend) (*NCCL, error) {
	boot, err := OpenMPI(b)
	if err != nil {
		return nil, fmt.Errorf("under mpirun MPI carries NCCL's id: %w", err)
	}
	n, err := OpenNCCL(b, boot.Rank(), boot.Size(), func(id []byte) error { return boot.broadcastBytes(id, 0) })
	if err != nil {
		boot.Close()
		return nil, err
	}
	n.boot = boot
	return n, nil
}

// openNCCLRendezvous makes the NCCL communicator of ranks that meet at
// rank 0's TCP rendezvous.
func openNCCLRendezvous(b tensor.Backend, opts Options) (*NCCL, error) {
	return OpenNCCL(b, opts.Rank, opts.Size, func(id []byte) error {
		return Rendezvous(opts.Addr, opts.Rank, opts.Size, id, opts.Timeout)
	})
}

// commInitRank calls ncclCommInitRank(&comm, size, id, rank), whose id is
// a 128-byte struct passed by value: on amd64 (System V) it is copied onto
// the stack after the register arguments, which take comm, size and rank;
// on arm64 (AAPCS64) a composite over 16 bytes is passed as a pointer to a
// copy, in the next register.
func (n *NCCL) commInitRank(id []byte) int32 {
	comm := uintptr(unsafe.Pointer(&n.comm))
	switch runtime.GOARCH {
	case "amd64":
		args := []uintptr{comm, uintptr(n.size), uintptr(n.rank), 0, 0, 0}
		for i := 0; i < ncclUniqueIDLen; i += 8 {
			args = append(args, uintptr(*(*uint64)(unsafe.Pointer(&id[i]))))
		}
		rc := call(n.fn.commInitRank, args...)
		runtime.KeepAlive(n) // comm points into n
		return rc
	case "arm64":
		cp := append([]byte(nil), id...)
		rc := call(n.fn.commInitRank, comm, uintptr(n.size), uintptr(unsafe.Pointer(&cp[0])), uintptr(n.rank))
		runtime.KeepAlive(n)
		return rc
	}
	return -1
}

// load opens libnccl.so.2 built for CUDA major setMajor (the backend's
// library set; 0: unknown): SIMCLR_NCCL_LIB, else the copies in dirs (the
// CUDA backend's library folders) of that major, then those whose major
// nothing records, else the loader's search (chooseNCCL).
func (n *NCCL) load(dirs []string, setMajor int) error {
	order, skipped, err := chooseNCCL(findNCCL(ncclSearch{dirs: dirs, pinned: os.Getenv("SIMCLR_NCCL_LIB")}), setMajor)
	if err != nil {
		return err
	}
	var tried []string
	var lib uintptr
	for _, p := range order {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		lib, n.path = h, p
		break
	}
	if lib == 0 {
		for _, s := range skipped {
			tried = append(tried, s+": not loaded, another CUDA major")
		}
		return fmt.Errorf("NCCL not found (install it for the CUDA major `simclr devices` names in its library set, e.g. `pip install nvidia-nccl-cu13` for CUDA 13, `nvidia-nccl-cu12` for CUDA 12, or the libnccl2 package, or set SIMCLR_NCCL_LIB to libnccl.so.2's path); tried:\n  %s",
			strings.Join(tried, "\n  "))
	}
	for _, s := range []struct {
		name string
		dst  *uintptr
	}{
		{"ncclGetVersion", &n.fn.getVersion}, {"ncclGetUniqueId", &n.fn.getUniqueID},
		{"ncclCommInitRank", &n.fn.commInitRank}, {"ncclAllReduce", &n.fn.allReduce},
		{"ncclBroadcast", &n.fn.broadcast}, {"ncclCommDestroy", &n.fn.commDestroy},
		{"ncclCommAbort", &n.fn.commAbort}, {"ncclGetErrorString", &n.fn.errorString},
	} {
		p, err := purego.Dlsym(lib, s.name)
		if err != nil || p == 0 {
			return fmt.Errorf("%s has no %s (NCCL 2.4 or later is needed)", n.path, s.name)
		}
		*s.dst = p
	}
	return nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func (n *NCCL) check(what string, rc int32) error {
	if rc == ncclSuccess {
		return nil
	}
	msg := "error " + fmt.Sprint(rc)
	if p, _, _ := purego.SyscallN(n.fn.errorString, uintptr(rc)); p != 0 {
		msg = cString(p)
	}
	return fmt.Errorf("%s (rank %d of %d): %s", what, n.rank, n.size, msg)
}

// cString copies the NUL-terminated C string at p.
func cString(p uintptr) string {
	var b []byte
	for i := uintptr(0); i < 4096; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

func (n *NCCL) Rank() int { return n.rank }
func (n *NCCL) Size() int { return n.size }
func (n *NCCL) Describe() string {
	how := "TCP rendezvous"
	if n.boot != nil {
		how = "id over MPI"
	}
	return fmt.Sprintf("NCCL %d.%d.%d (%s, %s), rank %d of %d", n.version/10000, n.version/100%100, n.version%100, n.path, how, n.rank, n.size)
}

// queue runs an NCCL call on the backend's stream.
func (n *NCCL) queue(what string, f func(stream uintptr, addr func(tensor.Buffer) uintptr) int32) error {
	if n.closed {
		return ErrClosed
	}
	return n.b.RunExternal(func(stream uintptr, addr func(tensor.Buffer) uintptr) error {
		return n.check(what, f(stream, addr))
	})
}

func (n *NCCL) AllReduceSum(buf tensor.Buffer) error {
	if buf.Len() == 0 {
		return nil
	}
	return n.queue("ncclAllReduce", func(stream uintptr, addr func(tensor.Buffer) uintptr) int32 {
		p := addr(buf)
		return call(n.fn.allReduce, p, p, uintptr(buf.Len()), ncclFloat32, ncclSum, n.comm, stream)
	})
}

func (n *NCCL) Broadcast(buf tensor.Buffer, root int) error {
	if root < 0 || root >= n.size {
		return fmt.Errorf("broadcast from rank %d of %d", root, n.size)
	}
	if buf.Len() == 0 {
		return nil
	}
	return n.queue("ncclBroadcast", func(stream uintptr, addr func(tensor.Buffer) uintptr) int32 {
		p := addr(buf)
		return call(n.fn.broadcast, p, p, uintptr(buf.Len()), ncclFloat32, uintptr(root), n.comm, stream)
	})
}

// AllReduceFloat64 goes through a device buffer: NCCL reduces device memory
// only. The float64 values travel as pairs of float32 words, bit for bit.
func (n *NCCL) AllReduceFloat64(x []float64) error {
	if len(x) == 0 {
		return nil
	}
	words := unsafe.Slice((*float32)(unsafe.Pointer(&x[0])), 2*len(x))
	if n.scratch == nil || n.scratch.Len() < len(words) {
		if n.scratch != nil {
			n.b.Free(n.scratch)
		}
		n.scratch = n.b.Alloc(max(len(words), 64))
	}
	buf := n.b.Slice(n.scratch, 0, len(words))
	n.b.Upload(buf, words)
	err := n.queue("ncclAllReduce", func(stream uintptr, addr func(tensor.Buffer) uintptr) int32 {
		return call(n.fn.allReduce, addr(buf), addr(buf), uintptr(len(x)), ncclFloat64, ncclSum, n.comm, stream)
	})
	if err != nil {
		return err
	}
	n.b.Download(words, buf)
	return n.b.Sync()
}

func (n *NCCL) Barrier() error {
	if err := n.AllReduceFloat64([]float64{0}); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// Abort stops this rank's communicator without waiting for the others and,
// when MPI carried the id, the whole job (MPI_Abort).
func (n *NCCL) Abort(code int) {
	call(n.fn.commAbort, n.comm)
	if n.boot != nil {
		n.boot.Abort(code)
	}
}

func (n *NCCL) Close() error {
	if n.closed {
		return nil
	}
	n.closed = true
	if n.scratch != nil {
		n.b.Free(n.scratch)
	}
	err := n.b.RunExternal(func(uintptr, func(tensor.Buffer) uintptr) error {
		return n.check("ncclCommDestroy", call(n.fn.commDestroy, n.comm))
	})
	if n.boot != nil {
		if berr := n.boot.Close(); err == nil {
			err = berr
		}
	}
	return err
}
