package cuda

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The C entry points used, resolved with dlsym. Every call goes through
// purego.SyscallN with uintptr arguments: floats are passed by pointer
// (cuBLAS and cuDNN take alpha and beta as pointers), kernel arguments go
// through cuLaunchKernel's array of pointers, and no function returns a
// struct, so the integer calling convention is all that is needed.

type driverAPI struct {
	lib                                                           *library
	cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet     uintptr
	cuDeviceGetName, cuDeviceTotalMem, cuDeviceGetAttribute       uintptr
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease           uintptr
	cuCtxSetCurrent, cuStreamCreate, cuStreamDestroy              uintptr
	cuStreamSynchronize, cuMemAlloc, cuMemFree, cuMemGetInfo      uintptr
	cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync       uintptr
	cuMemsetD32Async, cuModuleLoadData, cuModuleGetFunction       uintptr
	cuModuleUnload, cuLaunchKernel, cuGetErrorName, cuGetErrorStr uintptr
	// The stream capture and graph calls (optional: a driver without
	// them runs every step eagerly, see graph.go).
	cuStreamBeginCapture, cuStreamEndCapture, cuGraphInstantiate uintptr
	cuGraphLaunch, cuGraphExecDestroy, cuGraphDestroy            uintptr
}

func (d *driverAPI) load(l *library) error {
	d.lib = l
	var graphs driverAPI
	if l.bind(map[string]*uintptr{
		"cuStreamBeginCapture_v2": &graphs.cuStreamBeginCapture, "cuStreamEndCapture": &graphs.cuStreamEndCapture,
		"cuGraphInstantiateWithFlags": &graphs.cuGraphInstantiate, "cuGraphLaunch": &graphs.cuGraphLaunch,
		"cuGraphExecDestroy": &graphs.cuGraphExecDestroy, "cuGraphDestroy": &graphs.cuGraphDestroy,
	}) == nil {
		d.cuStreamBeginCapture, d.cuStreamEndCapture, d.cuGraphInstantiate = graphs.cuStreamBeginCapture, graphs.cuStreamEndCapture, graphs.cuGraphInstantiate
		d.cuGraphLaunch, d.cuGraphExecDestroy, d.cuGraphDestroy = graphs.cuGraphLaunch, graphs.cuGraphExecDestroy, graphs.cuGraphDestroy
	}
	return l.bind(map[string]*uintptr{
		"cuInit": &d.cuInit, "cuDriverGetVersion": &d.cuDriverGetVersion,
		"cuDeviceGetCount": &d.cuDeviceGetCount, "cuDeviceGet": &d.cuDeviceGet,
		"cuDeviceGetName": &d.cuDeviceGetName, "cuDeviceTotalMem_v2": &d.cuDeviceTotalMem,
		"cuDeviceGetAttribute":         &d.cuDeviceGetAttribute,
		"cuDevicePrimaryCtxRetain":     &d.cuDevicePrimaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2": &d.cuDevicePrimaryCtxRelease,
		"cuCtxSetCurrent":              &d.cuCtxSetCurrent, "cuStreamCreate": &d.cuStreamCreate,
		"cuStreamDestroy_v2": &d.cuStreamDestroy, "cuStreamSynchronize": &d.cuStreamSynchronize,
		"cuMemAlloc_v2": &d.cuMemAlloc, "cuMemFree_v2": &d.cuMemFree, "cuMemGetInfo_v2": &d.cuMemGetInfo,
		"cuMemcpyHtoDAsync_v2": &d.cuMemcpyHtoDAsync, "cuMemcpyDtoHAsync_v2": &d.cuMemcpyDtoHAsync,
		"cuMemcpyDtoDAsync_v2": &d.cuMemcpyDtoDAsync, "cuMemsetD32Async": &d.cuMemsetD32Async,
		"cuModuleLoadData": &d.cuModuleLoadData, "cuModuleGetFunction": &d.cuModuleGetFunction,
		"cuModuleUnload": &d.cuModuleUnload, "cuLaunchKernel": &d.cuLaunchKernel,
		"cuGetErrorName": &d.cuGetErrorName, "cuGetErrorString": &d.cuGetErrorStr,
	})
}

