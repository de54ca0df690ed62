//go:build linux

package collective

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Layouts of a GPU machine, as fake files.
const (
	site    = "opt/torch/.venv/lib/python3.12/site-packages"
	wheel   = site + "/nvidia/nccl/lib"
	site2   = "opt/other/.venv/lib/python3.11/site-packages"
	wheel2  = site2 + "/nvidia/nccl/lib"
	sysLib  = "usr/lib/x86_64-linux-gnu"
	tarball = "opt/nccl_2.21.5-1+cuda12.4_x86_64/lib"
)

// ncclFakeTree writes files (relative paths; "PATH=TEXT" gives the
// content) under a temporary root.
func ncclFakeTree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		name, text, _ := strings.Cut(f, "=")
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if text == "" {
			text = "not an ELF file"
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, `\n`, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func ncclWheel(site, major string) []string {
	return []string{site + "/nvidia/nccl/lib/libnccl.so.2", site + "/nvidia_nccl_cu" + major + "-2.27.7.dist-info/RECORD"}
}

// debianNCCL is the libnccl2 package of CUDA version cuda, its file list
// naming the versioned file libnccl.so.2 links to, beside another package.
func debianNCCL(cuda string) []string {
	return []string{
		sysLib + "/libnccl.so.2",
		"var/lib/dpkg/info/libnccl2.list=/.\\n/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5\\n",
		"var/lib/dpkg/status=Package: libcudnn9-cuda-12\\nVersion: 9.1.0.70-1\\n\\nPackage: libnccl2\\nStatus: install ok installed\\nVersion: 2.21.5-1+cuda" + cuda + "\\n\\n",
	}
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// chooseNCCL on fake trees: the NCCL of the CUDA backend's major first,
// never one recorded for another major.
func TestChooseNCCLMatchesCUDAMajor(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		dirs     []string // search folders, relative, in order
		pinned   string   // SIMCLR_NCCL_LIB, relative
		major    int      // the CUDA set's major
		want     []string // the order tried (relative; "libnccl.so.2" stays bare)
		skipped  []string // substrings of the skipped copies
		errHas   []string
		wantHows []string // how each found copy's major was learnt, in found order
	}{
		{
			name: "the wheel of the set's major before an earlier folder's of another", major: 13,
			files: concat(ncclWheel(site, "12"), ncclWheel(site2, "13")),
			dirs:  []string{wheel, wheel2},
			want:  []string{wheel2 + "/libnccl.so.2"}, skipped: []string{wheel + "/libnccl.so.2 (CUDA 12, its wheel nvidia_nccl_cu12"},
			wantHows: []string{"its wheel nvidia_nccl_cu12-2.27.7.dist-info", "its wheel nvidia_nccl_cu13-2.27.7.dist-info"},
		},
		{
			name: "a CUDA 12 set takes the CUDA 12 wheel", major: 12,
			files: concat(ncclWheel(site, "12"), ncclWheel(site2, "13")),
			dirs:  []string{wheel, wheel2},
			want:  []string{wheel + "/libnccl.so.2"}, skipped: []string{"CUDA 13"},
		},
		{
			name: "the Debian package's version gives the major", major: 12,
			files: concat(debianNCCL("12.4"), ncclWheel(site, "13")),
			dirs:  []string{wheel, sysLib},
			want:  []string{sysLib + "/libnccl.so.2"}, skipped: []string{"CUDA 13"},
			wantHows: []string{"its wheel nvidia_nccl_cu13-2.27.7.dist-info", "its Debian package libnccl2 2.21.5-1+cuda12.4"},
		},
		{
			name: "NVIDIA's archive folder names the major", major: 12,
			files: concat([]string{tarball + "/libnccl.so.2"}, ncclWheel(site, "13")),
			dirs:  []string{wheel, tarball},
			want:  []string{tarball + "/libnccl.so.2"}, skipped: []string{"CUDA 13"},
			wantHows: []string{"its wheel nvidia_nccl_cu13-2.27.7.dist-info", "its folder's name"},
		},
		{
			name: "a copy of unknown major after the matching ones", major: 13,
			files:    concat([]string{"a/libnccl.so.2"}, ncclWheel(site, "13")),
			dirs:     []string{"a", wheel},
			want:     []string{wheel + "/libnccl.so.2", "a/libnccl.so.2"},
			wantHows: []string{"", "its wheel nvidia_nccl_cu13-2.27.7.dist-info"},
		},
		{
			name: "two wheels' metadata in one site: the major is unknown", major: 13,
			files:    concat(ncclWheel(site, "12"), []string{site + "/nvidia_nccl_cu13-2.27.7.dist-info/RECORD"}),
			dirs:     []string{wheel},
			want:     []string{wheel + "/libnccl.so.2"},
			wantHows: []string{""},
		},
		{
			name: "the backend's major unknown: every copy in the folders' order", major: 0,
			files: concat(ncclWheel(site, "12"), ncclWheel(site2, "13")),
			dirs:  []string{wheel, wheel2},
			want:  []string{wheel + "/libnccl.so.2", wheel2 + "/libnccl.so.2"},
		},
		{
			name: "no copy in the folders: the system loader's", major: 13,
			dirs: []string{"empty"}, files: []string{"empty/libcublas.so.13"},
			want: []string{"libnccl.so.2"},
		},
		{
			name: "only copies of another major: an error, not the system loader", major: 13,
			files:  concat(ncclWheel(site, "12"), debianNCCL("12.9")),
			dirs:   []string{wheel, sysLib},
			errHas: []string{"NCCL for CUDA 13 not found", wheel + "/libnccl.so.2 (CUDA 12", sysLib + "/libnccl.so.2 (CUDA 12", "nvidia-nccl-cu13", "SIMCLR_NCCL_LIB"},
		},
		{
			name: "SIMCLR_NCCL_LIB alone, whatever the folders hold", major: 13,
			files:  concat([]string{"pin/libnccl.so.2"}, ncclWheel(site, "13")),
			dirs:   []string{wheel},
			pinned: "pin/libnccl.so.2",
			want:   []string{"pin/libnccl.so.2"},
		},
		{
			name: "SIMCLR_NCCL_LIB of another major is refused", major: 13,
			files:  ncclWheel(site, "12"),
			pinned: wheel + "/libnccl.so.2",
			errHas: []string{"SIMCLR_NCCL_LIB=", "NCCL for CUDA 12", "CUDA libraries loaded are CUDA 13", "nvidia-nccl-cu13"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := ncclFakeTree(t, tc.files...)
			j := func(p string) string {
				if p == "libnccl.so.2" {
					return p
				}
				return filepath.Join(root, p)
			}
			s := ncclSearch{root: root}
			for _, d := range tc.dirs {
				s.dirs = append(s.dirs, j(d))
			}
			if tc.pinned != "" {
				s.pinned = j(tc.pinned)
			}
			found := findNCCL(s)
			if tc.wantHows != nil {
				var hows []string
				for _, c := range found {
					hows = append(hows, c.how)
				}
				if strings.Join(hows, "|") != strings.Join(tc.wantHows, "|") {
					t.Errorf("majors learnt from %q, want %q", hows, tc.wantHows)
				}
			}
			order, skipped, err := chooseNCCL(found, tc.major)
			if len(tc.errHas) > 0 {
				if err == nil {
					t.Fatalf("chose %v, want an error", order)
				}
				for _, want := range tc.errHas {
					if !strings.Contains(err.Error(), strings.ReplaceAll(want, site, j(site))) && !strings.Contains(err.Error(), want) {
						t.Errorf("error lacks %q:\n%v", want, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, p := range tc.want {
				want = append(want, j(p))
			}
			if strings.Join(order, "\n") != strings.Join(want, "\n") {
				t.Errorf("tries\n  %s\nwant\n  %s", strings.Join(order, "\n  "), strings.Join(want, "\n  "))
			}
			if len(skipped) != len(tc.skipped) {
				t.Errorf("skipped %q, want %d matching %q", skipped, len(tc.skipped), tc.skipped)
			}
			for i, s := range tc.skipped {
				if i < len(skipped) && !strings.Contains(skipped[i], strings.ReplaceAll(s, wheel, j(wheel))) {
					t.Errorf("skipped[%d] = %q, want it to contain %q", i, skipped[i], s)
				}
			}
		})
	}
}
