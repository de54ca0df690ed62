package cudainstall

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWheelMajor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		distInfos []string
		lib       string // relative to site-packages
		pkg       string
		want      int
	}{
		{"one wheel", []string{"nvidia_nccl_cu12-2.21.5.dist-info"}, "nvidia/nccl/lib/libnccl.so.2", "nccl", 12},
		{"another library's wheel", []string{"nvidia_cudnn_cu13-9.19.0.dist-info"}, "nvidia/nccl/lib/libnccl.so.2", "nccl", 0},
		{"two majors: unknown", []string{"nvidia_cudnn_cu12-9.1.dist-info", "nvidia_cudnn_cu13-9.19.dist-info"}, "nvidia/cudnn/lib/libcudnn.so.9", "cudnn", 0},
		{"not in a wheel's folder", []string{"nvidia_cudnn_cu13-9.19.dist-info"}, "lib/libcudnn.so.9", "cudnn", 0},
		{"no metadata", nil, "nvidia/cudnn/lib/libcudnn.so.9", "cudnn", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := t.TempDir()
			for _, d := range tc.distInfos {
				if err := os.MkdirAll(filepath.Join(site, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			n, why := WheelMajor(filepath.Join(site, tc.lib), tc.pkg)
			if n != tc.want || (n > 0) != (why != "") {
				t.Errorf("WheelMajor = %d, %q; want %d", n, why, tc.want)
			}
		})
	}
}