// check turns a CUresult into an error naming the call.
func (d *driverAPI) check(what string, r uintptr) error {
	code := int32(r)
	if code == 0 {
		return nil
	}
	var name, desc uintptr
	if d.cuGetErrorName != 0 {
		purego.SyscallN(d.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&name)))
		purego.SyscallN(d.cuGetErrorStr, uintptr(code), uintptr(unsafe.Pointer(&desc)))
	}
	return &Error{Call: what, Code: int(code), Name: goString(name), Desc: goString(desc), Sticky: stickyCUresult(code)}
}

// stickyCUresult reports whether a driver error is one that the CUDA
// documentation says leaves the context unusable ("the process must be
// terminated and relaunched"): the faults of a kernel, cuBLAS or cuDNN
// work, raised by whichever call comes after them.
func stickyCUresult(code int32) bool {
	switch code {
	case 700, // CUDA_ERROR_ILLEGAL_ADDRESS
		702, // CUDA_ERROR_LAUNCH_TIMEOUT
		710, // CUDA_ERROR_ASSERT
		714, // CUDA_ERROR_HARDWARE_STACK_ERROR
		715, // CUDA_ERROR_ILLEGAL_INSTRUCTION
		716, // CUDA_ERROR_MISALIGNED_ADDRESS
		717, // CUDA_ERROR_INVALID_ADDRESS_SPACE
		718, // CUDA_ERROR_INVALID_PC
		719: // CUDA_ERROR_LAUNCH_FAILED
		return true
	}
	return false
}

// ErrDeviceFault marks a sticky driver error (Error.Sticky): device work
// queued before the failing call faulted, and the context is lost, so
// Backend.Recover never clears it.
var ErrDeviceFault = errors.New("a GPU fault left the CUDA context unusable")

// CUDA driver constants.
const (
	attrMultiprocessorCount = 16
	attrComputeCapMajor     = 75
	attrComputeCapMinor     = 76
	streamNonBlocking       = 1
	captureModeGlobal       = 0 // CU_STREAM_CAPTURE_MODE_GLOBAL
)

type cublasAPI struct {
	lib                                          *library
	create, destroy, setStream, setMathMode      uintptr
	getProperty, sgemm, setWorkspace, getVersion uintptr
	// gemmEx (optional: only bf16 needs it) is cublasGemmEx, the matrix
	// product of mixed data types.
	gemmEx uintptr
}

func (c *cublasAPI) load(l *library) error {
	c.lib = l
	var optional uintptr
	if l.bind(map[string]*uintptr{"cublasGemmEx": &optional}) == nil {
		c.gemmEx = optional
	}
	return l.bind(map[string]*uintptr{
		"cublasCreate_v2": &c.create, "cublasDestroy_v2": &c.destroy,
		"cublasSetStream_v2": &c.setStream, "cublasSetMathMode": &c.setMathMode,
		"cublasGetProperty": &c.getProperty, "cublasSgemm_v2": &c.sgemm,
		"cublasSetWorkspace_v2": &c.setWorkspace, "cublasGetVersion_v2": &c.getVersion,
	})
}

func (c *cublasAPI) check(what string, r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	return &Error{Call: what, Code: int(int32(r)), Name: cublasStatusName(int32(r))}
}

func cublasStatusName(s int32) string {
	switch s {
	case 1:
		return "CUBLAS_STATUS_NOT_INITIALIZED"
	case 3:
		return "CUBLAS_STATUS_ALLOC_FAILED"
	case 7:
		return "CUBLAS_STATUS_INVALID_VALUE"
	case 8:
		return "CUBLAS_STATUS_ARCH_MISMATCH"
	case 11:
		return "CUBLAS_STATUS_MAPPING_ERROR"
	case 13:
		return "CUBLAS_STATUS_EXECUTION_FAILED"
	case 14:
		return "CUBLAS_STATUS_INTERNAL_ERROR"
	case 15:
		return "CUBLAS_STATUS_NOT_SUPPORTED"
	case 16:
		return "CUBLAS_STATUS_LICENSE_ERROR"
	}
	return fmt.Sprintf("cublasStatus %d", s)
}

