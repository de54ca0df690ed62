package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// libSpec names one library and the file names to try, most preferred first.
type libSpec struct {
	role  string   // "driver", "cublas", ...
	names []string // sonames, newest first
}

var (
	specDriver   = libSpec{"driver", []string{"libcuda.so.1", "libcuda.so"}}
	specCublasLt = libSpec{"cublasLt", []string{"libcublasLt.so.13", "libcublasLt.so.12"}}
	specCublas   = libSpec{"cublas", []string{"libcublas.so.13", "libcublas.so.12"}}
	specCudnn    = libSpec{"cudnn", []string{"libcudnn.so.9"}}
	specNvrtc    = libSpec{"nvrtc", []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}}
)

// cudnnSubLibraries are the parts cuDNN 9 splits into; libcudnn.so.9 opens
// them by soname at run time, which only works when their folder is on the
// loader's path, so they are preloaded from the folder libcudnn.so.9 came
// from. libcudnn_adv (RNNs, attention) is not needed.
var cudnnSubLibraries = []string{
	"libcudnn_graph.so.9",
	"libcudnn_engines_precompiled.so.9",
	"libcudnn_engines_runtime_compiled.so.9",
	"libcudnn_heuristic.so.9",
	"libcudnn_ops.so.9",
	"libcudnn_cnn.so.9",
}

// searchEnv is what library discovery reads from the outside world, so tests
// can point it at fake folders.
type searchEnv struct {
	getenv func(string) string
	root   string // prefix of every absolute system folder ("" in production)
	home   string
}

func defaultSearchEnv() searchEnv {
	home, _ := os.UserHomeDir()
	return searchEnv{getenv: os.Getenv, home: home}
}

// searchPath is the folders searched for the CUDA libraries, in order. The
// first pinned of them are SIMCLR_CUDA_LIBS's: a user's explicit choice,
// which wins whatever soname version it holds (locate).
type searchPath struct {
	dirs   []string
	pinned int
}

// dirs is the folders of search, for reports and tests.
func (e searchEnv) dirs() []string { return e.search().dirs }

// search is the ordered list of folders searched for the CUDA libraries:
// SIMCLR_CUDA_LIBS (pinned), LD_LIBRARY_PATH, the mounted driver
// (/usr/local/nvidia/lib64, /usr/local/nvidia/lib), the CUDA toolkit (/usr/local/cuda, then
// versioned installs, newest first), Python wheels (VIRTUAL_ENV, CONDA_PREFIX,
// /opt/*/.venv, ~/.local, system site-packages: nvidia/*/lib) and finally the
// system library folders. Folders that do not exist are left out; the result
// has no duplicates.
func (e searchEnv) search() searchPath {
	var out []string
	seen := map[string]bool{}
	add := func(d string) {
		if d == "" {
			return
		}
		d = filepath.Clean(d)
		if seen[d] {
			return
		}
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return
		}
		seen[d] = true
		out = append(out, d)
	}
	addList := func(v string) {
		for _, d := range filepath.SplitList(v) {
			add(d)
		}
	}
	sys := func(p string) string { return filepath.Join(e.root, p) }
	// globNewest expands a pattern and orders matches newest version first
	// (lexically descending after a natural sort of the digits).
	globNewest := func(pattern string) []string {
		m, _ := filepath.Glob(pattern)
		sort.Slice(m, func(i, j int) bool { return versionLess(m[j], m[i]) })
		return m
	}

	addList(e.getenv("SIMCLR_CUDA_LIBS"))
	pinned := len(out)
	addList(e.getenv("LD_LIBRARY_PATH"))
	// Where container runtimes mount the host's driver (the GPU machines
	// have libcuda.so.1 only there, outside the loader's cache).
	add(sys("/usr/local/nvidia/lib64"))
	add(sys("/usr/local/nvidia/lib"))
	for _, cudaRoot := range append([]string{sys("/usr/local/cuda")}, globNewest(sys("/usr/local/cuda-*"))...) {
		add(filepath.Join(cudaRoot, "lib64"))
		for _, t := range globNewest(filepath.Join(cudaRoot, "targets", "*", "lib")) {
			add(t)
		}
	}
	var sitePackages []string
	for _, prefix := range []string{e.getenv("VIRTUAL_ENV"), e.getenv("CONDA_PREFIX")} {
		if prefix != "" {
			sitePackages = append(sitePackages, globNewest(filepath.Join(prefix, "lib", "python3*", "site-packages"))...)
		}
	}
	sitePackages = append(sitePackages, globNewest(sys("/opt/*/.venv/lib/python3*/site-packages"))...)
	sitePackages = append(sitePackages, globNewest(sys("/opt/*/lib/python3*/site-packages"))...)
	if e.home != "" {
		sitePackages = append(sitePackages, globNewest(filepath.Join(e.home, ".local", "lib", "python3*", "site-packages"))...)
	}
	sitePackages = append(sitePackages, globNewest(sys("/usr/local/lib/python3*/dist-packages"))...)
	sitePackages = append(sitePackages, globNewest(sys("/usr/local/lib/python3*/site-packages"))...)
	sitePackages = append(sitePackages, sys("/usr/lib/python3/dist-packages"))
	for _, sp := range sitePackages {
		// nvidia/cu13/lib is the CUDA 13 wheels' single folder.
		m, _ := filepath.Glob(filepath.Join(sp, "nvidia", "*", "lib"))
		for _, d := range m {
			add(d)
		}
	}
	if prefix := e.getenv("CONDA_PREFIX"); prefix != "" {
		add(filepath.Join(prefix, "lib"))
	}
	for _, d := range []string{
		"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
		"/usr/lib64", "/lib64", "/usr/lib/wsl/lib", "/usr/lib", "/usr/local/lib",
	} {
		add(sys(d))
	}
	return searchPath{dirs: out, pinned: pinned}
}

