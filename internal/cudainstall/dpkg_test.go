package cudainstall

import (
	"os"
	"path/filepath"
	"testing"
)

func TestListNames(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "libnccl2.list")
	if err := os.WriteFile(list, []byte("/.\n/usr/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		list, path string
		want       bool
	}{
		{list, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", true},
		{list, "/usr/lib/x86_64-linux-gnu/libnccl.so.2", true},   // the soname, a link the list does not name
		{list, "/usr/lib/x86_64-linux-gnu/libnccl.so.22", false}, // another name, not a version of it
		{list, "/usr/lib/libnccl.so.2", false},
		{filepath.Join(dir, "missing.list"), "/usr/lib/x86_64-linux-gnu/libnccl.so.2", false},
	} {
		if got := ListNames(tc.list, tc.path); got != tc.want {
			t.Errorf("ListNames(%s, %s) = %v, want %v", filepath.Base(tc.list), tc.path, got, tc.want)
		}
	}
}