// cuBLAS constants.
const (
	cublasOpN          = 0
	cublasOpT          = 1
	cublasDefaultMath  = 0
	cublasTF32TensorOp = 3
	cublasPedanticMath = 2
	// cublasGemmEx's data and compute types and algorithm.
	cudaR32F              = 0
	cudaR16BF             = 14
	cublasCompute32F      = 68
	cublasGemmDefaultTC   = 99
	libraryPropMajor      = 0
	libraryPropMinor      = 1
	libraryPropPatchLevel = 2
)

type cudnnAPI struct {
	lib                                                          *library
	create, destroy, setStream, getVersion, getErrorString       uintptr
	createTensor, setTensor4d, destroyTensor                     uintptr
	createFilter, setFilter4d, destroyFilter                     uintptr
	createConv, setConv2d, setConvMath, destroyConv              uintptr
	findFwdEx, findBwdDataEx, findBwdFilterEx                    uintptr
	getFwdV7, getBwdDataV7, getBwdFilterV7                       uintptr
	convFwd, convBwdData, convBwdFilter                          uintptr
	fwdWorkspaceSize, bwdDataWorkspaceSize, bwdFilterWorkspaceSz uintptr
	// getCudartVersion (optional: only the report and checkSet use it) is
	// the CUDA version cuDNN was built for, e.g. 12080.
	getCudartVersion uintptr
	// graph is the backend (graph) API (optional: convgraph.go).
	graph graphAPI
}

// cudaVersion is the CUDA version cuDNN was built for (12080 for 12.8), 0
// when the library does not say.
func (c *cudnnAPI) cudaVersion() int {
	if c.getCudartVersion == 0 {
		return 0
	}
	return int(mustCall(c.getCudartVersion))
}

// load binds the entry points from l (libcudnn.so.9), falling back to
// sub, the sub-libraries (libcudnn_cnn, libcudnn_ops, libcudnn_graph), for
// a symbol the shim does not export.
func (c *cudnnAPI) load(l *library, sub ...*library) error {
	c.lib = l
	var optional uintptr
	if l.bind(map[string]*uintptr{"cudnnGetCudartVersion": &optional}, sub...) == nil {
		c.getCudartVersion = optional
	}
	var g graphAPI
	if l.bind(map[string]*uintptr{
		"cudnnBackendCreateDescriptor": &g.create, "cudnnBackendDestroyDescriptor": &g.destroy,
		"cudnnBackendSetAttribute": &g.setAttr, "cudnnBackendGetAttribute": &g.getAttr,
		"cudnnBackendFinalize": &g.finalize, "cudnnBackendExecute": &g.execute,
	}, sub...) == nil {
		c.graph = g
	}
	return l.bind(map[string]*uintptr{
		"cudnnCreate": &c.create, "cudnnDestroy": &c.destroy, "cudnnSetStream": &c.setStream,
		"cudnnGetVersion": &c.getVersion, "cudnnGetErrorString": &c.getErrorString,
		"cudnnCreateTensorDescriptor": &c.createTensor, "cudnnSetTensor4dDescriptor": &c.setTensor4d,
		"cudnnDestroyTensorDescriptor": &c.destroyTensor,
		"cudnnCreateFilterDescriptor":  &c.createFilter, "cudnnSetFilter4dDescriptor": &c.setFilter4d,
		"cudnnDestroyFilterDescriptor":                   &c.destroyFilter,
		"cudnnCreateConvolutionDescriptor":               &c.createConv,
		"cudnnSetConvolution2dDescriptor":                &c.setConv2d,
		"cudnnSetConvolutionMathType":                    &c.setConvMath,
		"cudnnDestroyConvolutionDescriptor":              &c.destroyConv,
		"cudnnFindConvolutionForwardAlgorithmEx":         &c.findFwdEx,
		"cudnnFindConvolutionBackwardDataAlgorithmEx":    &c.findBwdDataEx,
		"cudnnFindConvolutionBackwardFilterAlgorithmEx":  &c.findBwdFilterEx,
		"cudnnGetConvolutionForwardAlgorithm_v7":         &c.getFwdV7,
		"cudnnGetConvolutionBackwardDataAlgorithm_v7":    &c.getBwdDataV7,
		"cudnnGetConvolutionBackwardFilterAlgorithm_v7":  &c.getBwdFilterV7,
		"cudnnConvolutionForward":                        &c.convFwd,
		"cudnnConvolutionBackwardData":                   &c.convBwdData,
		"cudnnConvolutionBackwardFilter":                 &c.convBwdFilter,
		"cudnnGetConvolutionForwardWorkspaceSize":        &c.fwdWorkspaceSize,
		"cudnnGetConvolutionBackwardDataWorkspaceSize":   &c.bwdDataWorkspaceSize,
		"cudnnGetConvolutionBackwardFilterWorkspaceSize": &c.bwdFilterWorkspaceSz,
	}, sub...)
}

