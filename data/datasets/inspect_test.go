package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/shared"
)

func TestInspect(t *testing.T) {
	// SVHN sample as both splits: counts per class follow the placeholder
	// labels (i mod 10)+1, so 1,083 images give 109 of digits 1-3 and 108 of
	// the others; the counts are not the official ones.
	svhnDir := t.TempDir()
	sample := shared.File(t, "svhn/sample_32x32.mat")
	for _, name := range []string{"train_32x32.mat", "test_32x32.mat"} {
		if err := os.Symlink(sample, filepath.Join(svhnDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	r := Inspect("svhn", svhnDir, 0)
	if r.OK || !strings.Contains(r.Problem, "1083 training and 1083 test images, the official svhn has 73257 and 26032") {
		t.Errorf("problem %q", r.Problem)
	}
	for d, n := range r.Train.PerClass {
		want := 108
		if d >= 1 && d <= 3 {
			want = 109
		}
		if n != want {
			t.Errorf("digit %d: %d images, want %d", d, n, want)
		}
	}
	if r.Height != 32 || r.Width != 32 || r.Channels != 3 || len(r.Classes) != 10 {
		t.Errorf("shape %dx%dx%d, %d classes", r.Channels, r.Height, r.Width, len(r.Classes))
	}

	// Missing data: the problem is Open's error.
	if r := Inspect("cifar10", t.TempDir(), 0); r.OK || !strings.Contains(r.Problem, "scripts/fetch_data.sh cifar10") {
		t.Errorf("missing data: %+v", r)
	}

	// A folder data set without classes in its test split.
	root := t.TempDir()
	if r := Inspect("folder:"+root, "", 0); r.OK || !strings.Contains(r.Problem, "train is missing") {
		t.Errorf("empty folder: problem %q", r.Problem)
	}
}

func TestInspectFull(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the full rebuilt CIFAR-10")
	}
	r := Inspect("cifar10", shared.RebuiltCIFAR10(t), 0)
	if !r.OK || r.Problem != "ok" {
		t.Fatalf("problem %q", r.Problem)
	}
	for c := range r.Classes {
		if r.Train.PerClass[c] != 5000 || r.Test.PerClass[c] != 1000 {
			t.Errorf("class %s: %d/%d images", r.Classes[c], r.Train.PerClass[c], r.Test.PerClass[c])
		}
	}
	// The rebuild's measured statistics are within JPEG noise of the
	// standard ones (well inside the 0.02 tolerance).
	for c := 0; c < 3; c++ {
		if d := r.TrainMean[c] - r.Mean[c]; d > 0.002 || d < -0.002 {
			t.Errorf("channel %d: measured mean %v vs standard %v", c, r.TrainMean[c], r.Mean[c])
		}
	}
}

func TestInspectWrongStats(t *testing.T) {
	// A CIFAR-10 layout of ten all-black images a file, one per class: the
	// counts are the first problem; with counts out of the way (a name with
	// no official counts) the black pixels' statistics are.
	dir := t.TempDir()
	bin := filepath.Join(dir, "cifar-10-batches-bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 10*3073)
	for c := 0; c < 10; c++ {
		rec[c*3073] = byte(c)
	}
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		if err := os.WriteFile(filepath.Join(bin, name), rec, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Inspect("cifar10", dir, 0)
	if r.OK || !strings.Contains(r.Problem, "50 training and 10 test images") {
		t.Errorf("problem %q", r.Problem)
	}
	if r.TrainMean != [3]float32{} || r.TrainStd != [3]float32{} {
		t.Errorf("black images measured as mean %v std %v", r.TrainMean, r.TrainStd)
	}
	s, err := Open("cifar10", dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	r2 := &Report{Classes: s.Train.Classes, Height: 32, Width: 32, Mean: s.Mean, Std: s.Std}
	if p := check("cifar10-like", s, r2); !strings.Contains(p, "differ from the standard cifar10-like statistics") {
		t.Errorf("problem %q, want the statistics", p)
	}
	s.Test.Labels[3] = 0 // class 3 (cat) now has no test image
	if p := check("cifar10-like", s, r2); !strings.Contains(p, "test split has no images of class cat") {
		t.Errorf("problem %q, want the missing class", p)
	}
}
