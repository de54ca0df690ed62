// Package shared finds the project's test data (../shared/data beside the
// repository checkout, or $SIMCLR_TEST_DATA; see internal/testsupport/testenv) and prepares the derived forms
// tests need (the rebuilt CIFAR-10 binary batches, the unpacked JPEG tree)
// once, in a cache folder reused across test runs.
package shared

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// Dir returns the absolute path of the test-data folder: $SIMCLR_TEST_DATA
// when set (scripts/test.sh points it at a cache it fills in a clone
// without ../shared), else ../shared/data beside the repository checkout.
// A missing folder skips the test, or fails it under CI=true, which
// requires the data.
func Dir(t testing.TB) string {
	t.Helper()
	return testenv.DataDir(t)
}

// File returns the path of a file under the test-data folder, skipping the
// test (failing it under CI=true) if it is absent.
func File(t testing.TB, rel string) string {
	t.Helper()
	return testenv.DataFile(t, rel)
}

// cacheDir is where derived data is kept between test runs.
func cacheDir(t testing.TB) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	d := filepath.Join(base, "simclr-test")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// prepared returns cache/name, creating it with build (into a temporary
// folder renamed into place, so concurrent test binaries never see a half
// written folder) if it does not exist yet.
func prepared(t testing.TB, name string, build func(dir string) error) string {
	t.Helper()
	cache := cacheDir(t)
	final := filepath.Join(cache, name)
	if _, err := os.Stat(final); err == nil {
		return final
	}
	tmp, err := os.MkdirTemp(cache, name+".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := build(tmp); err != nil {
		t.Fatalf("prepare %s: %v", name, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(final); statErr != nil { // not a lost race: a real failure
			t.Fatal(err)
		}
	}
	return final
}

// RebuiltCIFAR10 returns a folder holding cifar-10-batches-bin/ written by
// the shared rebuild.sh (about 10 s the first time).
func RebuiltCIFAR10(t testing.TB) string {
	t.Helper()
	script := File(t, "cifar10/rebuild.sh")
	return prepared(t, "cifar10-rebuild", func(dir string) error {
		cmd := exec.Command("sh", script, dir)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %v\n%s", script, dir, err, out)
		}
		return nil
	})
}

// CIFAR10JPEG returns a folder holding train/CLASS/NNNN.jpg and
// test/CLASS/NNNN.jpg unpacked from the shared cifar10-jpeg.tar.gz.
func CIFAR10JPEG(t testing.TB) string {
	t.Helper()
	archive := File(t, "cifar10/cifar10-jpeg.tar.gz")
	return prepared(t, "cifar10-jpeg", func(dir string) error { return Untar(archive, dir) })
}

// Untar unpacks the regular files and folders of a .tar.gz into dir,
// refusing entries that would land outside it.
func Untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", archive, err)
		}
		name := path.Clean(h.Name)
		if strings.HasPrefix(name, "../") || name == ".." || path.IsAbs(name) {
			return fmt.Errorf("%s: entry %q escapes the destination", archive, h.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			out, err := os.Create(dst)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return fmt.Errorf("%s: %s: %w", archive, h.Name, err)
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
