//go:build linux || darwin || freebsd || netbsd

package collective

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/simclr-go/simclr/tensor"
)

// EnvMPILibrary names an environment variable holding the path of the MPI
// library to load instead of Open MPI's usual sonames.
const EnvMPILibrary = "SIMCLR_MPI_LIB"

// Open MPI constants (mpi.h): MPI_SUCCESS, the thread levels, MPI_IN_PLACE
// ((void *) 1) and MPI_MAX_ERROR_STRING.
const (
	mpiSuccess        = 0
	mpiThreadFunneled = 1
	mpiInPlace        = uintptr(1)
	mpiMaxErrorString = 256
)

// MPI is a communicator over MPI_COMM_WORLD of Open MPI. MPI is called from
// one goroutine locked to one OS thread (the thread that initialised it),
// which is what MPI_THREAD_FUNNELED asks of a multi-threaded program; Go
// would otherwise move a goroutine between threads from one call to the
// next.
type MPI struct {
	b          tensor.Backend
	rank, size int
	version    string
	path       string

	fn struct {
		initThread, finalize, commRank, commSize, allreduce, bcast, barrier,
		abort, setErrhandler, errorString, libraryVersion uintptr
	}
	// Handles: addresses of Open MPI's predefined objects.
	world, float, double, byteType, sum, errorsReturn uintptr

	calls  chan func()
	mu     sync.Mutex // serialises calls and guards closed, host
	host   []float32  // staging for buffers not in host memory
	closed bool
}

var _ Comm = (*MPI)(nil)

// OpenMPI loads Open MPI, initialises it and returns the communicator of
// MPI_COMM_WORLD. b is the backend whose buffers it will reduce. The
// process should have been started by mpirun; otherwise Open MPI makes a
// world of one rank (a singleton), or fails if it cannot.
func OpenMPI(b tensor.Backend) (*MPI, error) {
	m := &MPI{b: b, calls: make(chan func())}
	if err := m.load(); err != nil {
		return nil, err
	}
	go m.serve()
	var rc int32
	var provided int32
	m.do(func() {
		rc = int32(call(m.fn.initThread, 0, 0, mpiThreadFunneled, uintptr(unsafe.Pointer(&provided))))
	})
	if rc != mpiSuccess {
		close(m.calls)
		return nil, fmt.Errorf("MPI_Init_thread (%s): error %d: start the ranks with mpirun, or use --dist none", m.path, rc)
	}
	if provided < mpiThreadFunneled {
		m.finalize()
		return nil, fmt.Errorf("MPI (%s) provides thread level %d, simclr needs MPI_THREAD_FUNNELED (%d)", m.path, provided, mpiThreadFunneled)
	}
	var rank, size int32
	m.do(func() {
		// Errors come back as return codes, so that they reach the run's
		// log with context instead of Open MPI aborting the job silently.
		rc = int32(call(m.fn.setErrhandler, m.world, m.errorsReturn))
		if rc == mpiSuccess {
			rc = int32(call(m.fn.commRank, m.world, uintptr(unsafe.Pointer(&rank))))
		}
		if rc == mpiSuccess {
			rc = int32(call(m.fn.commSize, m.world, uintptr(unsafe.Pointer(&size))))
		}
	})
	if rc != mpiSuccess {
		err := m.check("MPI_Comm_rank/size", rc)
		m.finalize()
		return nil, err
	}
	m.rank, m.size = int(rank), int(size)
	m.version = m.libraryVersion()
	return m, nil
}

// mpiCandidates are the libraries tried: the override, then Open MPI 3, 4
// and 5's soname (all libmpi.so.40) through the loader and in the usual
// folders.
func mpiCandidates(override string) []string {
	var out []string
	if override != "" {
		out = append(out, override)
	}
	out = append(out, "libmpi.so.40")
	for _, d := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64/openmpi/lib", "/usr/lib64", "/usr/local/lib", "/opt/openmpi/lib"} {
		out = append(out, d+"/libmpi.so.40")
	}
	return out
}

