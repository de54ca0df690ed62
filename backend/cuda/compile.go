package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// compiled is kernel code for one device: a CUBIN when NVRTC knows the
// device's architecture, else PTX that the driver compiles when loading.
type compiled struct {
	image []byte // NUL-terminated for PTX
	kind  string // "cubin" or "ptx"
}

// cacheKey names the compiled form of source for arch (e.g. "sm_90") by a
// given NVRTC version; any change to one of them gives a new file.
func cacheKey(source, arch string, nvrtcMajor, nvrtcMinor int, options []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "simclr-kernels\x00%s\x00%d.%d\x00%s\x00", arch, nvrtcMajor, nvrtcMinor, strings.Join(options, " "))
	h.Write([]byte(source))
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// defaultCacheDir is os.UserCacheDir()/simclr/cubin, or "" when the system
// has no cache folder (then nothing is cached).
func defaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "simclr", "cubin")
}

func readCache(dir, key string) (compiled, bool) {
	if dir == "" {
		return compiled{}, false
	}
	for _, kind := range []string{"cubin", "ptx"} {
		b, err := os.ReadFile(filepath.Join(dir, key+"."+kind))
		if err == nil && len(b) > 0 {
			return compiled{image: b, kind: kind}, true
		}
	}
	return compiled{}, false
}

// writeCache stores c atomically (temp file + rename) so concurrent runs
// never read half a file; failing to cache is not an error.
func writeCache(dir, key string, c compiled) {
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(dir, key+".tmp*")
	if err != nil {
		return
	}
	_, werr := f.Write(c.image)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, key+"."+c.kind)); err != nil {
		os.Remove(f.Name())
	}
}

func (n *nvrtcAPI) versionNumbers() (int, int) {
	var major, minor int32
	purego.SyscallN(n.version, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))
	return int(major), int(minor)
}

// nvrtcOptions are the compiler flags besides the architecture. No fast
// math: the kernels must agree with the CPU backend.
var nvrtcOptions = []string{"--std=c++14", "-default-device"}

// compileKernels compiles kernelSource for compute capability major.minor:
// to a CUBIN for sm_XY, or when this NVRTC does not know that architecture
// (a GPU newer than the toolkit), to PTX for the newest virtual
// architecture it accepts, for the driver to JIT.
func compileKernels(n *nvrtcAPI, source string, major, minor int) (compiled, error) {
	arch := fmt.Sprintf("sm_%d%d", major, minor)
	c, err := n.compile(source, "--gpu-architecture="+arch, true)
	if err == nil {
		return c, nil
	}
	for _, virt := range []string{fmt.Sprintf("compute_%d%d", major, minor), "compute_90", "compute_80", "compute_75", "compute_70"} {
		if c, err2 := n.compile(source, "--gpu-architecture="+virt, false); err2 == nil {
			return c, nil
		}
	}
	return compiled{}, err
}

func (n *nvrtcAPI) compile(source, archFlag string, cubin bool) (compiled, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	src := cstr(source)
	name := cstr("simclr_kernels.cu")
	var prog uintptr
	if err := n.check("nvrtcCreateProgram", mustCall(n.createProgram, uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(&src[0])), uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)); err != nil {
		return compiled{}, err
	}
	// A closure, so that &prog is taken when the call is made: a deferred
	// call's uintptr argument would be computed now and not keep prog alive.
	defer func() { purego.SyscallN(n.destroyProgram, uintptr(unsafe.Pointer(&prog))) }()
	opts := append([]string{archFlag}, nvrtcOptions...)
	cOpts := make([][]byte, len(opts))
	ptrs := make([]uintptr, len(opts))
	for i, o := range opts {
		cOpts[i] = cstr(o)
		ptrs[i] = uintptr(unsafe.Pointer(&cOpts[i][0]))
	}
	r := mustCall(n.compileProgram, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(cOpts)
	if err := n.check("nvrtcCompileProgram("+archFlag+")", r); err != nil {
		var logSize uintptr
		purego.SyscallN(n.getLogSize, prog, uintptr(unsafe.Pointer(&logSize)))
		log := make([]byte, logSize+1)
		purego.SyscallN(n.getLog, prog, uintptr(unsafe.Pointer(&log[0])))
		return compiled{}, fmt.Errorf("%w\n%s", err, strings.TrimRight(string(log), "\x00\n"))
	}
	sizeFn, getFn, kind := n.getPTXSize, n.getPTX, "ptx"
	if cubin {
		sizeFn, getFn, kind = n.getCUBINSize, n.getCUBIN, "cubin"
	}
	var size uintptr
	if err := n.check("nvrtcGet"+strings.ToUpper(kind)+"Size", mustCall(sizeFn, prog, uintptr(unsafe.Pointer(&size)))); err != nil {
		return compiled{}, err
	}
	img := make([]byte, size+1) // +1 keeps PTX NUL-terminated
	if err := n.check("nvrtcGet"+strings.ToUpper(kind), mustCall(getFn, prog, uintptr(unsafe.Pointer(&img[0])))); err != nil {
		return compiled{}, err
	}
	return compiled{image: img, kind: kind}, nil
}

// mustCall calls fn with args and returns its integer result. Like
// purego.SyscallN it keeps alive the objects whose addresses are passed.
//
//go:uintptrescapes
func mustCall(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
