package datasets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/cifar"
	"github.com/simclr-go/simclr/internal/testsupport/shared"
)

// TestCIFAR10BothForms loads the full CIFAR-10 rebuilt in binary form and
// unpacked in image-folder form: both must hold 5,000/1,000 images per class,
// with the k-th image of a class in one form matching the k-th in the other.
func TestCIFAR10BothForms(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the full CIFAR-10 twice (rebuilt once into a cache)")
	}
	bin, err := Open("cifar10", shared.RebuiltCIFAR10(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	// The JPEG tree unpacks to train/ and test/ at the top: DIR/train/airplane.
	jpg, err := Open("cifar10", shared.CIFAR10JPEG(t), 32)
	if err != nil {
		t.Fatal(err)
	}
	if jpg.Mean != cifar.Mean10 || jpg.Std != cifar.Std10 {
		t.Errorf("folder form statistics %v %v, want the CIFAR-10 ones", jpg.Mean, jpg.Std)
	}
	for _, sp := range []struct {
		name     string
		a, b     []int32
		perClass int
	}{{"train", bin.Train.Labels, jpg.Train.Labels, 5000}, {"test", bin.Test.Labels, jpg.Test.Labels, 1000}} {
		for _, labels := range [][]int32{sp.a, sp.b} {
			counts := make([]int, 10)
			for _, l := range labels {
				counts[l]++
			}
			for c, n := range counts {
				if n != sp.perClass {
					t.Errorf("%s: class %d has %d images, want %d", sp.name, c, n, sp.perClass)
				}
			}
		}
	}
	if strings.Join(bin.Train.Classes, ",") != strings.Join(jpg.Train.Classes, ",") {
		t.Fatalf("class names differ: %v vs %v", bin.Train.Classes, jpg.Train.Classes)
	}
	// The folder form lists class by class in file-name order, which is the
	// official order within a class; rebuild.go decoded the same JPEGs with
	// image/jpeg, so the pixels must be identical byte for byte.
	for _, sp := range []struct {
		name string
		b, j *data.Set
	}{{"train", bin.Train, jpg.Train}, {"test", bin.Test, jpg.Test}} {
		byClass := make([][]int, 10)
		for i, l := range sp.b.Labels {
			byClass[l] = append(byClass[l], i)
		}
		next := make([]int, 10)
		maxDiff, differing := 0, 0
		for i, l := range sp.j.Labels {
			if next[l] >= len(byClass[l]) {
				t.Fatalf("%s: folder form has more images of class %d", sp.name, l)
			}
			bi := byClass[l][next[l]]
			next[l]++
			a, b := sp.b.Image(bi), sp.j.Image(i)
			for k := range a {
				d := int(a[k]) - int(b[k])
				if d < 0 {
					d = -d
				}
				if d > 0 {
					differing++
				}
				if d > maxDiff {
					maxDiff = d
				}
			}
		}
		t.Logf("%s: %d of %d pixel bytes differ, by at most %d", sp.name, differing, len(sp.b.Pix), maxDiff)
		if differing != 0 {
			t.Errorf("%s: %d pixel bytes of the two forms differ (by up to %d)", sp.name, differing, maxDiff)
		}
	}
}

// A missing data set is one short line naming the fetch command; the
// --from hint for a local CIFAR-10 mirror appears only where
// $SIMCLR_DATA_MIRROR names a folder that holds the archive.
func TestMissingData(t *testing.T) {
	dir := t.TempDir()
	mirror := t.TempDir()
	if err := os.WriteFile(filepath.Join(mirror, "cifar10-jpeg.tar.gz"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name   string
		mirror string // $SIMCLR_DATA_MIRROR
		want   string
	}{
		{"cifar10", "", "cifar10: data set not found in " + dir + "; fetch it with: scripts/fetch_data.sh cifar10 --dir " + dir},
		{"cifar10", mirror, "cifar10: data set not found in " + dir + "; fetch it with: scripts/fetch_data.sh cifar10 --dir " + dir + " --from " + mirror},
		{"cifar10", empty, "cifar10: data set not found in " + dir + "; fetch it with: scripts/fetch_data.sh cifar10 --dir " + dir},
		{"cifar100", mirror, "cifar100: data set not found in " + dir + "; fetch it with: scripts/fetch_data.sh cifar100 --dir " + dir},
		{"cifar100:coarse", "", "cifar100: data set not found in " + dir + "; fetch it with: scripts/fetch_data.sh cifar100 --dir " + dir},
		{"svhn", "", "svhn: data set not found in " + dir + "; fetch it with: scripts/fetch_data.sh svhn --dir " + dir},
		{"svhn:extra", "", "svhn: data set not found in " + dir + "; fetch it with: scripts/fetch_data.sh svhn svhn-extra --dir " + dir},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/mirror=%q", tc.name, tc.mirror), func(t *testing.T) {
			t.Setenv(EnvMirror, tc.mirror)
			_, err := Open(tc.name, dir, 0)
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("error %v does not wrap ErrNotFound", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%q\nwant\n%q", err, tc.want)
			}
		})
	}
	_, err := Open("folder:nope", dir, 0)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), filepath.Join(dir, "nope")) {
		t.Errorf("folder:nope: error %v, want ErrNotFound naming %s", err, filepath.Join(dir, "nope"))
	}
}

func TestBadNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"mnist", "unknown dataset"},
		{"cifar10:coarse", "takes no option"},
		{"cifar100:fine2", "only cifar100 option"},
		{"svhn:x", "only svhn option"},
		{"folder:", "say which folder"},
	} {
		_, err := Open(tc.name, t.TempDir(), 0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q): error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := Open("cifar10", t.TempDir(), 64); err == nil || !strings.Contains(err.Error(), "32x32") {
		t.Errorf("size 64 for cifar10: error %v", err)
	}
}

// TestResolution checks each accepted CIFAR layout resolves to data: the
// binary batches (linked from the shared prefix) at DIR, DIR/cifar10 and
// DIR/cifar-10-batches-bin.
func TestResolution(t *testing.T) {
	prefix := shared.File(t, "cifar10/test_batch.prefix1017.bin")
	for _, sub := range []string{"cifar-10-batches-bin", ".", "cifar10", "cifar10/cifar-10-batches-bin"} {
		t.Run(sub, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, sub)
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
				if err := os.Symlink(prefix, filepath.Join(bin, name)); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Open("cifar10", dir, 32)
			if err != nil {
				t.Fatal(err)
			}
			if s.Train.Len() != 5*1017 || s.Test.Len() != 1017 {
				t.Errorf("got %d/%d images, want %d/1017", s.Train.Len(), s.Test.Len(), 5*1017)
			}
		})
	}
}

// BenchmarkOpenCIFAR10 measures loading the full CIFAR-10 in each form:
// binary batches (rebuilt) and the image-folder JPEG tree (60,000 decodes).
func BenchmarkOpenCIFAR10(b *testing.B) {
	for _, form := range []struct {
		name string
		dir  func(testing.TB) string
	}{{"binary", shared.RebuiltCIFAR10}, {"jpeg-folder", shared.CIFAR10JPEG}} {
		b.Run(form.name, func(b *testing.B) {
			dir := form.dir(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Open("cifar10", dir, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(60000*b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