func (m *MPI) load() error {
	var tried []string
	var lib uintptr
	for _, p := range mpiCandidates(os.Getenv(EnvMPILibrary)) {
		// RTLD_GLOBAL: Open MPI's plugins (mca_*.so), which it opens itself,
		// resolve their symbols against libmpi.
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		lib, m.path = h, p
		break
	}
	if lib == 0 {
		return fmt.Errorf("Open MPI not found (install it, e.g. `apt-get install libopenmpi3 openmpi-bin`, or set %s to libmpi.so.40's path); tried:\n  %s",
			EnvMPILibrary, strings.Join(tried, "\n  "))
	}
	syms := []struct {
		name string
		dst  *uintptr
	}{
		{"MPI_Init_thread", &m.fn.initThread}, {"MPI_Finalize", &m.fn.finalize},
		{"MPI_Comm_rank", &m.fn.commRank}, {"MPI_Comm_size", &m.fn.commSize},
		{"MPI_Allreduce", &m.fn.allreduce}, {"MPI_Bcast", &m.fn.bcast}, {"MPI_Barrier", &m.fn.barrier},
		{"MPI_Abort", &m.fn.abort}, {"MPI_Comm_set_errhandler", &m.fn.setErrhandler},
		{"MPI_Error_string", &m.fn.errorString}, {"MPI_Get_library_version", &m.fn.libraryVersion},
		{"ompi_mpi_comm_world", &m.world}, {"ompi_mpi_float", &m.float}, {"ompi_mpi_double", &m.double},
		{"ompi_mpi_byte", &m.byteType}, {"ompi_mpi_op_sum", &m.sum}, {"ompi_mpi_errors_return", &m.errorsReturn},
	}
	for _, s := range syms {
		p, err := purego.Dlsym(lib, s.name)
		if err != nil || p == 0 {
			return fmt.Errorf("%s has no %s: simclr needs Open MPI (3 or later), whose handles are global objects; MPICH-style libraries are not supported", m.path, s.name)
		}
		*s.dst = p
	}
	return nil
}

// call is purego.SyscallN returning the C int result. Like SyscallN it is
// marked uintptrescapes: a pointer converted to uintptr in a call to it
// (the address of a local variable the library writes to) is moved to the
// heap and kept alive until it returns.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r)
}

// serve runs every MPI call on one locked OS thread.
func (m *MPI) serve() {
	runtime.LockOSThread()
	for f := range m.calls {
		f()
	}
}

// do runs f on the MPI thread and waits for it.
func (m *MPI) do(f func()) {
	done := make(chan struct{})
	m.calls <- func() { f(); close(done) }
	<-done
}

func (m *MPI) check(what string, rc int32) error {
	if rc == mpiSuccess {
		return nil
	}
	msg := make([]byte, mpiMaxErrorString)
	var n int32
	if call(m.fn.errorString, uintptr(rc), uintptr(unsafe.Pointer(&msg[0])), uintptr(unsafe.Pointer(&n))) == mpiSuccess && n > 0 {
		return fmt.Errorf("%s (rank %d of %d): %s", what, m.rank, m.size, string(msg[:n]))
	}
	return fmt.Errorf("%s (rank %d of %d): MPI error %d", what, m.rank, m.size, rc)
}

func (m *MPI) libraryVersion() string {
	buf := make([]byte, 8192)
	var n int32
	var rc int32
	m.do(func() {
		rc = call(m.fn.libraryVersion, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)))
	})
	if rc != mpiSuccess || n <= 0 {
		return "Open MPI"
	}
	v, _, _ := strings.Cut(strings.TrimRight(string(buf[:n]), "\x00"), ",")
	return strings.TrimSpace(v)
}

func (m *MPI) Rank() int { return m.rank }
func (m *MPI) Size() int { return m.size }
func (m *MPI) Describe() string {
	return fmt.Sprintf("MPI: %s (%s), rank %d of %d", m.version, m.path, m.rank, m.size)
}

// run runs an MPI call under the lock, failing on a closed communicator.
func (m *MPI) run(what string, f func() int32) error {
	if m.closed {
		return ErrClosed
	}
	var rc int32
	m.do(func() { rc = f() })
	return m.check(what, rc)
}

