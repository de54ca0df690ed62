//go:build !windows

package cudaemu

import (
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

//go:embed csrc/*.c csrc/*.h
var sources embed.FS

// The libraries built, from which file, named as backend/cuda looks for them.
var libraries = []struct{ name, source string }{
	{"libcuda.so.1", "driver.c"},
	{"libnvrtc.so.12", "nvrtc.c"},
	{"libcublas.so.12", "cublas.c"},
	{"libcublasLt.so.12", ""},
	{"libcudnn.so.9", "cudnn.c"},
}

// CacheEnv names the folder where the emulated NVRTC keeps the kernel
// objects it compiled, by a hash of their source, compiler and flags.
const CacheEnv = "SIMCLR_CUDA_EMU_CACHE"

// Build compiles the emulator into dir: the libraries of the list above
// with $CC (else cc), plus the headers the emulated NVRTC needs at run time.
// The libraries have no soname, so that a later dlopen of a bare soname
// (as a probe of the system's libraries does) never finds them.
func Build(dir string) error {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return fmt.Errorf("no C compiler (%s): %w", cc, err)
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "c++"
	}
	if _, err := exec.LookPath(strings.Fields(cxx)[0]); err != nil {
		return fmt.Errorf("no C++ compiler (%s) for the emulated NVRTC: %w", cxx, err)
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	entries, err := sources.ReadDir("csrc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := sources.ReadFile("csrc/" + e.Name())
		if err != nil {
			return err
		}
		dst := filepath.Join(src, e.Name())
		if strings.HasSuffix(e.Name(), ".h") {
			dst = filepath.Join(dir, e.Name()) // beside libnvrtc, which reads them
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	empty := filepath.Join(src, "empty.c")
	if err := os.WriteFile(empty, []byte("int simclr_cuda_emu_cublaslt;\n"), 0o644); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(libraries))
	for i, l := range libraries {
		in := empty
		if l.source != "" {
			in = filepath.Join(src, l.source)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// -Bsymbolic: a library's calls to its own functions stay
			// inside it, so that a test's copy of one (under another
			// soname) never runs on the state of the other.
			cmd := exec.Command(cc, "-std=gnu11", "-O3", "-ffp-contract=off", "-shared", "-fPIC", "-pthread", "-Wl,-Bsymbolic", "-Wall", "-Wno-format-truncation", "-I", dir,
				"-o", filepath.Join(dir, l.name), in, "-ldl", "-lm")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("build %s: %v\n%s", l.name, err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var shared struct {
	once sync.Once
	dir  string
	err  error
}

// Dir builds the emulator once per process into a temporary folder and
// returns it. The folder also holds the kernel cache (CacheEnv), so the
// kernels are compiled once per test binary.
func Dir() (string, error) {
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "simclr-cudaemu-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir, shared.err = dir, Build(dir)
	})
	return shared.dir, shared.err
}

// Main runs a package's tests (call it from TestMain) and then removes the
// folder Dir built, if any; it returns the exit code for os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return code
}

// realDriver reports whether a real libcuda.so.1 opens, through the system
// loader or where container runtimes mount it. The emulated one is loaded
// with RTLD_GLOBAL: a real cuBLAS or cuDNN loaded later in the process
// could bind to it, so a process that may use the real driver must not
// load the emulator.
func realDriver() (string, bool) {
	for _, p := range []string{"libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/local/nvidia/lib/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"} {
		if h, err := purego.Dlopen(p, purego.RTLD_LAZY|purego.RTLD_LOCAL); err == nil {
			purego.Dlclose(h)
			return p, true
		}
	}
	return "", false
}

// Use makes t run backend/cuda on the emulator: it builds it (once per
// process) and sets SIMCLR_CUDA_LIBS to its folder, the kernel cache
// (CacheEnv) beside it, and XDG_CACHE_HOME to a folder of its own, so that
// the backend's cache of compiled kernels never mixes emulator images with
// real ones. Without a C or C++ compiler t is skipped, or fails under
// CI=true. Where a real driver opens, t is skipped unless
// SIMCLR_CUDA_EMULATOR=1.
func Use(t testing.TB) string {
	t.Helper()
	if os.Getenv("SIMCLR_CUDA_EMULATOR") != "1" {
		if p, ok := realDriver(); ok {
			t.Skipf("a real CUDA driver opens (%s): the emulator runs only with SIMCLR_CUDA_EMULATOR=1 there", p)
		}
	}
	dir, err := Dir()
	if err != nil {
		testenv.Missing(t, "cannot build the CUDA emulator: %v (install gcc and g++)", err)
	}
	t.Setenv("SIMCLR_CUDA_LIBS", dir)
	t.Setenv(CacheEnv, filepath.Join(dir, "nvrtc-cache"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "xdg-cache"))
	if err := os.MkdirAll(filepath.Join(dir, "nvrtc-cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
