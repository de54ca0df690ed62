package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIsFileIsDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	for _, tc := range []struct {
		path          string
		isFile, isDir bool
	}{
		{file, true, false},
		{link, true, false},
		{dir, false, true},
		{filepath.Join(dir, "missing"), false, false},
	} {
		if got := IsFile(tc.path); got != tc.isFile {
			t.Errorf("IsFile(%s) = %v, want %v", tc.path, got, tc.isFile)
		}
		if got := IsDir(tc.path); got != tc.isDir {
			t.Errorf("IsDir(%s) = %v, want %v", tc.path, got, tc.isDir)
		}
	}
}