func (c *cudnnAPI) check(what string, r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	var msg string
	if c.getErrorString != 0 {
		p, _, _ := purego.SyscallN(c.getErrorString, r)
		msg = goString(p)
	}
	return &Error{Call: what, Code: int(int32(r)), Name: msg}
}

// cuDNN constants.
const (
	cudnnTensorNCHW       = 0
	cudnnTensorNHWC       = 1
	cudnnDataFloat        = 0
	cudnnDataBFloat16     = 9
	cudnnCrossCorrelation = 1
	cudnnDefaultMath      = 0
	cudnnTensorOpMath     = 1
	// cudnnTensorOpMathAllowConversion lets cuDNN convert fp32 inputs to
	// fp16/bf16 for tensor cores: never accepted.
	cudnnTensorOpMathAllowConversion = 2
	cudnnFMAMath                     = 3
	cudnnStatusSuccess               = 0
	cudnnAlgoPerfSize                = 48 // sizeof(cudnnConvolution*AlgoPerf_t)
	cudnnAlgoPerfMemoryOff           = 16
	cudnnAlgoPerfMathOff             = 28
	cudnnAlgoPerfStatusOff           = 4
	cudnnAlgoPerfTimeOff             = 8
	cudnnMaxAlgosRequested           = 16
	// CUDNN_CONVOLUTION_{FWD,BWD_DATA,BWD_FILTER}_ALGO_COUNT: the
	// algorithms of each direction, numbered from 0.
	cudnnFwdAlgoCount       = 8
	cudnnBwdDataAlgoCount   = 6
	cudnnBwdFilterAlgoCount = 7
)

type nvrtcAPI struct {
	lib                                                    *library
	version, createProgram, compileProgram, destroyProgram uintptr
	getLogSize, getLog, getCUBINSize, getCUBIN             uintptr
	getPTXSize, getPTX, getErrorString                     uintptr
}

func (n *nvrtcAPI) load(l *library) error {
	n.lib = l
	return l.bind(map[string]*uintptr{
		"nvrtcVersion": &n.version, "nvrtcCreateProgram": &n.createProgram,
		"nvrtcCompileProgram": &n.compileProgram, "nvrtcDestroyProgram": &n.destroyProgram,
		"nvrtcGetProgramLogSize": &n.getLogSize, "nvrtcGetProgramLog": &n.getLog,
		"nvrtcGetCUBINSize": &n.getCUBINSize, "nvrtcGetCUBIN": &n.getCUBIN,
		"nvrtcGetPTXSize": &n.getPTXSize, "nvrtcGetPTX": &n.getPTX,
		"nvrtcGetErrorString": &n.getErrorString,
	})
}

