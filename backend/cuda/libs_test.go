package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// fakeTree creates empty files (fake libraries) under root and returns root.
func fakeTree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not an ELF file"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func envOf(root string, vars map[string]string) searchEnv {
	return searchEnv{getenv: func(k string) string { return vars[k] }, root: root, home: filepath.Join(root, "home")}
}

func TestSearchOrder(t *testing.T) {
	root := fakeTree(t,
		"custom/libcublas.so.12",
		"ld/libcublas.so.12",
		"usr/local/cuda/lib64/libcublas.so.12",
		"usr/local/nvidia/lib64/libcuda.so.1",
		"usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublas.so.12",
		"usr/local/cuda-12.10/targets/x86_64-linux/lib/libcublas.so.12",
		"opt/torch/.venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12",
		"opt/torch/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
		"home/.local/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
		"usr/lib/x86_64-linux-gnu/libcuda.so.1",
	)
	j := func(p string) string { return filepath.Join(root, p) }
	env := envOf(root, map[string]string{
		"SIMCLR_CUDA_LIBS": j("custom"),
		"LD_LIBRARY_PATH":  j("ld") + ":" + j("does-not-exist"),
	})
	got := env.dirs()
	want := []string{
		j("custom"),
		j("ld"),
		j("usr/local/nvidia/lib64"), // the mounted driver, before the toolkit
		j("usr/local/cuda/lib64"),
		j("usr/local/cuda-12.10/targets/x86_64-linux/lib"), // newest version first
		j("usr/local/cuda-12.4/targets/x86_64-linux/lib"),
		j("opt/torch/.venv/lib/python3.11/site-packages/nvidia/cublas/lib"),
		j("opt/torch/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib"),
		j("home/.local/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib"),
		j("usr/lib/x86_64-linux-gnu"),
		j("usr/lib"), // exists as the parent of the folder above
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("search folders:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLocate(t *testing.T) {
	root := fakeTree(t,
		"a/libcublas.so.12",
		"b/libcublas.so.13",
		"b/libcublasLt.so.13",
		"c/libcublasLt.so.12",
		"c/libcublas.so.13",
		"d/libcudnn.so.8", // wrong major: never taken
		"e/libnvrtc.so.11.2",
		"e/libnvrtc.so.12",
	)
	j := func(p string) string { return filepath.Join(root, p) }
	dirs := []string{j("a"), j("b"), j("c"), j("d"), j("e")}
	tests := []struct {
		name   string
		pinned int // leading folders from SIMCLR_CUDA_LIBS
		spec   libSpec
		prefer string
		want   string
	}{
		{"newest soname wins over an earlier folder", 0, specCublas, "", j("b/libcublas.so.13")},
		{"earlier folder among equal sonames", 0, specCublasLt, "", j("b/libcublasLt.so.13")},
		{"newest soname within a folder", 0, specNvrtc, "", j("e/libnvrtc.so.12")},
		{"SIMCLR_CUDA_LIBS wins with an older soname", 1, specCublas, "", j("a/libcublas.so.12")},
		{"SIMCLR_CUDA_LIBS without it: newest elsewhere", 1, specCublasLt, "", j("b/libcublasLt.so.13")},
		{"preferred folder first", 0, specCublasLt, j("c"), j("c/libcublasLt.so.12")},
		{"preferred folder before SIMCLR_CUDA_LIBS", 1, specCublas, j("c"), j("c/libcublas.so.13")},
		{"preferred folder lacking it", 0, specCublasLt, j("a"), j("b/libcublasLt.so.13")},
		{"missing", 0, specCudnn, "", ""},
		{"driver missing", 0, specDriver, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := locate(searchPath{dirs: dirs, pinned: tc.pinned}, tc.spec, tc.prefer)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("locate = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// TestNewestSonameWins: locate's rule (the driver's library; the CUDA
// libraries of a set are chosen together, TestChooseSet) through the whole
// search: the newest soname found anywhere wins, unless SIMCLR_CUDA_LIBS
// names a folder holding the library.
func TestNewestSonameWins(t *testing.T) {
	root := fakeTree(t,
		"usr/local/cuda/lib64/libcublas.so.12",
		"opt/torch/.venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublas.so.13",
	)
	j := func(p string) string { return filepath.Join(root, p) }
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"newest soname, later folder", nil, j("opt/torch/.venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublas.so.13")},
		{"SIMCLR_CUDA_LIBS picks the older", map[string]string{"SIMCLR_CUDA_LIBS": j("usr/local/cuda/lib64")}, j("usr/local/cuda/lib64/libcublas.so.12")},
		{"LD_LIBRARY_PATH is searched like the rest", map[string]string{"LD_LIBRARY_PATH": j("usr/local/cuda/lib64")}, j("opt/torch/.venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublas.so.13")},
	}
	for _, tc := range tests {
		got, ok := locate(envOf(root, tc.vars).search(), specCublas, "")
		if !ok || got != tc.want {
			t.Errorf("%s: locate = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestVersionLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"cuda-12.4", "cuda-12.10", true},
		{"cuda-12.10", "cuda-12.4", false},
		{"cuda-11.8", "cuda-12.0", true},
		{"python3.9", "python3.11", true},
		{"libnvrtc-builtins.so.12.4", "libnvrtc-builtins.so.12.8", true},
		{"same", "same", false},
	}
	for _, tc := range tests {
		if got := versionLess(tc.a, tc.b); got != tc.want {
			t.Errorf("versionLess(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNvrtcBuiltins(t *testing.T) {
	root := fakeTree(t, "lib/libnvrtc.so.12", "lib/libnvrtc-builtins.so.12.4", "lib/libnvrtc-builtins.so.12.8", "lib/libnvrtc-builtins.so.13.0")
	got := nvrtcBuiltins(filepath.Join(root, "lib/libnvrtc.so.12"))
	want := []string{"libnvrtc-builtins.so.12.8", "libnvrtc-builtins.so.12.4"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("builtins = %v, want %v", got, want)
	}
}

// A file with the right name that is not a library must fail with an
// error naming it, not crash.
func TestOpenLibraryBadFile(t *testing.T) {
	root := fakeTree(t, "libs/libcuda.so.1")
	dir := filepath.Join(root, "libs")
	_, err := openLibrary(searchPath{dirs: []string{dir}}, specDriver, "")
	if err == nil {
		t.Fatal("loading a fake libcuda.so.1 succeeded")
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, "libcuda.so.1")) || !strings.Contains(err.Error(), "SIMCLR_CUDA_LIBS") {
		t.Fatalf("error does not name the file and the fix: %v", err)
	}
}

// On this machine (no NVIDIA driver) Open must fail with an error that
// says what is missing; on a GPU machine the test does not apply.
func TestOpenFailsClearlyWithoutDriver(t *testing.T) {
	if p, ok := realDriverOpens(); ok {
		t.Skipf("a real driver opens (%s)", p)
	}
	b, err := Open(Options{})
	if err == nil {
		b.Close()
		t.Skip("cuda opened through the system loader")
	}
	for _, want := range []string{"libcuda.so.1", "SIMCLR_CUDA_LIBS", "driver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open error %q does not mention %q", err, want)
		}
	}
	r := Probe()
	if r.OK() || r.Err == nil {
		t.Fatalf("Probe reports cuda usable without a driver: %+v", r)
	}
	s := r.String()
	for _, want := range []string{"driver", "not found", "cuda unavailable", "GPUs: none"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

func TestProbeReportsFoundLibraries(t *testing.T) {
	root := fakeTree(t, "x/libcublas.so.12", "x/libcublasLt.so.12", "x/libcudnn.so.9")
	env := envOf(root, map[string]string{"SIMCLR_CUDA_LIBS": filepath.Join(root, "x")})
	if _, ok := locate(env.search(), specDriver, ""); ok {
		t.Skip("a real driver is visible")
	}
	r := probe(env)
	paths := map[string]string{}
	for _, l := range r.Libraries {
		paths[l.Role] = l.Path
	}
	if paths["cublas"] != filepath.Join(root, "x/libcublas.so.12") || paths["cudnn"] != filepath.Join(root, "x/libcudnn.so.9") {
		t.Errorf("found %v", paths)
	}
	if r.Err == nil {
		t.Error("no error although the driver is missing")
	}
}

func TestValidPrecision(t *testing.T) {
	for _, p := range []string{"", "tf32", "fp32", "bf16"} {
		if err := ValidPrecision(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"fp16", "TF32x", "BF16", "bf8"} {
		if err := ValidPrecision(p); err == nil {
			t.Errorf("%q accepted", p)
		}
		if _, err := Open(Options{Precision: p}); err == nil || !strings.Contains(err.Error(), "precision") {
			t.Errorf("Open(%q) error %v does not name the precision", p, err)
		}
	}
}

// A symbol the main library lacks is taken from the fallbacks (cuDNN 9's
// shim and its sub-libraries); one that none has is an error naming the
// main library.
func TestBindFallsBackToSubLibraries(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		testenv.Missing(t, "no C compiler (cc) to build the fake libraries: %v", err)
	}
	dir := t.TempDir()
	for name, src := range map[string]string{
		"libshim.so": "int in_shim(void) { return 1; }\n",
		"libsub.so":  "int in_shim(void) { return 2; }\nint in_sub(void) { return 3; }\n",
	} {
		c := filepath.Join(dir, name+".c")
		if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, name), c).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	shim, err := openLibrary(searchPath{dirs: []string{dir}}, libSpec{"shim", []string{"libshim.so"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	subs := openSiblings(dir, []string{"libabsent.so", "libsub.so"})
	if len(subs) != 1 {
		t.Fatalf("openSiblings opened %d libraries, want 1", len(subs))
	}
	var inShim, inSub uintptr
	if err := shim.bind(map[string]*uintptr{"in_shim": &inShim, "in_sub": &inSub}, subs...); err != nil {
		t.Fatal(err)
	}
	if r := mustCall(inShim); r != 1 {
		t.Errorf("in_shim came from the fallback (returned %d), want the main library's", r)
	}
	if r := mustCall(inSub); r != 3 {
		t.Errorf("in_sub returned %d, want 3", r)
	}
	var missing uintptr
	err = shim.bind(map[string]*uintptr{"in_neither": &missing}, subs...)
	if err == nil || !strings.Contains(err.Error(), "libshim.so") || !strings.Contains(err.Error(), "in_neither") {
		t.Errorf("missing symbol: error %v", err)
	}
}
