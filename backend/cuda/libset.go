package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/simclr-go/simclr/internal/cudainstall"
)

// One CUDA major version for cuBLAS, cuBLASLt, NVRTC and cuDNN.
//
// cuDNN is built for one CUDA major (the Python wheels say so in their
// name: nvidia-cudnn-cu12, nvidia-cudnn-cu13) and opens cuBLASLt and NVRTC
// of that major by soname at run time, for its legacy convolution API and
// its runtime-compiled engines. Taking the newest soname of each library on
// its own can load a cuDNN for CUDA 12 (as PyTorch's cu12 wheels bring)
// beside cuBLAS and NVRTC 13, and cuDNN then fails inside a convolution, or
// finds a second cuBLASLt through the system loader. So the libraries are
// chosen as one set of one major: the driver's (the newest it supports,
// cuDriverGetVersion), else the newest complete set below it. Libraries
// newer than the driver cannot run at all (CUDA 13 needs driver 580).

// setRoles are the libraries that must share a CUDA major, in load order.
var setRoles = []libSpec{specNvrtc, specCublasLt, specCublas, specCudnn}

// candidate is one copy of a library found in a folder of the search.
type candidate struct {
	path   string
	major  int    // CUDA major; 0 when unknown (a cuDNN without a record of it)
	how    string // how a cuDNN's major was learnt, for the report
	pinned bool   // in a SIMCLR_CUDA_LIBS folder
}

// cudaSet is the chosen set, before loading, with the reason.
type cudaSet struct {
	major       int               // the CUDA major of the set; 0 when nothing says
	driverMajor int               // the newest CUDA major the driver supports; 0 unknown
	paths       map[string]string // role -> file; absent: ask the system loader
	why         string
}

// sonameMajor is the CUDA major in a versioned soname: 13 for
// libcublas.so.13, 11 for libnvrtc.so.11.2; 0 when there is none.
func sonameMajor(name string) int {
	_, v, ok := strings.Cut(filepath.Base(name), ".so.")
	if !ok {
		return 0
	}
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// findCandidates lists every copy of spec in the search folders: the
// pinned folders first, folder by folder (newest soname first within one),
// then the others by soname, newest first, and by folder among copies of
// one soname, the order locate follows.
func findCandidates(s searchPath, spec libSpec, root string) []candidate {
	var out []candidate
	add := func(p string, pinned bool) {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return
		}
		c := candidate{path: p, major: sonameMajor(p), pinned: pinned}
		if spec.role == specCudnn.role {
			// libcudnn.so.9 is cuDNN's own major, not CUDA's.
			c.major, c.how = cudnnCUDAMajor(root, p)
		}
		out = append(out, c)
	}
	for _, d := range s.dirs[:s.pinned] {
		for _, n := range spec.names {
			add(filepath.Join(d, n), true)
		}
	}
	for _, n := range spec.names {
		for _, d := range s.dirs[s.pinned:] {
			add(filepath.Join(d, n), false)
		}
	}
	return out
}

// cudaInPath finds a CUDA major in a folder name: NVIDIA's archives
// (cudnn-linux-x86_64-9.5.1.17_cuda12-archive), toolkits (cuda-12.8), the
// CUDA 13 wheels' folder (nvidia/cu13/lib), Debian's packages
// (libcudnn9-cuda-12).
var cudaInPath = regexp.MustCompile(`(?:^|[/_.-])cu(?:da)?[-_]?(1[0-9])(?:[^0-9]|$)`)

// cudnnCUDAMajor says which CUDA major the cuDNN at path was built for, from
// what its installation records, without loading it (two copies of cuDNN
// in one process would share sonames): a Python wheel's metadata
// (nvidia_cudnn_cu12-*.dist-info beside the nvidia/ folder), a Debian
// package's file list (libcudnn9-cuda-12), or a major in the folder's
// name. 0 when none says; loadLibraries then asks the loaded cuDNN
// (cudnnGetCudartVersion). root prefixes the system folders (tests).
func cudnnCUDAMajor(root, path string) (int, string) {
	dir := filepath.Dir(path)
	if n, why := cudainstall.WheelMajor(path, "cudnn"); n > 0 {
		return n, why
	}
	rel := strings.TrimPrefix(path, root)
	lists, _ := filepath.Glob(dpkgCudnnLists(root))
	for _, l := range lists {
		pkg := strings.TrimSuffix(filepath.Base(l), ".list")
		pkg, _, _ = strings.Cut(pkg, ":") // libcudnn9-cuda-12:amd64
		n, err := strconv.Atoi(strings.TrimPrefix(pkg, "libcudnn9-cuda-"))
		if err != nil {
			continue
		}
		if cudainstall.ListNames(l, rel) {
			return n, "its Debian package " + pkg
		}
	}
	if m := cudaInPath.FindStringSubmatch(strings.TrimPrefix(dir, root)); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, "its folder's name"
	}
	return 0, ""
}