func (n *nvrtcAPI) check(what string, r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	p, _, _ := purego.SyscallN(n.getErrorString, r)
	return &Error{Call: what, Code: int(int32(r)), Name: goString(p)}
}

// Error is a failed call into a CUDA library.
type Error struct {
	Call string // the C function and what it was doing
	Code int
	Name string // e.g. CUDA_ERROR_OUT_OF_MEMORY
	Desc string
	// Sticky marks a driver error that reports an earlier fault (an
	// illegal address in a kernel, say) rather than a failure of Call:
	// work runs asynchronously, so a fault surfaces at whatever call comes
	// next, often an allocation or a synchronisation.
	Sticky bool
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Desc != "" && e.Desc != e.Name {
		s += ": " + e.Desc
	}
	if e.Sticky {
		s += "; this is a sticky fault of GPU work queued before this call (a kernel, cuBLAS or cuDNN), not a failure of the call itself: " +
			"the CUDA context is lost and the process must start again (resume from the last checkpoint); " +
			"to find the faulting work, rerun with CUDA_LAUNCH_BLOCKING=1 (each launch then reports its own fault) " +
			"or under compute-sanitizer --tool memcheck (it names the kernel and the address)"
	}
	return s
}

// Is makes errors.Is(err, ErrDeviceFault) true for a sticky error.
func (e *Error) Is(target error) bool { return e.Sticky && target == ErrDeviceFault }

// goString copies the NUL-terminated C string at p.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	// Reinterpret the integer as a pointer without a uintptr->Pointer
	// conversion that vet would flag; the memory belongs to C.
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	n := 0
	for *(*byte)(unsafe.Add(ptr, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(ptr), n))
}

