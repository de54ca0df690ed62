//go:build linux || darwin || freebsd || netbsd

package blas

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// CBLAS enumeration values (cblas.h).
const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
	cblasTrans    = 112
)

// EnvLibrary names an environment variable holding the path of a CBLAS
// library to try instead of searching the usual ones.
const EnvLibrary = "SIMCLR_BLAS"

// cblasSgemm matches
//
//	void cblas_sgemm(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE,
//	                 blasint M, blasint N, blasint K, float alpha, const float *A, blasint lda,
//	                 const float *B, blasint ldb, float beta, float *C, blasint ldc)
//
// with the 32-bit blasint of the LP64 builds that distributions ship.
type cblasSgemm func(order, transA, transB, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32)

// openBLAS is a CBLAS library bound at run time.
type openBLAS struct {
	sgemm cblasSgemm
	name  string
	// OpenBLAS keeps one thread count per process, but handles here differ:
	// the CPU backend runs one single-threaded GEMM per worker while a
	// linear probe wants every core. Each handle therefore restores its own
	// count before a call when another handle changed it.
	threads    int32
	setThreads func(int32)
	getThreads func() int32

	// fortranSgemm is the address of the Fortran sgemm_, which takes every
	// argument by pointer and so can be called with purego.SyscallN, which
	// allocates nothing; a function bound by purego.RegisterFunc goes
	// through reflection and allocates about five objects a call, thousands
	// a training step. cblas_sgemm (floats in registers) needs RegisterFunc
	// and remains the fallback for libraries without sgemm_.
	fortranSgemm uintptr
	getThreadsFn uintptr
	args         sync.Pool // *fortranArgs, one per call in flight
}

// fortranArgs holds the by-reference arguments of one sgemm_ call.
type fortranArgs struct {
	transA, transB byte
	m, n, k        int32
	lda, ldb, ldc  int32
	alpha, beta    float32
}

// OpenBLAS loads a system BLAS known to be fast (see OpenBLASThreads) and
// returns it as a Gemm using runtime.NumCPU() threads. The error says why
// none is used.
func OpenBLAS() (Gemm, error) { return OpenBLASThreads(runtime.NumCPU()) }

// OpenBLASThreads is OpenBLAS with a thread count. OpenBLAS keeps one thread
// count per process, so the last value set wins for every handle.
//
// A library exporting cblas_sgemm is used only when it is known to be
// optimised, identified by a symbol of its own (OpenBLAS, BLIS, MKL), or
// when a short timed product shows it faster than the built-in kernel:
// Debian's reference BLAS (libblas3) also answers to libblas.so.3 and is
// many times slower than the built-in kernel (the timed product shows it). A refused
// library does not end the search. With $SIMCLR_BLAS set, that library is
// the only one tried.
func OpenBLASThreads(threads int) (Gemm, error) {
	g, _, err := systemBLAS(threads)
	return g, err
}

// systemBLAS is OpenBLASThreads, also saying why the library was accepted.
func systemBLAS(threads int) (Gemm, string, error) {
	return openSystem(libraryCandidates(os.Getenv(EnvLibrary)), threads)
}