// dpkgCudnnLists is the pattern of the Debian file lists of cuDNN 9's
// packages under root ("" on a real system: the pattern is absolute, not
// relative to the working folder).
func dpkgCudnnLists(root string) string {
	return filepath.Join(root, "/var/lib/dpkg/info/libcudnn9-cuda-*.list")
}

// chooseSet picks the file of each library of setRoles so that all four
// share one CUDA major; see the comment at the top of this file for the
// order of preference. SIMCLR_CUDA_LIBS (the pinned folders) is a user's
// choice: the first library of known major found there fixes the set's
// major, and its copies come before others of that major. A library found
// in no folder is left to the system loader (by the set's soname). The
// error, when no major gives a whole set, lists what was found and what to
// install.
func chooseSet(s searchPath, root string, driverMajor int) (cudaSet, error) {
	found := map[string][]candidate{}
	majors := map[int]bool{}
	for _, spec := range setRoles {
		found[spec.role] = findCandidates(s, spec, root)
		for _, c := range found[spec.role] {
			if c.major > 0 {
				majors[c.major] = true
			}
		}
	}
	set := cudaSet{driverMajor: driverMajor, paths: map[string]string{}}

	// The majors to try, most preferred first.
	var order []int
	pinnedMajor, pinnedBy := 0, ""
	for _, role := range []string{specCublas.role, specNvrtc.role, specCudnn.role, specCublasLt.role} {
		for _, c := range found[role] {
			if c.pinned && c.major > 0 && pinnedMajor == 0 {
				pinnedMajor, pinnedBy = c.major, c.path
			}
		}
	}
	var all []int
	for m := range majors {
		all = append(all, m)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(all)))
	var tooNew []int
	switch {
	case pinnedMajor > 0:
		order = []int{pinnedMajor}
	default:
		for _, m := range all {
			if driverMajor > 0 && m > driverMajor {
				tooNew = append(tooNew, m)
				continue
			}
			order = append(order, m)
		}
	}
	if len(order) == 0 && len(all) == 0 {
		// Nothing in any folder: the system loader, preferring the
		// driver's major.
		set.major = driverMajor
		set.why = "no library in the folders searched: the system loader's"
		if driverMajor > 0 {
			set.why += fmt.Sprintf(", CUDA %d first (the driver's)", driverMajor)
		}
		return set, nil
	}

	var missing []string // per major tried, what it lacked
	for _, m := range order {
		paths, lack := pickMajor(found, m)
		if lack != "" {
			missing = append(missing, fmt.Sprintf("CUDA %d lacks %s", m, lack))
			continue
		}
		set.major, set.paths = m, paths
		set.why = setReason(m, driverMajor, pinnedBy, missing, tooNew, found, paths)
		return set, nil
	}

	var sb strings.Builder
	sb.WriteString("cuda: no consistent set of CUDA libraries (cuBLAS, cuBLASLt, NVRTC and cuDNN of one CUDA major: cuDNN loads cuBLASLt and NVRTC of its own)")
	if pinnedBy != "" {
		fmt.Fprintf(&sb, "; SIMCLR_CUDA_LIBS fixes CUDA %d (%s)", pinnedMajor, pinnedBy)
	}
	if driverMajor > 0 {
		fmt.Fprintf(&sb, "; the driver supports CUDA %d at most", driverMajor)
	}
	if len(missing) > 0 {
		fmt.Fprintf(&sb, "; %s", strings.Join(missing, "; "))
	}
	if len(tooNew) > 0 {
		fmt.Fprintf(&sb, "; CUDA %s found too, newer than the driver supports (update the driver: CUDA 13 needs 580 or newer)", joinInts(tooNew))
	}
	sb.WriteString("; found:")
	for _, spec := range setRoles {
		for _, c := range found[spec.role] {
			fmt.Fprintf(&sb, "\n  %-9s %s", spec.role, describeCandidate(c))
		}
	}
	want := driverMajor
	if pinnedMajor > 0 {
		want = pinnedMajor
	}
	fmt.Fprintf(&sb, "\ninstall the missing libraries of one major (%s), or point SIMCLR_CUDA_LIBS at a folder holding a whole set", installHint(want, "nvrtc", "cublas", "cudnn"))
	return set, fmt.Errorf("%s", sb.String())
}

// pickMajor takes, for each role, the first copy of major m, pinned
// copies first (a cuDNN of unknown major after the known ones of its
// pinned or unpinned group); cuBLASLt from cuBLAS's folder where that has
// one. lack names the roles with copies in the folders but none of major m.
func pickMajor(found map[string][]candidate, m int) (map[string]string, string) {
	paths := map[string]string{}
	var lack []string
	for _, spec := range setRoles {
		role := spec.role
		if len(found[role]) == 0 {
			continue // the system loader's, by the set's soname
		}
		var passes []func(candidate) bool
		if role == specCublasLt.role {
			// cuBLAS needs the cuBLASLt of its own folder where it is.
			if p, ok := firstOf(found[specCublas.role], func(c candidate) bool { return c.major == m }); ok {
				dir := filepath.Dir(p)
				passes = append(passes, func(c candidate) bool { return c.major == m && filepath.Dir(c.path) == dir })
			}
		}
		for _, pinned := range []bool{true, false} {
			passes = append(passes, func(c candidate) bool { return c.pinned == pinned && c.major == m })
			if role == specCudnn.role {
				passes = append(passes, func(c candidate) bool { return c.pinned == pinned && c.major == 0 })
			}
		}
		ok := false
		for _, pass := range passes {
			if p, found := firstOf(found[role], pass); found {
				paths[role], ok = p, true
				break
			}
		}
		if !ok {
			lack = append(lack, role)
		}
	}
	return paths, strings.Join(lack, ", ")
}