// hostData returns buf's host memory: the buffer's own elements on a
// backend with host memory (tensor.HostMemory: the CPU backend), or a
// staging copy downloaded from the device (then stage reports true and the
// caller uploads the result).
func (m *MPI) hostData(buf tensor.Buffer) (data []float32, staged bool) {
	if hb, ok := m.b.(tensor.HostMemory); ok {
		return hb.HostData(buf), false
	}
	if cap(m.host) < buf.Len() {
		m.host = make([]float32, buf.Len())
	}
	data = m.host[:buf.Len()]
	m.b.Download(data, buf)
	return data, true
}

func (m *MPI) AllReduceSum(buf tensor.Buffer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if buf.Len() == 0 {
		return nil
	}
	// Queued kernels that write buf must finish before MPI reads it.
	if err := m.b.Sync(); err != nil {
		return fmt.Errorf("all-reduce: device: %w", err)
	}
	data, staged := m.hostData(buf)
	for off := 0; off < len(data); off += maxCount {
		part := data[off:min(len(data), off+maxCount)]
		err := m.run("MPI_Allreduce", func() int32 {
			return call(m.fn.allreduce, mpiInPlace, uintptr(unsafe.Pointer(&part[0])), uintptr(len(part)), m.float, m.sum, m.world)
		})
		if err != nil {
			return err
		}
	}
	if staged {
		m.b.Upload(buf, data)
	}
	return nil
}

func (m *MPI) Broadcast(buf tensor.Buffer, root int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if root < 0 || root >= m.size {
		return fmt.Errorf("broadcast from rank %d of %d", root, m.size)
	}
	if buf.Len() == 0 {
		return nil
	}
	if err := m.b.Sync(); err != nil {
		return fmt.Errorf("broadcast: device: %w", err)
	}
	data, staged := m.hostData(buf)
	for off := 0; off < len(data); off += maxCount {
		part := data[off:min(len(data), off+maxCount)]
		err := m.run("MPI_Bcast", func() int32 {
			return call(m.fn.bcast, uintptr(unsafe.Pointer(&part[0])), uintptr(len(part)), m.float, uintptr(root), m.world)
		})
		if err != nil {
			return err
		}
	}
	if staged {
		m.b.Upload(buf, data)
	}
	return nil
}

func (m *MPI) AllReduceFloat64(x []float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(x) == 0 {
		return nil
	}
	for off := 0; off < len(x); off += maxCount {
		part := x[off:min(len(x), off+maxCount)]
		err := m.run("MPI_Allreduce", func() int32 {
			return call(m.fn.allreduce, mpiInPlace, uintptr(unsafe.Pointer(&part[0])), uintptr(len(part)), m.double, m.sum, m.world)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// broadcastBytes sends root's 128-byte NCCL id to every rank.
func (m *MPI) broadcastBytes(data []byte, root int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.run("MPI_Bcast", func() int32 {
		return call(m.fn.bcast, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), m.byteType, uintptr(root), m.world)
	})
}

func (m *MPI) Barrier() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.run("MPI_Barrier", func() int32 { return call(m.fn.barrier, m.world) })
}

// Abort stops every rank of the job (MPI_Abort): a rank that fails alone
// would otherwise leave the others waiting in their next collective call
// forever. It does not return when MPI honours it.
func (m *MPI) Abort(code int) {
	// No lock: another goroutine may be inside a call that will never end.
	done := make(chan struct{})
	go func() {
		// MPI_Abort from a thread other than the MPI thread is allowed to
		// be best effort; Open MPI kills the job either way.
		call(m.fn.abort, m.world, uintptr(code))
		close(done)
	}()
	<-done
}

func (m *MPI) finalize() {
	m.do(func() { call(m.fn.finalize) })
	close(m.calls)
}

// Close finalises MPI. It waits for every rank (MPI_Finalize is collective).
func (m *MPI) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var rc int32
	m.do(func() { rc = call(m.fn.finalize) })
	close(m.calls)
	return m.check("MPI_Finalize", rc)
}
