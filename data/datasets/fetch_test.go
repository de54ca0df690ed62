package datasets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/data/cifar"
	"github.com/simclr-go/simclr/internal/testsupport/shared"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// script returns the path of scripts/fetch_data.sh at the repository root.
func script(t *testing.T) string {
	return filepath.Join(testenv.ModuleRoot(t), "scripts", "fetch_data.sh")
}

// runFetch runs the script and returns its combined output and error.
func runFetch(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to test scripts/fetch_data.sh")
	}
	out, err := exec.Command("bash", append([]string{script(t)}, args...)...).CombinedOutput()
	return string(out), err
}

// tarGz builds a .tar.gz of the given files.
func tarGz(t *testing.T, files map[string][]byte) []byte {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(content)
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

func TestFetchBadChecksum(t *testing.T) {
	for _, tc := range []struct {
		name, set, file string
		content         []byte
	}{
		{"cifar10", "cifar10", "cifar-10-binary.tar.gz", tarGz(t, map[string][]byte{"cifar-10-batches-bin/test_batch.bin": {1}})},
		{"cifar100", "cifar100", "cifar-100-binary.tar.gz", []byte("tiny fake archive")},
		{"svhn", "svhn", "train_32x32.mat", nil}, // the shared sample is not the official file
	} {
		t.Run(tc.name, func(t *testing.T) {
			mirror, dir := t.TempDir(), t.TempDir()
			content := tc.content
			if content == nil {
				var err error
				if content, err = os.ReadFile(shared.File(t, "svhn/sample_32x32.mat")); err != nil {
					t.Fatal(err)
				}
			}
			bad := filepath.Join(mirror, tc.file)
			if err := os.WriteFile(bad, content, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := runFetch(t, tc.set, "--dir", dir, "--from", mirror)
			if err == nil {
				t.Fatalf("succeeded on a bad archive:\n%s", out)
			}
			if !strings.Contains(out, "checksum mismatch for "+bad) || !strings.Contains(out, "want ") {
				t.Errorf("message does not name the checksum mismatch of %s:\n%s", bad, out)
			}
			if _, err := os.Stat(bad); err != nil {
				t.Errorf("the mirror's file was removed: %v", err)
			}
			if _, err := Open(tc.name, dir, 0); err == nil {
				t.Error("the bad archive was unpacked anyway")
			}
		})
	}
}

func TestFetchUnpackedMirror(t *testing.T) {
	mirror, dir := t.TempDir(), t.TempDir()
	bin := filepath.Join(mirror, "cifar-10-batches-bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A fake batch of 3 records, labels 7, 8, 9.
	var rec []byte
	for i := 0; i < 3; i++ {
		rec = append(rec, byte(7+i))
		rec = append(rec, bytes.Repeat([]byte{byte(i)}, cifar.ImageBytes)...)
	}
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		if err := os.WriteFile(filepath.Join(bin, name), rec, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runFetch(t, "cifar10", "--dir", dir, "--from", mirror)
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	s, err := Open("cifar10", dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 15 || s.Test.Len() != 3 || s.Test.Labels[2] != 9 {
		t.Errorf("got %d/%d images, test labels %v", s.Train.Len(), s.Test.Len(), s.Test.Labels)
	}
	// A second run finds the data in place.
	if out, err := runFetch(t, "cifar10", "--dir", dir, "--from", mirror); err != nil || !strings.Contains(out, "already there") {
		t.Errorf("second run: %v\n%s", err, out)
	}
}

func TestFetchJPEGMirror(t *testing.T) {
	mirror, dir := t.TempDir(), t.TempDir()
	files := map[string][]byte{}
	for c, class := range cifar.Classes10() {
		for _, split := range []string{"train", "test"} {
			img := image.NewRGBA(image.Rect(0, 0, 32, 32))
			for i := range img.Pix {
				img.Pix[i] = uint8(c * 20)
			}
			img.Set(0, 0, color.RGBA{255, 0, 0, 255})
			var b bytes.Buffer
			if err := jpeg.Encode(&b, img, nil); err != nil {
				t.Fatal(err)
			}
			files[fmt.Sprintf("%s/%s/0000.jpg", split, class)] = b.Bytes()
		}
	}
	if err := os.WriteFile(filepath.Join(mirror, "cifar10-jpeg.tar.gz"), tarGz(t, files), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runFetch(t, "cifar10", "--dir", dir, "--from", mirror)
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "cifar10-jpeg", "train", "airplane", "0000.jpg")); err != nil {
		t.Fatalf("not unpacked to DIR/cifar10-jpeg: %v\n%s", err, out)
	}
	s, err := Open("cifar10", dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 10 || s.Test.Len() != 10 || s.Train.Labels[9] != 9 || s.Train.Classes[9] != "truck" {
		t.Errorf("got %d/%d images, labels %v", s.Train.Len(), s.Test.Len(), s.Train.Labels)
	}
}

func TestFetchUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "name at least one dataset"},
		{[]string{"mnist"}, "unknown argument 'mnist'"},
		{[]string{"cifar10", "--from", "/nonexistent/mirror"}, "--from /nonexistent/mirror: no such folder"},
		{[]string{"cifar100", "--dir", ""}, "--dir is empty"},
		{[]string{"cifar100", "--dir", t.TempDir(), "--from", t.TempDir()}, "cifar-100-binary.tar.gz not found"},
	} {
		out, err := runFetch(t, tc.args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("fetch_data.sh %v: %v, output lacks %q:\n%s", tc.args, err, tc.want, out)
		}
	}
	if out, err := runFetch(t, "--help"); err != nil || !strings.Contains(out, "Usage: scripts/fetch_data.sh") {
		t.Errorf("--help: %v\n%s", err, out)
	}
}
