//go:build linux

package collective

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/simclr-go/simclr/internal/cudainstall"
)

// NCCL of the CUDA backend's major.
//
// libnccl.so.2's soname carries NCCL's major, not CUDA's, and each build of
// NCCL is made for one CUDA major (the wheels say so in their name:
// nvidia-nccl-cu12, nvidia-nccl-cu13). Loading the first libnccl.so.2
// found can put an NCCL for CUDA 12 beside the CUDA 13 set the backend
// chose (PyTorch's wheels and a toolkit side by side), so the copies are
// ranked by the CUDA major their installation records: the backend's
// first, then those of unknown major, and copies of another major are
// never loaded.

// ncclCandidate is one libnccl.so.2 found.
type ncclCandidate struct {
	path   string
	major  int    // CUDA major it was built for; 0 when nothing records it
	how    string // how the major was learnt, for messages
	pinned bool   // SIMCLR_NCCL_LIB
}

// ncclSearch is where libnccl.so.2 is looked for: the CUDA backend's
// library folders, SIMCLR_NCCL_LIB, and root, which prefixes the system
// files read (dpkg's records; "" on a real system).
type ncclSearch struct {
	dirs   []string
	pinned string
	root   string
}

// ncclCUDAInPath finds a CUDA major in a folder name: NVIDIA's archives
// (nccl_2.21.5-1+cuda12.4_x86_64), toolkits (cuda-12.8), the CUDA 13
// wheels' folder (nvidia/cu13/lib).
var ncclCUDAInPath = regexp.MustCompile(`(?:^|[/_.+-])cu(?:da)?[-_]?(1[0-9])(?:[^0-9]|$)`)

// ncclDebianVersion is the CUDA major in a Debian libnccl2 version
// (2.21.5-1+cuda12.4).
var ncclDebianVersion = regexp.MustCompile(`\+cuda(1[0-9])(?:[^0-9]|$)`)

// ncclCUDAMajor says which CUDA major the NCCL at path was built for, from
// what its installation records, without loading it: a Python wheel's
// metadata (nvidia_nccl_cu12-*.dist-info beside the nvidia/ folder), the
// version of the Debian package whose file list names it (2.21.5-1+cuda12.4),
// or a major in its folder's name. 0 when none says.
func ncclCUDAMajor(root, path string) (int, string) {
	dir := filepath.Dir(path)
	if n, why := cudainstall.WheelMajor(path, "nccl"); n > 0 {
		return n, why
	}
	if n, pkg := debianNCCLMajor(root, strings.TrimPrefix(path, root)); n > 0 {
		return n, "its Debian package " + pkg
	}
	if m := ncclCUDAInPath.FindStringSubmatch(strings.TrimPrefix(dir, root)); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, "its folder's name"
	}
	return 0, ""
}

// debianNCCLMajor is the CUDA major in the version of the installed
// libnccl2 package when its file list names rel, read from dpkg's records
// under root; 0 otherwise.
func debianNCCLMajor(root, rel string) (int, string) {
	listed := false
	for _, l := range []string{"libnccl2.list", "libnccl2:amd64.list", "libnccl2:arm64.list"} {
		if cudainstall.ListNames(filepath.Join(root, "/var/lib/dpkg/info", l), rel) {
			listed = true
			break
		}
	}
	if !listed {
		return 0, ""
	}
	f, err := os.Open(filepath.Join(root, "/var/lib/dpkg/status"))
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	inPkg := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			inPkg = false
		case strings.HasPrefix(line, "Package: "):
			inPkg = strings.TrimSpace(strings.TrimPrefix(line, "Package: ")) == "libnccl2"
		case inPkg && strings.HasPrefix(line, "Version: "):
			v := strings.TrimSpace(strings.TrimPrefix(line, "Version: "))
			if m := ncclDebianVersion.FindStringSubmatch(v); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n, "libnccl2 " + v
			}
			return 0, ""
		}
	}
	return 0, ""
}

// findNCCL lists the copies of libnccl.so.2 of s: SIMCLR_NCCL_LIB first,
// then one per folder in the folders' order, each with the CUDA major its
// installation records.
func findNCCL(s ncclSearch) []ncclCandidate {
	var out []ncclCandidate
	seen := map[string]bool{}
	add := func(p string, pinned bool) {
		if seen[p] {
			return
		}
		seen[p] = true
		c := ncclCandidate{path: p, pinned: pinned}
		c.major, c.how = ncclCUDAMajor(s.root, p)
		out = append(out, c)
	}
	if s.pinned != "" {
		add(s.pinned, true)
	}
	for _, d := range s.dirs {
		if p := filepath.Join(d, "libnccl.so.2"); fileExists(p) {
			add(p, false)
		}
	}
	return out
}

// chooseNCCL orders the copies to try for a CUDA set of major setMajor (0:
// unknown, every copy in the found order): SIMCLR_NCCL_LIB alone when set
// (a copy recorded for another major is an error, never loaded), else the
// copies of setMajor, then those of unknown major, and last the system
// loader's libnccl.so.2 when no folder holds a copy at all. Copies of
// another major are left out and named in skipped; when nothing else is
// left, the error lists them and what to install.
func chooseNCCL(cands []ncclCandidate, setMajor int) (order []string, skipped []string, err error) {
	for _, c := range cands {
		if c.pinned {
			if setMajor > 0 && c.major > 0 && c.major != setMajor {
				return nil, nil, fmt.Errorf("SIMCLR_NCCL_LIB=%s is an NCCL for CUDA %d (%s), but the CUDA libraries loaded are CUDA %d: point it at an NCCL for CUDA %d (%s) or unset it",
					c.path, c.major, c.how, setMajor, setMajor, ncclInstallHint(setMajor))
			}
			return []string{c.path}, nil, nil
		}
	}
	var unknown []string
	for _, c := range cands {
		switch {
		case setMajor == 0 || c.major == setMajor:
			order = append(order, c.path)
		case c.major == 0:
			unknown = append(unknown, c.path)
		default:
			skipped = append(skipped, fmt.Sprintf("%s (CUDA %d, %s)", c.path, c.major, c.how))
		}
	}
	order = append(order, unknown...)
	if len(order) > 0 {
		return order, skipped, nil
	}
	if len(skipped) > 0 {
		// The system loader would find one of these same copies.
		return nil, skipped, fmt.Errorf("NCCL for CUDA %d not found, only NCCL for other CUDA majors, which is not loaded beside the CUDA %d libraries:\n  %s\ninstall NCCL for CUDA %d (%s), or set SIMCLR_NCCL_LIB to its libnccl.so.2",
			setMajor, setMajor, strings.Join(skipped, "\n  "), setMajor, ncclInstallHint(setMajor))
	}
	return []string{"libnccl.so.2"}, nil, nil
}

// ncclInstallHint names NCCL's packages for CUDA major m.
func ncclInstallHint(m int) string {
	return fmt.Sprintf("pip install nvidia-nccl-cu%d, or the libnccl2 package built for CUDA %d", m, m)
}