// openSystem returns the first library of paths that loads, exports
// cblas_sgemm and passes vet, with the reason it was accepted.
func openSystem(paths []string, threads int) (Gemm, string, error) {
	if threads < 1 {
		threads = 1
	}
	setOpenBLASCoreType()
	notUsed := &NotUsedError{Override: os.Getenv(EnvLibrary)}
	for _, path := range paths {
		lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			notUsed.Missing = append(notUsed.Missing, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		sym, err := purego.Dlsym(lib, "cblas_sgemm")
		if err != nil || sym == 0 {
			notUsed.Missing = append(notUsed.Missing, fmt.Sprintf("%s: no cblas_sgemm", path))
			_ = purego.Dlclose(lib)
			continue
		}
		g := &openBLAS{threads: int32(threads)}
		purego.RegisterFunc(&g.sgemm, sym)
		if f, err := purego.Dlsym(lib, "sgemm_"); err == nil && f != 0 {
			g.fortranSgemm = f
			g.args.New = func() any { return new(fortranArgs) }
		}
		g.bindThreads(lib)
		g.name = describeLibrary(lib, path, threads)
		why, err := vet(g, identify(lib), filepath.Base(path), threads)
		if err != nil {
			// Not closed: g's bound functions point into the library, and
			// unloading it saves nothing worth that risk.
			notUsed.Refused = append(notUsed.Refused, err.Error())
			continue
		}
		return g, why, nil
	}
	return nil, "", notUsed
}

// identify names the optimised BLAS that lib is by a symbol only that
// library exports, or returns "" when it is none of them. dlsym on a handle
// also searches the libraries it depends on, so Debian's libblas.so.3
// wrappers around OpenBLAS or BLIS are identified too.
func identify(lib uintptr) string {
	for _, known := range knownLibraries {
		if sym, err := purego.Dlsym(lib, known.symbol); err == nil && sym != 0 {
			return known.name + " (exports " + known.symbol + ")"
		}
	}
	return ""
}

// libraryCandidates lists the paths to dlopen, in order, without duplicates:
// the explicit override alone when there is one, else each soname through
// the loader's search path and in the usual directories.
func libraryCandidates(override string) []string {
	if override != "" {
		return []string{override}
	}
	// The shared objects tried, best first. libblas.so.3 may be OpenBLAS,
	// BLIS or the reference BLAS (Debian's alternatives choose); vet tells.
	sonames := []string{"libopenblas.so.0", "libopenblas.so", "libblas.so.3"}
	// Searched after the dynamic loader's own search path.
	dirs := []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, soname := range sonames {
		add(soname)
		for _, dir := range dirs {
			add(filepath.Join(dir, soname))
		}
	}
	return out
}

// describeLibrary sets the thread count when the library lets us and builds
// the Name: the library's own configuration string when it has one.
func describeLibrary(lib uintptr, path string, threads int) string {
	name := "CBLAS"
	if sym, err := purego.Dlsym(lib, "openblas_get_config"); err == nil && sym != 0 {
		var getConfig func() string
		purego.RegisterFunc(&getConfig, sym)
		if cfg := strings.TrimSpace(getConfig()); cfg != "" {
			name = cfg
		}
	} else if sym, err := purego.Dlsym(lib, "bli_info_get_version_str"); err == nil && sym != 0 {
		var version func() string
		purego.RegisterFunc(&version, sym)
		name = strings.TrimSpace("BLIS " + version())
	} else if sym, err := purego.Dlsym(lib, "MKL_Get_Version"); err == nil && sym != 0 {
		name = "Intel MKL"
	}
	name += " (" + filepath.Base(path) + ")"
	if sym, err := purego.Dlsym(lib, "openblas_get_num_threads"); err == nil && sym != 0 {
		var getThreads func() int32
		purego.RegisterFunc(&getThreads, sym)
		name += fmt.Sprintf(", %d threads", getThreads())
	}
	return name
}

// bindThreads binds openblas_set_num_threads and openblas_get_num_threads
// when the library has both, and sets this handle's count.
func (g *openBLAS) bindThreads(lib uintptr) {
	set, err1 := purego.Dlsym(lib, "openblas_set_num_threads")
	get, err2 := purego.Dlsym(lib, "openblas_get_num_threads")
	if err1 != nil || err2 != nil || set == 0 || get == 0 {
		return
	}
	purego.RegisterFunc(&g.setThreads, set)
	purego.RegisterFunc(&g.getThreads, get)
	g.getThreadsFn = get
	g.setThreads(g.threads)
}

func (g *openBLAS) Name() string { return g.name }

// Sgemm calls cblas_sgemm. Empty products and alpha = 0 are done here, so
// the library never sees the degenerate strides BLAS would reject.
func (g *openBLAS) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkArgs(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	for _, v := range [...]int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			panic(fmt.Sprintf("blas: Sgemm size or stride %d exceeds the 32-bit integers of cblas_sgemm (m=%d n=%d k=%d lda=%d ldb=%d ldc=%d)", v, m, n, k, lda, ldb, ldc))
		}
	}
	if g.getThreadsFn != 0 {
		// SyscallN: no allocation on the common path where nothing changed.
		if r, _, _ := purego.SyscallN(g.getThreadsFn); int32(r) != g.threads {
			g.setThreads(g.threads)
		}
	}
	if g.fortranSgemm != 0 {
		g.sgemmFortran(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	ta, tb := int32(cblasNoTrans), int32(cblasNoTrans)
	if transA {
		ta = cblasTrans
	}
	if transB {
		tb = cblasTrans
	}
	g.sgemm(cblasRowMajor, ta, tb, int32(m), int32(n), int32(k), alpha,
		unsafe.SliceData(a), int32(lda), unsafe.SliceData(b), int32(ldb), beta, unsafe.SliceData(c), int32(ldc))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
}

// sgemmFortran computes the row-major product with the column-major sgemm_:
// a row-major matrix is its transpose in column-major order, so row-major
// C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, that is sgemm_ with
// the operands (and their transpose flags and sizes) swapped.
func (g *openBLAS) sgemmFortran(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	p := g.args.Get().(*fortranArgs)
	p.transA, p.transB = 'N', 'N'
	if transA {
		p.transA = 'T'
	}
	if transB {
		p.transB = 'T'
	}
	p.m, p.n, p.k = int32(m), int32(n), int32(k)
	p.lda, p.ldb, p.ldc = int32(lda), int32(ldb), int32(ldc)
	p.alpha, p.beta = alpha, beta
	purego.SyscallN(g.fortranSgemm,
		uintptr(unsafe.Pointer(&p.transB)), uintptr(unsafe.Pointer(&p.transA)),
		uintptr(unsafe.Pointer(&p.n)), uintptr(unsafe.Pointer(&p.m)), uintptr(unsafe.Pointer(&p.k)),
		uintptr(unsafe.Pointer(&p.alpha)),
		uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(&p.ldb)),
		uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(&p.lda)),
		uintptr(unsafe.Pointer(&p.beta)),
		uintptr(unsafe.Pointer(unsafe.SliceData(c))), uintptr(unsafe.Pointer(&p.ldc)))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	g.args.Put(p)
}