// firstOf is the path of the first of cs that ok accepts.
func firstOf(cs []candidate, ok func(candidate) bool) (string, bool) {
	for _, c := range cs {
		if ok(c) {
			return c.path, true
		}
	}
	return "", false
}

// setReason says why major m was chosen, for `simclr devices`.
func setReason(m, driverMajor int, pinnedBy string, missing []string, tooNew []int, found map[string][]candidate, paths map[string]string) string {
	var why []string
	switch {
	case pinnedBy != "":
		why = append(why, fmt.Sprintf("SIMCLR_CUDA_LIBS holds %s", filepath.Base(pinnedBy)))
	case driverMajor == m:
		why = append(why, fmt.Sprintf("the driver's CUDA %d", driverMajor))
	case driverMajor > 0:
		why = append(why, fmt.Sprintf("the driver supports CUDA %d", driverMajor))
	default:
		why = append(why, "the newest complete set (the driver's version unknown)")
	}
	why = append(why, missing...)
	if len(tooNew) > 0 {
		why = append(why, fmt.Sprintf("CUDA %s too new for this driver (update it: CUDA 13 needs 580 or newer)", joinInts(tooNew)))
	}
	if p, ok := paths[specCudnn.role]; ok {
		for _, c := range found[specCudnn.role] {
			if c.path == p {
				if c.major > 0 {
					why = append(why, fmt.Sprintf("cuDNN built for CUDA %d (%s)", c.major, c.how))
				} else {
					why = append(why, "cuDNN's CUDA major not recorded beside it: checked once loaded")
				}
			}
		}
	}
	var unused []string
	for _, spec := range setRoles {
		for _, c := range found[spec.role] {
			if c.major > 0 && c.major != m {
				unused = append(unused, c.path)
			}
		}
	}
	if len(unused) > 0 {
		why = append(why, fmt.Sprintf("left unused: %s", strings.Join(unused, ", ")))
	}
	return strings.Join(why, "; ")
}

func describeCandidate(c candidate) string {
	switch {
	case c.major == 0:
		return c.path + " (CUDA major not recorded)"
	case c.how != "":
		return fmt.Sprintf("%s (CUDA %d, %s)", c.path, c.major, c.how)
	}
	return fmt.Sprintf("%s (CUDA %d)", c.path, c.major)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// installHint names the pip packages of CUDA major's roles (nvrtc,
// cublas, cudnn): the CUDA 12 wheels carry a -cu12 suffix, CUDA 13's
// cuBLAS and NVRTC none (their version is 13.x; they share the folder
// nvidia/cu13/lib), cuDNN for CUDA 13 is nvidia-cudnn-cu13. For an unknown
// major both are named.
func installHint(major int, roles ...string) string {
	pkgs := func(m int) string {
		var p []string
		for _, r := range roles {
			switch {
			case r == "nvrtc" && m >= 13:
				p = append(p, fmt.Sprintf("'nvidia-cuda-nvrtc~=%d.0'", m))
			case r == "nvrtc":
				p = append(p, fmt.Sprintf("nvidia-cuda-nvrtc-cu%d", m))
			case (r == "cublas" || r == "cublasLt") && m >= 13:
				p = append(p, fmt.Sprintf("'nvidia-cublas~=%d.0'", m))
			case r == "cublas" || r == "cublasLt":
				p = append(p, fmt.Sprintf("nvidia-cublas-cu%d", m))
			case r == "cudnn":
				p = append(p, fmt.Sprintf("nvidia-cudnn-cu%d", m))
			}
		}
		return "pip install " + strings.Join(dedupe(p), " ")
	}
	if major <= 0 {
		return fmt.Sprintf("for CUDA 13: %s; for CUDA 12: %s", pkgs(13), pkgs(12))
	}
	return fmt.Sprintf("for CUDA %d: %s, or the CUDA %d toolkit and cuDNN 9 for CUDA %d", major, pkgs(major), major, major)
}

func dedupe(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// specOfMajor is spec with the sonames of CUDA major m first, for the
// system loader when no folder holds the library.
func specOfMajor(spec libSpec, m int) libSpec {
	if m <= 0 {
		return spec
	}
	var first, rest []string
	for _, n := range spec.names {
		if sonameMajor(n) == m {
			first = append(first, n)
		} else {
			rest = append(rest, n)
		}
	}
	if spec.role == specCudnn.role {
		return spec
	}
	return libSpec{spec.role, append(first, rest...)}
}