// cstr returns s as a NUL-terminated byte slice on the Go heap.
func cstr(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// libraries is everything loaded by loadLibraries.
type libraries struct {
	dirs   searchPath
	set    cudaSet // the CUDA major chosen for cuBLAS(Lt), NVRTC and cuDNN, and why
	driver driverAPI
	cublas cublasAPI
	cudnn  cudnnAPI
	nvrtc  nvrtcAPI
	paths  map[string]string // role -> path loaded
}

// driverCUDAMajor is the newest CUDA major the loaded driver supports
// (cuDriverGetVersion, which needs no cuInit); 0 when it does not say.
func (d *driverAPI) driverCUDAMajor() int {
	var v int32
	if d.cuDriverGetVersion == 0 || int32(mustCall(d.cuDriverGetVersion, uintptr(unsafe.Pointer(&v)))) != 0 {
		return 0
	}
	return int(v / 1000)
}

// loadLibraries finds and loads the driver, then one set of NVRTC,
// cuBLAS(Lt) and cuDNN of one CUDA major (chooseSet), in dependency order
// (cuDNN's runtime-compiled engines use NVRTC, cuBLAS its cuBLASLt), binds
// the entry points and checks that the loaded libraries report the set's
// major. It stops at the first library that is missing.
func loadLibraries(env searchEnv) (*libraries, error) {
	L := &libraries{dirs: env.search(), paths: map[string]string{}}
	drv, err := openLibrary(L.dirs, specDriver, "")
	if err != nil {
		return L, fmt.Errorf("NVIDIA driver library: %w (is an NVIDIA driver installed? `nvidia-smi` should work)", err)
	}
	L.paths[specDriver.role] = drv.path
	if err := L.driver.load(drv); err != nil {
		return L, err
	}
	driverMajor := L.driver.driverCUDAMajor()
	if L.set, err = chooseSet(L.dirs, env.root, driverMajor); err != nil {
		return L, err
	}
	major := L.set.major
	open := func(spec libSpec) (*library, error) {
		var l *library
		var err error
		if p, ok := L.set.paths[spec.role]; ok {
			l, err = openFile(spec.role, p)
		} else {
			l, err = openLibrary(L.dirs, specOfMajor(spec, major), "")
		}
		if err != nil {
			return nil, err
		}
		L.paths[spec.role] = l.path
		return l, nil
	}
	hintMajor := major
	if hintMajor == 0 {
		hintMajor = driverMajor
	}
	nv, err := open(specNvrtc)
	if err != nil {
		return L, fmt.Errorf("NVRTC: %w (%s)", err, installHint(hintMajor, "nvrtc"))
	}
	if err := preloadSiblings(filepath.Dir(nv.path), nvrtcBuiltins(nv.path)); err != nil {
		return L, fmt.Errorf("NVRTC builtins: %w", err)
	}
	if err := L.nvrtc.load(nv); err != nil {
		return L, err
	}
	// cuBLAS needs cuBLASLt of the same version; chooseSet took it from
	// cuBLAS's folder where it is, and it is loaded first so that cuBLAS's
	// dependency resolves to it.
	if _, err := open(specCublasLt); err != nil {
		return L, fmt.Errorf("cuBLASLt: %w (%s)", err, installHint(hintMajor, "cublas"))
	}
	cb, err := open(specCublas)
	if err != nil {
		return L, fmt.Errorf("cuBLAS: %w (%s)", err, installHint(hintMajor, "cublas"))
	}
	if err := L.cublas.load(cb); err != nil {
		return L, err
	}
	if p, ok := L.set.paths[specCudnn.role]; ok {
		if err := preloadSiblings(filepath.Dir(p), cudnnSubLibraries); err != nil {
			return L, fmt.Errorf("cuDNN: %w", err)
		}
	}
	dnn, err := open(specCudnn)
	if err != nil {
		return L, fmt.Errorf("cuDNN 9: %w (%s)", err, installHint(hintMajor, "cudnn"))
	}
	// The legacy convolution API lives in libcudnn_cnn, the tensor and
	// filter descriptors in libcudnn_ops, the handle in libcudnn_graph.
	var sub []*library
	if strings.Contains(dnn.path, "/") {
		sub = openSiblings(filepath.Dir(dnn.path), []string{"libcudnn_cnn.so.9", "libcudnn_ops.so.9", "libcudnn_graph.so.9"})
	}
	if err := L.cudnn.load(dnn, sub...); err != nil {
		return L, err
	}
	return L, L.checkSet()
}

// checkSet compares the CUDA major each loaded library reports with the
// set's: a cuDNN whose major no file beside it recorded is known only now,
// and a library the system loader found may be of any major. When no
// folder said, the set's major becomes cuBLAS's (else NVRTC's, cuDNN's).
func (L *libraries) checkSet() error {
	reported := map[string]int{}
	var parts [1]int32
	if L.cublas.getProperty != 0 && int32(mustCall(L.cublas.getProperty, libraryPropMajor, uintptr(unsafe.Pointer(&parts[0])))) == 0 {
		reported[specCublas.role] = int(parts[0])
	}
	if L.nvrtc.version != 0 {
		maj, _ := L.nvrtc.versionNumbers()
		reported[specNvrtc.role] = maj
	}
	if v := L.cudnn.cudaVersion(); v > 0 {
		reported[specCudnn.role] = v / 1000
	}
	order := []libSpec{specCublas, specNvrtc, specCudnn}
	for _, spec := range order {
		if L.set.major == 0 {
			L.set.major = reported[spec.role]
		}
	}
	for _, spec := range order {
		got := reported[spec.role]
		if got == 0 || L.set.major == 0 || got == L.set.major {
			continue
		}
		return fmt.Errorf("cuda: %s at %s reports CUDA %d, but the other libraries loaded are CUDA %d, and cuDNN needs cuBLASLt and NVRTC of its own major; "+
			"install a whole set of one major (%s; or %s) or point SIMCLR_CUDA_LIBS at a folder holding one (set chosen: %s)",
			spec.role, L.paths[spec.role], got, L.set.major, installHint(L.set.major, spec.role), installHint(got, "nvrtc", "cublas", "cudnn"), L.set.why)
	}
	return nil
}
