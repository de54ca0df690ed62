package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cuda/cudaemu"
	"github.com/simclr-go/simclr/tensor"
)

// The layouts of a GPU machine, as fake files: CUDA 13 wheels (one
// folder), a cuDNN wheel whose metadata names its CUDA major, a CUDA 12
// toolkit.
const (
	venv  = "opt/torch/.venv/lib/python3.12/site-packages"
	cu13  = venv + "/nvidia/cu13/lib"
	dnn   = venv + "/nvidia/cudnn/lib"
	tk12  = "usr/local/cuda-12.8/lib64"
	other = "opt/other/.venv/lib/python3.11/site-packages"
)

func set13() []string {
	return []string{cu13 + "/libcublas.so.13", cu13 + "/libcublasLt.so.13", cu13 + "/libnvrtc.so.13"}
}

func set12() []string {
	return []string{tk12 + "/libcublas.so.12", tk12 + "/libcublasLt.so.12", tk12 + "/libnvrtc.so.12"}
}

func cudnnWheel(site string, major string) []string {
	return []string{site + "/nvidia/cudnn/lib/libcudnn.so.9", site + "/nvidia_cudnn_cu" + major + "-9.10.2.21.dist-info/RECORD"}
}

func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// chooseSet on fake trees: one CUDA major for cuBLAS(Lt), NVRTC and cuDNN,
// the driver's where it is whole, never one newer than the driver's.
func TestChooseSet(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		vars    map[string]string // relative folders, made absolute
		driver  int
		major   int
		paths   map[string]string // role -> file (relative); roles absent from it must be absent
		why     []string          // substrings of the reason
		errHas  []string          // when the choice fails
		errNone []string
	}{
		{
			name: "the driver's major when its set is whole", driver: 13, major: 13,
			files: cat(set13(), set12(), cudnnWheel(venv, "13")),
			paths: map[string]string{"cublas": cu13 + "/libcublas.so.13", "cublasLt": cu13 + "/libcublasLt.so.13", "nvrtc": cu13 + "/libnvrtc.so.13", "cudnn": dnn + "/libcudnn.so.9"},
			why:   []string{"the driver's CUDA 13", "cuDNN built for CUDA 13 (its wheel nvidia_cudnn_cu13-9.10.2.21.dist-info)", "left unused: ", tk12 + "/libcublas.so.12"},
		},
		{
			// PyTorch's cu12 wheels bring a cuDNN for CUDA 12; the newest
			// soname of each library would be the CUDA 13 ones.
			name: "a cuDNN for CUDA 12 beside CUDA 13 libraries takes the CUDA 12 set", driver: 13, major: 12,
			files: cat(set13(), set12(), cudnnWheel(venv, "12")),
			paths: map[string]string{"cublas": tk12 + "/libcublas.so.12", "cublasLt": tk12 + "/libcublasLt.so.12", "nvrtc": tk12 + "/libnvrtc.so.12", "cudnn": dnn + "/libcudnn.so.9"},
			why:   []string{"the driver supports CUDA 13", "CUDA 13 lacks cudnn", "cuDNN built for CUDA 12 (its wheel nvidia_cudnn_cu12"},
		},
		{
			name: "a second cuDNN for CUDA 13 elsewhere wins the driver's set", driver: 13, major: 13,
			files: cat(set13(), set12(), cudnnWheel(venv, "12"), cudnnWheel(other, "13")),
			paths: map[string]string{"cublas": cu13 + "/libcublas.so.13", "cudnn": other + "/nvidia/cudnn/lib/libcudnn.so.9"},
			why:   []string{"the driver's CUDA 13", "left unused: ", dnn + "/libcudnn.so.9"},
		},
		{
			name: "libraries newer than the driver are never chosen", driver: 12, major: 12,
			files: cat(set13(), set12(), []string{tk12 + "/libcudnn.so.9"}),
			paths: map[string]string{"cublas": tk12 + "/libcublas.so.12", "nvrtc": tk12 + "/libnvrtc.so.12", "cudnn": tk12 + "/libcudnn.so.9"},
			why:   []string{"the driver's CUDA 12", "CUDA 13 too new for this driver", "cuDNN built for CUDA 12 (its folder's name)"},
		},
		{
			name: "a cuDNN of unknown major fits the driver's set, checked once loaded", driver: 13, major: 13,
			files: cat(set13(), set12(), []string{"usr/lib/x86_64-linux-gnu/libcudnn.so.9"}),
			paths: map[string]string{"cublas": cu13 + "/libcublas.so.13", "cudnn": "usr/lib/x86_64-linux-gnu/libcudnn.so.9"},
			why:   []string{"checked once loaded"},
		},
		{
			name: "a Debian package's file list gives cuDNN's major", driver: 13, major: 12,
			files: cat(set13(), set12(), []string{"usr/lib/x86_64-linux-gnu/libcudnn.so.9", "var/lib/dpkg/info/libcudnn9-cuda-12.list"}),
			paths: map[string]string{"cublas": tk12 + "/libcublas.so.12", "cudnn": "usr/lib/x86_64-linux-gnu/libcudnn.so.9"},
			why:   []string{"cuDNN built for CUDA 12 (its Debian package libcudnn9-cuda-12)"},
		},
		{
			name: "NVIDIA's archive folder names cuDNN's major", driver: 13, major: 13,
			files: cat(set13(), set12(), []string{"opt/cudnn-linux-x86_64-9.12.0.46_cuda13-archive/lib/libcudnn.so.9"}),
			vars:  map[string]string{"LD_LIBRARY_PATH": "opt/cudnn-linux-x86_64-9.12.0.46_cuda13-archive/lib"},
			paths: map[string]string{"cudnn": "opt/cudnn-linux-x86_64-9.12.0.46_cuda13-archive/lib/libcudnn.so.9"},
			why:   []string{"cuDNN built for CUDA 13 (its folder's name)"},
		},
		{
			name: "SIMCLR_CUDA_LIBS fixes the major", driver: 13, major: 12,
			files: cat(set13(), []string{"pin/libcublas.so.12", "pin/libcublasLt.so.12", tk12 + "/libnvrtc.so.12", "pin/libcudnn.so.9"}, cudnnWheel(venv, "13")),
			vars:  map[string]string{"SIMCLR_CUDA_LIBS": "pin"},
			paths: map[string]string{"cublas": "pin/libcublas.so.12", "cublasLt": "pin/libcublasLt.so.12", "nvrtc": tk12 + "/libnvrtc.so.12", "cudnn": "pin/libcudnn.so.9"},
			why:   []string{"SIMCLR_CUDA_LIBS holds libcublas.so.12"},
		},
		{
			name: "cuBLASLt from cuBLAS's folder", driver: 13, major: 13,
			files: cat([]string{"a/libcublasLt.so.13", "b/libcublas.so.13", "b/libcublasLt.so.13", "b/libnvrtc.so.13"}),
			vars:  map[string]string{"LD_LIBRARY_PATH": "a:b"},
			paths: map[string]string{"cublas": "b/libcublas.so.13", "cublasLt": "b/libcublasLt.so.13", "nvrtc": "b/libnvrtc.so.13"},
		},
		{
			name: "nothing in the folders: the system loader, the driver's major first", driver: 13, major: 13,
			paths: map[string]string{},
			why:   []string{"the system loader's, CUDA 13 first"},
		},
		{
			name: "no consistent set", driver: 13,
			files:   cat(set13(), []string{tk12 + "/libnvrtc.so.12"}, cudnnWheel(venv, "12")),
			errHas:  []string{"no consistent set", "CUDA 13 lacks cudnn", "CUDA 12 lacks cublasLt, cublas", "nvidia_cudnn_cu12", "nvidia-cudnn-cu13", "nvidia-cublas~=13.0", "SIMCLR_CUDA_LIBS"},
			errNone: []string{"-cu12"},
		},
		{
			name: "only libraries newer than the driver", driver: 12,
			files:  cat(set13(), cudnnWheel(venv, "13")),
			errHas: []string{"the driver supports CUDA 12 at most", "CUDA 13 found too, newer than the driver supports", "580", "nvidia-cudnn-cu12"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeTree(t, tc.files...)
			j := func(p string) string { return filepath.Join(root, p) }
			if strings.Contains(tc.name, "Debian") {
				if err := os.WriteFile(j("var/lib/dpkg/info/libcudnn9-cuda-12.list"), []byte("/usr/include/cudnn.h\n/usr/lib/x86_64-linux-gnu/libcudnn.so.9\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			vars := map[string]string{}
			for k, v := range tc.vars {
				var abs []string
				for _, d := range strings.Split(v, ":") {
					abs = append(abs, j(d))
				}
				vars[k] = strings.Join(abs, ":")
			}
			env := envOf(root, vars)
			set, err := chooseSet(env.search(), root, tc.driver)
			if len(tc.errHas) > 0 {
				if err == nil {
					t.Fatalf("chose CUDA %d (%v), want an error", set.major, set.paths)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q:\n%v", s, err)
					}
				}
				for _, s := range tc.errNone {
					if strings.Contains(err.Error(), s) {
						t.Errorf("error names %q:\n%v", s, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if set.major != tc.major {
				t.Errorf("major %d, want %d (%s)", set.major, tc.major, set.why)
			}
			for role, want := range tc.paths {
				if got := set.paths[role]; got != j(want) {
					t.Errorf("%s = %q, want %q", role, got, j(want))
				}
			}
			if len(tc.paths) == 0 && len(set.paths) != 0 {
				t.Errorf("paths %v, want none", set.paths)
			}
			for _, s := range tc.why {
				if !strings.Contains(set.why, strings.ReplaceAll(s, venv, j(venv))) && !strings.Contains(set.why, s) {
					t.Errorf("reason lacks %q: %s", s, set.why)
				}
			}
		})
	}
}

func TestInstallHint(t *testing.T) {
	tests := []struct {
		major      int
		roles      []string
		has, hasnt []string
	}{
		{12, []string{"nvrtc", "cublas", "cudnn"}, []string{"pip install nvidia-cuda-nvrtc-cu12 nvidia-cublas-cu12 nvidia-cudnn-cu12", "CUDA 12 toolkit"}, []string{"13"}},
		{13, []string{"nvrtc", "cublas", "cudnn"}, []string{"pip install 'nvidia-cuda-nvrtc~=13.0' 'nvidia-cublas~=13.0' nvidia-cudnn-cu13"}, []string{"cu12"}},
		{13, []string{"cublasLt", "cublas"}, []string{"pip install 'nvidia-cublas~=13.0',"}, []string{"cudnn", "nvrtc"}},
		{0, []string{"cudnn"}, []string{"for CUDA 13: pip install nvidia-cudnn-cu13", "for CUDA 12: pip install nvidia-cudnn-cu12"}, nil},
	}
	for _, tc := range tests {
		got := installHint(tc.major, tc.roles...)
		for _, s := range tc.has {
			if !strings.Contains(got, s) {
				t.Errorf("installHint(%d, %v) = %q lacks %q", tc.major, tc.roles, got, s)
			}
		}
		for _, s := range tc.hasnt {
			if strings.Contains(got, s) {
				t.Errorf("installHint(%d, %v) = %q names %q", tc.major, tc.roles, got, s)
			}
		}
	}
}

// link makes dst a symbolic link to src, or with copy a copy of it. A copy
// is a library of its own to the loader (an emulated cuBLAS or NVRTC copy
// reports the major of the name it is loaded under); a link is the same
// library as the emulator's own, which the other tests of the process load
// again: the driver and cuDNN must be links, as the emulated cuBLAS and
// cuDNN find the driver by name among the loaded libraries, and a second
// driver would not know the first one's memory.
func link(t *testing.T, src, dst string, copy bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if !copy {
		if err := os.Symlink(src, dst); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// The whole load on the emulator, with a machine's mixed library set: the
// driver supports CUDA 13, CUDA 13 cuBLAS and NVRTC sit in a wheel folder,
// a CUDA 12 toolkit elsewhere, and a cuDNN whose CUDA major its wheel
// records or (last case) only the loaded library reports.
func TestLibrarySetOnEmulator(t *testing.T) {
	emu := cudaemu.Use(t)
	tests := []struct {
		name      string
		cudnnMeta string // the cuDNN wheel's major, "" for no metadata
		cudnnCUDA string // what the emulated cuDNN reports it was built for
		set       string
		cublas    string
		paths     map[string]string
		err       []string
	}{
		{"cuDNN for CUDA 12 takes the CUDA 12 set", "12", "12080", "CUDA 12", "12.8.4",
			map[string]string{"cublas": tk12 + "/libcublas.so.12", "nvrtc": tk12 + "/libnvrtc.so.12", "cudnn": dnn + "/libcudnn.so.9"}, nil},
		{"cuDNN for CUDA 13 takes the driver's", "13", "13000", "CUDA 13", "13.0.0",
			map[string]string{"cublas": cu13 + "/libcublas.so.13", "nvrtc": cu13 + "/libnvrtc.so.13", "cudnn": dnn + "/libcudnn.so.9"}, nil},
		{"a cuDNN that records nothing is checked once loaded", "", "12080", "CUDA 13", "",
			nil, []string{"cudnn at", "reports CUDA 12, but the other libraries loaded are CUDA 13", "nvidia-cudnn-cu13", "nvidia-cublas-cu12"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SIMCLR_CUDA_EMU_DRIVER_VERSION", "13000")
			t.Setenv("SIMCLR_CUDA_EMU_CUDNN_CUDA", tc.cudnnCUDA)
			root := t.TempDir()
			j := func(p string) string { return filepath.Join(root, p) }
			link(t, filepath.Join(emu, "libcuda.so.1"), j("usr/local/nvidia/lib64/libcuda.so.1"), false)
			for _, n := range []string{"libcublas.so", "libcublasLt.so", "libnvrtc.so"} {
				link(t, filepath.Join(emu, n+".12"), j(cu13+"/"+n+".13"), true)
				link(t, filepath.Join(emu, n+".12"), j(tk12+"/"+n+".12"), false)
			}
			link(t, filepath.Join(emu, "libcudnn.so.9"), j(dnn+"/libcudnn.so.9"), false)
			if tc.cudnnMeta != "" {
				if err := os.MkdirAll(j(venv+"/nvidia_cudnn_cu"+tc.cudnnMeta+"-9.8.0.87.dist-info"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r := probe(envOf(root, nil))
			s := r.String()
			if tc.err != nil {
				if r.Err == nil {
					t.Fatalf("no error:\n%s", s)
				}
				for _, want := range tc.err {
					if !strings.Contains(r.Err.Error(), want) {
						t.Errorf("error lacks %q: %v", want, r.Err)
					}
				}
				return
			}
			if r.Err != nil || r.Set != tc.set || r.Versions.CUBLAS != tc.cublas {
				t.Fatalf("set %q, cuBLAS %q, error %v; want %q, %q:\n%s", r.Set, r.Versions.CUBLAS, r.Err, tc.set, tc.cublas, s)
			}
			for _, l := range r.Libraries {
				if want, ok := tc.paths[l.Role]; ok && l.Path != j(want) {
					t.Errorf("%s = %s, want %s", l.Role, l.Path, j(want))
				}
			}
			for _, want := range []string{"library set: " + tc.set + " (", "driver 13.0", "for CUDA " + tc.cudnnCUDA[:2] + "."} {
				if !strings.Contains(s, want) {
					t.Errorf("report lacks %q:\n%s", want, s)
				}
			}
		})
	}
}

// A sticky driver error (a kernel fault) surfacing at an allocation is
// reported as the fault it is, never as out of memory, and Recover keeps
// it; an allocation the device refuses stays out of memory.
func TestArenaNamesStickyFaults(t *testing.T) {
	for _, code := range []int{700, 716, 719} {
		grows := 0
		a := newArena(256, 1<<20, func(uint64) (uint64, error) {
			grows++
			return 0, &Error{Call: "cuMemAlloc(1.00 MiB)", Code: code, Name: "CUDA_ERROR_X", Sticky: stickyCUresult(int32(code))}
		}, nil)
		_, err := a.alloc(1000, "a test buffer")
		if !errors.Is(err, ErrDeviceFault) || errors.Is(err, ErrOutOfMemory) || grows != 1 {
			t.Errorf("code %d: error %v (fault %v, OOM %v) after %d grows; want a fault, no OOM, no retry", code, err,
				errors.Is(err, ErrDeviceFault), errors.Is(err, ErrOutOfMemory), grows)
		}
		b := &Backend{err: err}
		if b.Recover() == nil {
			t.Errorf("code %d: Recover cleared a sticky fault", code)
		}
	}
	a := newArena(256, 1<<20, func(uint64) (uint64, error) {
		return 0, &Error{Call: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Sticky: stickyCUresult(2)}
	}, nil)
	if _, err := a.alloc(1000, "x"); !errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrDeviceFault) {
		t.Errorf("out of memory reported as %v", err)
	}
}

// On the emulator: a kernel faults after its launch returned (injected, as
// on a GPU, where the fault comes out at a later call); the next call that
// meets it, an allocation needing a new chunk, a cuBLAS product or a cuDNN
// convolution, fails with the fault's name and the advice, not as out of
// memory nor as the library's own failure alone, and Recover keeps it.
func TestStickyFaultOnEmulator(t *testing.T) {
	cudaemu.Use(t)
	conv := tensor.ConvShape{N: 1, C: 2, H: 5, W: 5, K: 3, R: 3, S: 3, Stride: 1, Pad: 1}
	for _, tc := range []struct {
		code    int
		name    string
		surface string
		want    []string
	}{
		{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "allocation", []string{"allocating 4.0 MiB"}},
		{716, "CUDA_ERROR_MISALIGNED_ADDRESS", "cuBLAS", []string{"cublasSgemm", "CUBLAS_STATUS_EXECUTION_FAILED"}},
		{719, "CUDA_ERROR_LAUNCH_FAILED", "cuDNN", []string{"cudnnConvolutionForward", "CUDNN_STATUS_EXECUTION_FAILED"}},
	} {
		t.Run(tc.surface, func(t *testing.T) {
			b, err := Open(Options{Precision: "fp32", ChunkBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			inject, err := b.libs.driver.lib.sym("simclr_cuda_emu_fault_after_next_launch")
			if err != nil {
				t.Fatal(err)
			}
			x, w, y := b.Alloc(conv.N*conv.C*conv.H*conv.W), b.Alloc(conv.K*conv.C*conv.R*conv.S), b.Alloc(conv.N*conv.K*conv.OutH()*conv.OutW())
			if tc.surface == "cuDNN" {
				// Planned before the fault, so that the convolution
				// itself meets it, not its workspace's allocation.
				b.Conv2dForward(conv, x, w, y)
				if err := b.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			mustCall(inject, uintptr(tc.code))
			b.Scale(x, 2) // launches, returns success; the fault stays behind
			if b.err != nil {
				t.Fatalf("the launch itself failed: %v", b.err)
			}
			switch tc.surface {
			case "allocation":
				b.Alloc(1 << 20) // 4 MiB: a new chunk, cuMemAlloc
			case "cuBLAS":
				b.LinearForward(2, 5, 3, b.Slice(x, 0, 10), b.Slice(w, 0, 15), nil, b.Slice(y, 0, 6))
			case "cuDNN":
				b.Conv2dForward(conv, x, w, y)
			}
			err = b.Sync()
			if !errors.Is(err, ErrDeviceFault) || errors.Is(err, ErrOutOfMemory) {
				t.Fatalf("error %v: fault %v, out of memory %v", err, errors.Is(err, ErrDeviceFault), errors.Is(err, ErrOutOfMemory))
			}
			for _, want := range append([]string{tc.name, "sticky fault", "CUDA_LAUNCH_BLOCKING=1", "compute-sanitizer"}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			if strings.Contains(err.Error(), "out of GPU memory") {
				t.Errorf("a fault reported as out of memory: %v", err)
			}
			if b.Recover() == nil {
				t.Error("Recover cleared the fault")
			}
		})
	}
	// The control: a real shortage is still out of memory, and recoverable.
	t.Run("out of memory", func(t *testing.T) {
		t.Setenv("SIMCLR_CUDA_EMU_MEMORY_MB", "64")
		b, err := Open(Options{Precision: "fp32", ChunkBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.Alloc(32 << 20) // 128 MiB
		err = b.Sync()
		if !errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrDeviceFault) {
			t.Fatalf("error %v", err)
		}
		if err := b.Recover(); err != nil {
			t.Errorf("Recover after out of memory: %v", err)
		}
	})
}

// On a real system (root "") the Debian lists are read from /var/lib/dpkg,
// wherever the program runs; a relative pattern found them only when run
// from /.
func TestDpkgCudnnListsIsAbsolute(t *testing.T) {
	for _, tc := range []struct{ root, want string }{
		{"", "/var/lib/dpkg/info/libcudnn9-cuda-*.list"},
		{"/tmp/fake", "/tmp/fake/var/lib/dpkg/info/libcudnn9-cuda-*.list"},
	} {
		if got := dpkgCudnnLists(tc.root); got != tc.want {
			t.Errorf("dpkgCudnnLists(%q) = %q, want %q", tc.root, got, tc.want)
		}
	}
}
