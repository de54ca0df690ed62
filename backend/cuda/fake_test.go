package cuda

import (
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// realDriverOpens reports whether a real libcuda.so.1 can be loaded: from
// a folder of the search path or through the system loader. The handle is
// opened RTLD_LOCAL and closed again, so nothing of it leaks into the
// process's symbol namespace.
func realDriverOpens() (string, bool) {
	var tries []string
	dirs := defaultSearchEnv().dirs()
	for _, d := range dirs {
		for _, n := range specDriver.names {
			tries = append(tries, filepath.Join(d, n))
		}
	}
	tries = append(tries, specDriver.names...)
	for _, p := range tries {
		if h, err := purego.Dlopen(p, purego.RTLD_LAZY|purego.RTLD_LOCAL); err == nil {
			purego.Dlclose(h)
			return p, true
		}
	}
	return "", false
}

// buildFakeDriver compiles testdata/fakecuda.c into dir/libcuda.so.1.
//
// Where a real driver opens (a GPU machine) the fake tests skip: the
// fake is loaded with RTLD_GLOBAL and would then interpose its failing
// cuMemAlloc and friends on every library loaded later in the process (the
// parity tests open the real cuBLAS and cuDNN after it), and the probe of
// the fake would find the real cuBLAS and cuDNN; the parity tests cover
// the real driver there.
func buildFakeDriver(t *testing.T) string {
	t.Helper()
	if p, ok := realDriverOpens(); ok {
		t.Skipf("a real driver opens (%s): the parity tests exercise it", p)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		testenv.Missing(t, "no C compiler (cc) to build the fake driver: %v", err)
	}
	dir := t.TempDir()
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", filepath.Join(dir, "libcuda.so.1"), "testdata/fakecuda.c").CombinedOutput()
	if err != nil {
		t.Fatalf("build fake driver: %v\n%s", err, out)
	}
	return dir
}

// The driver glue against a fake libcuda: device enumeration through
// pointer outputs, error names, and the report.
func TestFakeDriverProbe(t *testing.T) {
	dir := buildFakeDriver(t)
	env := searchEnv{getenv: func(k string) string {
		if k == "SIMCLR_CUDA_LIBS" {
			return dir
		}
		return ""
	}}
	r := probe(env)
	if len(r.Devices) != 1 {
		t.Fatalf("devices = %+v (err %v)", r.Devices, r.Err)
	}
	d := r.Devices[0]
	if d.Name != "Fake GPU 9000" || d.Major != 8 || d.Minor != 6 || d.SMs != 84 || d.TotalMem != 8<<30 {
		t.Errorf("device = %+v", d)
	}
	if r.Libraries[0].Path != filepath.Join(dir, "libcuda.so.1") {
		t.Errorf("driver path %q", r.Libraries[0].Path)
	}
	if r.OK() {
		t.Error("report OK without cuBLAS and cuDNN")
	}
	s := r.String()
	if !strings.Contains(s, "GPU 0: Fake GPU 9000, compute capability 8.6, 84 SMs, 8.00 GiB") {
		t.Errorf("report:\n%s", s)
	}

	var drv driverAPI
	lib, err := openLibrary(searchPath{dirs: []string{dir}}, specDriver, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.load(lib); err != nil {
		t.Fatal(err)
	}
	err = drv.check("cuInit", mustCall(drv.cuInit, 5))
	if err == nil || err.Error() != "cuda: cuInit: CUDA_ERROR_INVALID_VALUE (1): invalid argument" {
		t.Errorf("error = %v", err)
	}
	if drv.check("x", 0) != nil {
		t.Error("CUDA_SUCCESS reported as an error")
	}
}

// launch and the copy paths through the fake driver: kernel arguments
// arrive as cuLaunchKernel's array of pointers with the right values and
// widths, and Upload/Download/Copy/Zero move the right bytes.
func TestFakeDriverLaunchAndCopies(t *testing.T) {
	dir := buildFakeDriver(t)
	lib, err := openLibrary(searchPath{dirs: []string{dir}}, specDriver, "")
	if err != nil {
		t.Fatal(err)
	}
	b := &Backend{libs: &libraries{}, fns: map[string]uintptr{}, stream: 0xabc, sms: 84}
	if err := b.libs.driver.load(lib); err != nil {
		t.Fatal(err)
	}
	b.fns["k_sgd"] = 0x1234
	setN, _ := lib.sym("fake_set_nparams")
	last, _ := lib.sym("fake_last_launch")
	purego.SyscallN(setN, 8)
	w := &devBuf{ptr: 0x1000, n: 10}
	b.launch("k_sgd", 3, 2, w, uint64(0x2000), nil, 10, float32(0.1), float32(-0.9), float32(5e-4), true)
	if b.err != nil {
		t.Fatal(b.err)
	}
	var geom [9]uint64
	var params [32]uint64
	purego.SyscallN(last, uintptr(unsafe.Pointer(&geom[0])), uintptr(unsafe.Pointer(&params[0])))
	wantGeom := [9]uint64{0x1234, 3, 2, 1, blockSize, 1, 1, 0, 0xabc}
	if geom != wantGeom {
		t.Errorf("geometry %v, want %v", geom, wantGeom)
	}
	lo := func(v uint64) uint32 { return uint32(v) }
	if params[0] != 0x1000 || params[1] != 0x2000 || params[2] != 0 || lo(params[3]) != 10 ||
		math.Float32frombits(lo(params[4])) != 0.1 || math.Float32frombits(lo(params[5])) != -0.9 ||
		math.Float32frombits(lo(params[6])) != 5e-4 || lo(params[7]) != 1 {
		t.Errorf("parameters %x", params[:8])
	}

	// Device memory is host memory in the fake: use a Go array as "device".
	dev := make([]float32, 16)
	base := uint64(uintptr(unsafe.Pointer(&dev[0])))
	buf := &devBuf{ptr: base, n: 8, root: true}
	src := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	b.Upload(buf, src)
	b.Copy(b.Slice(&devBuf{ptr: base, n: 16}, 8, 8), buf)
	out := make([]float32, 8)
	b.Download(out, b.Slice(&devBuf{ptr: base, n: 16}, 8, 8))
	for i := range out {
		if out[i] != src[i] {
			t.Fatalf("round trip %v, want %v", out, src)
		}
	}
	b.Zero(b.Slice(buf, 2, 3))
	b.Download(out, buf)
	want := []float32{1, 2, 0, 0, 0, 6, 7, 8}
	for i := range out {
		if out[i] != want[i] {
			t.Fatalf("after Zero(2:5): %v, want %v", out, want)
		}
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}