// versionLess orders paths so that embedded numbers compare numerically
// ("cuda-12.10" after "cuda-12.9").
func versionLess(a, b string) bool {
	for a != "" && b != "" {
		da, ra := leadingNumber(a)
		db, rb := leadingNumber(b)
		if da >= 0 && db >= 0 {
			if da != db {
				return da < db
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func leadingNumber(s string) (int, string) {
	i := 0
	n := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' && i < 9 {
		n = n*10 + int(s[i]-'0')
		i++
	}
	if i == 0 {
		return -1, s
	}
	return n, s[i:]
}

// locate returns the file of spec to load. preferDir (when not empty; to
// take cuBLASLt from cuBLAS's folder) and then the pinned SIMCLR_CUDA_LIBS
// folders are searched first, folder by folder, taking the newest soname a
// folder holds. Elsewhere the newest soname found in any folder wins (a
// libcublas.so.13 in a Python wheel over a libcublas.so.12 in the CUDA
// toolkit), and among copies of one soname the earlier folder.
func locate(s searchPath, spec libSpec, preferDir string) (string, bool) {
	exists := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	}
	first := s.dirs[:s.pinned:s.pinned]
	if preferDir != "" {
		first = append([]string{preferDir}, first...)
	}
	for _, d := range first {
		for _, n := range spec.names {
			if p := filepath.Join(d, n); exists(p) {
				return p, true
			}
		}
	}
	for _, n := range spec.names {
		for _, d := range s.dirs[s.pinned:] {
			if p := filepath.Join(d, n); exists(p) {
				return p, true
			}
		}
	}
	return "", false
}

// library is one loaded shared object.
type library struct {
	role   string
	path   string
	handle uintptr
}

// openLibrary finds spec in dirs and loads it with RTLD_GLOBAL (so that the
// libraries loaded after it resolve their dependencies against it). When it
// is in none of the folders, the bare sonames are tried, which lets the
// system loader's cache find it.
func openLibrary(search searchPath, spec libSpec, preferDir string) (*library, error) {
	if p, ok := locate(search, spec, preferDir); ok {
		return openFile(spec.role, p)
	}
	var lastErr error
	for _, n := range spec.names {
		h, err := dlopen(n, rtldNow|rtldGlobal)
		if err == nil {
			return &library{role: spec.role, path: n, handle: h}, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("%s not found (tried %s in %d folders and the system loader: %v); set SIMCLR_CUDA_LIBS to the folder holding it",
		spec.role, strings.Join(spec.names, ", "), len(search.dirs), lastErr)
}

// openFile loads the library at path, as openLibrary does.
func openFile(role, path string) (*library, error) {
	h, err := dlopen(path, rtldNow|rtldGlobal)
	if err != nil {
		return nil, fmt.Errorf("load %s: %v (remove it from the search path or point SIMCLR_CUDA_LIBS at a working copy)", path, err)
	}
	return &library{role: role, path: path, handle: h}, nil
}

// preloadSiblings loads every file of names present in dir, ignoring the
// ones absent; a present file that fails to load is an error.
func preloadSiblings(dir string, names []string) error {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if _, err := dlopen(p, rtldNow|rtldGlobal); err != nil {
			return fmt.Errorf("load %s: %v", p, err)
		}
	}
	return nil
}

// nvrtcBuiltins lists the libnvrtc-builtins files beside an NVRTC library of
// the same major version (NVRTC opens them by a versioned soname at compile
// time).
func nvrtcBuiltins(nvrtcPath string) []string {
	dir := filepath.Dir(nvrtcPath)
	base := filepath.Base(nvrtcPath) // libnvrtc.so.12 or libnvrtc.so.11.2
	major, _, _ := strings.Cut(strings.TrimPrefix(base, "libnvrtc.so."), ".")
	m, _ := filepath.Glob(filepath.Join(dir, "libnvrtc-builtins.so."+major+"*"))
	sort.Slice(m, func(i, j int) bool { return versionLess(m[j], m[i]) })
	names := make([]string, len(m))
	for i, p := range m {
		names[i] = filepath.Base(p)
	}
	return names
}

func (l *library) sym(name string) (uintptr, error) {
	p, err := dlsym(l.handle, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%s: symbol %s missing (library too old?)", l.path, name)
	}
	return p, nil
}

// bind resolves each named symbol into the uintptr it points at. A symbol
// that l lacks is looked up in fallbacks, in order (cuDNN 9's shim
// libcudnn.so.9 forwards the legacy API to libcudnn_ops and libcudnn_cnn;
// should a build of the shim not export one of them, the sub-library
// that defines it still serves); the error names l.
func (l *library) bind(syms map[string]*uintptr, fallbacks ...*library) error {
	for name, dst := range syms {
		p, err := l.sym(name)
		for _, f := range fallbacks {
			if err == nil {
				break
			}
			if q, ferr := f.sym(name); ferr == nil {
				p, err = q, nil
			}
		}
		if err != nil {
			return err
		}
		*dst = p
	}
	return nil
}

// openSiblings opens (or, when already loaded, takes a new reference to)
// every file of names present in dir and returns them in the order of
// names, for symbol lookups; absent or unloadable files are left out.
func openSiblings(dir string, names []string) []*library {
	var out []*library
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		h, err := dlopen(p, rtldNow|rtldGlobal)
		if err != nil {
			continue
		}
		out = append(out, &library{role: n, path: p, handle: h})
	}
	return out
}
