package cifar

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/shared"
)

// rawRecord reads record i of a binary file straight from disk, independently
// of the reader under test.
func rawRecord(t *testing.T, path string, k Kind, i int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := make([]byte, k.RecordLen())
	if _, err := f.ReadAt(rec, int64(i)*int64(k.RecordLen())); err != nil {
		t.Fatalf("read record %d of %s: %v", i, path, err)
	}
	return rec
}

func TestCIFAR10TestPrefix(t *testing.T) {
	path := shared.File(t, "cifar10/test_batch.prefix1017.bin")
	want, err := os.ReadFile(shared.File(t, "cifar10/labels_test.u8"))
	if err != nil {
		t.Fatal(err)
	}
	pix, labels, err := ReadFile(path, CIFAR10)
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) != 1017 || len(pix) != 1017*ImageBytes {
		t.Fatalf("got %d labels and %d pixel bytes, want 1017 and %d", len(labels), len(pix), 1017*ImageBytes)
	}
	for i, l := range labels {
		if l != int32(want[i]) {
			t.Fatalf("record %d: label %d, labels_test.u8 says %d", i, l, want[i])
		}
	}
	// Spot checks: first, last and interior records; first and last byte of
	// each plane, and an interior pixel (row 17, column 5).
	for _, i := range []int{0, 1, 500, 1016} {
		rec := rawRecord(t, path, CIFAR10, i)
		for _, j := range []int{0, 1023, 1024, 2047, 2048, 3071, 17*32 + 5, 1024 + 17*32 + 5, 2048 + 17*32 + 5} {
			if got := pix[i*ImageBytes+j]; got != rec[1+j] {
				t.Errorf("record %d pixel byte %d: got %d, file has %d", i, j, got, rec[1+j])
			}
		}
	}
	// The official test_batch.bin starts with a cat (3), a ship (8), a ship, an airplane (0).
	if got := fmt.Sprint(labels[:4]); got != "[3 8 8 0]" {
		t.Errorf("first labels %s, want [3 8 8 0]", got)
	}
}

// linkCIFAR100 lays the shared CIFAR-100 fragments out as cifar-100-binary/.
func linkCIFAR100(t *testing.T) string {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cifar-100-binary")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for dst, src := range map[string]string{
		"train.bin": "cifar100/train.prefix1117.bin", "test.bin": "cifar100/test.prefix916.bin",
		"fine_label_names.txt": "cifar100/fine_label_names.txt", "coarse_label_names.txt": "cifar100/coarse_label_names.txt",
	} {
		if err := os.Symlink(shared.File(t, src), filepath.Join(bin, dst)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCIFAR100Prefixes(t *testing.T) {
	dir := linkCIFAR100(t)
	trainPath := shared.File(t, "cifar100/train.prefix1117.bin")
	for _, tc := range []struct {
		coarse    bool
		nameFile  string
		labelByte int // which label byte of the record is kept
		classes   int
	}{
		{false, "cifar100/fine_label_names.txt", 1, 100},
		{true, "cifar100/coarse_label_names.txt", 0, 20},
	} {
		t.Run(fmt.Sprintf("coarse=%v", tc.coarse), func(t *testing.T) {
			s, err := Load100(dir, tc.coarse)
			if err != nil {
				t.Fatal(err)
			}
			if s.Train.Len() != 1117 || s.Test.Len() != 916 {
				t.Fatalf("got %d train and %d test images, want 1117 and 916", s.Train.Len(), s.Test.Len())
			}
			names, err := os.ReadFile(shared.File(t, tc.nameFile))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(s.Train.Classes, "\n")+"\n", string(names); got != want || len(s.Train.Classes) != tc.classes {
				t.Errorf("class names differ from %s (%d names)", tc.nameFile, len(s.Train.Classes))
			}
			if got, want := strings.Join(s.Train.Classes, ","), strings.Join(Classes100(tc.coarse), ","); got != want {
				t.Errorf("built-in names differ from the official file: %s vs %s", want, got)
			}
			raw, err := os.ReadFile(trainPath)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < s.Train.Len(); i++ {
				rec := raw[i*CIFAR100Fine.RecordLen():]
				if s.Train.Labels[i] != int32(rec[tc.labelByte]) {
					t.Fatalf("train record %d: label %d, file byte %d is %d", i, s.Train.Labels[i], tc.labelByte, rec[tc.labelByte])
				}
				if !bytes.Equal(s.Train.Image(i), rec[2:2+ImageBytes]) {
					t.Fatalf("train record %d: pixels differ from the file", i)
				}
			}
			if s.Mean != Mean100 || s.Std != Std100 {
				t.Errorf("statistics %v %v, want the standard CIFAR-100 ones", s.Mean, s.Std)
			}
		})
	}
	// The first official training image is cattle (fine 19) in
	// large_omnivores_and_herbivores (coarse 11); every fine class belongs to
	// exactly one superclass.
	fine, err := Load100(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	coarse, err := Load100(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if f, c := fine.Train.Classes[fine.Train.Labels[0]], coarse.Train.Classes[coarse.Train.Labels[0]]; f != "cattle" || c != "large_omnivores_and_herbivores" {
		t.Errorf("first training image is %s / %s, want cattle / large_omnivores_and_herbivores", f, c)
	}
	parent := map[int32]int32{}
	for i, f := range fine.Train.Labels {
		if p, ok := parent[f]; ok && p != coarse.Train.Labels[i] {
			t.Fatalf("fine class %s appears under superclasses %s and %s", fine.Train.Classes[f],
				coarse.Train.Classes[p], coarse.Train.Classes[coarse.Train.Labels[i]])
		}
		parent[f] = coarse.Train.Labels[i]
	}
}

// writeBatches writes a CIFAR-10 layout whose files are given by content.
func writeBatches(t *testing.T, files map[string][]byte) string {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cifar-10-batches-bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(bin, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// records makes n valid CIFAR-10 records with label i%10 and pixel bytes
// derived from the record index.
func records(n int) []byte {
	b := make([]byte, 0, n*CIFAR10.RecordLen())
	for i := 0; i < n; i++ {
		b = append(b, byte(i%10))
		for j := 0; j < ImageBytes; j++ {
			b = append(b, byte(i*7+j))
		}
	}
	return b
}

func TestLoad10Small(t *testing.T) {
	files := map[string][]byte{"batches.meta.txt": []byte(strings.Join(Classes10(), "\n") + "\n\n")}
	for b := 1; b <= 5; b++ {
		files[fmt.Sprintf("data_batch_%d.bin", b)] = records(3 + b)
	}
	files["test_batch.bin"] = records(4)
	dir := writeBatches(t, files)
	for _, d := range []string{dir, filepath.Join(dir, "cifar-10-batches-bin")} {
		s, err := Load10(d)
		if err != nil {
			t.Fatal(err)
		}
		if s.Train.Len() != 4+5+6+7+8 || s.Test.Len() != 4 {
			t.Fatalf("got %d/%d images, want 30/4", s.Train.Len(), s.Test.Len())
		}
		// Training image 4+5 is record 0 of data_batch_3.
		if s.Train.Labels[9] != 0 || s.Train.Image(9)[3] != 3 || s.Train.Labels[10] != 1 || s.Train.Image(10)[0] != 7 {
			t.Errorf("concatenation order wrong: labels %v", s.Train.Labels[8:11])
		}
		if s.Train.H != 32 || s.Train.W != 32 || s.Mean != Mean10 || s.Std != Std10 || s.Train.Classes[9] != "truck" {
			t.Errorf("bad metadata: %+v", s.Train.Classes)
		}
	}
}

func TestBadFiles(t *testing.T) {
	good := records(2)
	bad := records(3)
	bad[2*CIFAR10.RecordLen()] = 10 // label 10 in record 2
	garbage := bytes.Repeat([]byte("<html>not found</html>\n"), 400)
	for _, tc := range []struct {
		name    string
		batch3  []byte
		wantMsg []string
	}{
		{"truncated", good[:len(good)-100], []string{"data_batch_3.bin", "not a multiple of the 3073-byte CIFAR-10 record", "truncated"}},
		{"oversized", records(10001), []string{"data_batch_3.bin", "10001 records", "at most 10000"}},
		{"bad label", bad, []string{"data_batch_3.bin", "record 2 (0-based) has label 10"}},
		{"garbage", garbage[:3073*2], []string{"data_batch_3.bin", "has label 60"}},
		{"garbage size", garbage, []string{"data_batch_3.bin", "9200 bytes is not a multiple"}},
		{"empty", nil, []string{"data_batch_3.bin", "empty file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string][]byte{"test_batch.bin": good}
			for b := 1; b <= 5; b++ {
				files[fmt.Sprintf("data_batch_%d.bin", b)] = good
			}
			files["data_batch_3.bin"] = tc.batch3
			_, err := Load10(writeBatches(t, files))
			if err == nil {
				t.Fatal("no error")
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := Load10(writeBatches(t, map[string][]byte{"data_batch_1.bin": good}))
		if err == nil || !strings.Contains(err.Error(), "data_batch_2.bin") {
			t.Errorf("error %v does not name data_batch_2.bin", err)
		}
	})
	t.Run("bad names", func(t *testing.T) {
		_, err := Load10(writeBatches(t, map[string][]byte{"batches.meta.txt": []byte("a\nb\n")}))
		if err == nil || !strings.Contains(err.Error(), "batches.meta.txt: 2 class names, want 10") {
			t.Errorf("error %v", err)
		}
	})
}

func TestReadRecordsKinds(t *testing.T) {
	rec := func(coarse, fine byte) []byte { return append([]byte{coarse, fine}, make([]byte, ImageBytes)...) }
	for _, tc := range []struct {
		name    string
		kind    Kind
		in      []byte
		size    int64
		labels  string
		wantErr string
	}{
		{"fine", CIFAR100Fine, append(rec(3, 99), rec(19, 0)...), 2 * 3074, "[99 0]", ""},
		{"coarse", CIFAR100Coarse, append(rec(3, 99), rec(19, 0)...), 2 * 3074, "[3 19]", ""},
		{"coarse out of range", CIFAR100Fine, rec(20, 5), 3074, "", "coarse label 20"},
		{"fine out of range", CIFAR100Coarse, rec(2, 100), 3074, "", "fine label 100"},
		{"short reader", CIFAR100Fine, rec(1, 1)[:100], 3074, "", "file ends inside record 0"},
		{"cifar10 size of cifar100", CIFAR10, rec(1, 1), 3074, "", "not a multiple of the 3073-byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, labels, err := ReadRecords(bytes.NewReader(tc.in), tc.size, tc.kind)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(labels); got != tc.labels {
				t.Errorf("labels %s, want %s", got, tc.labels)
			}
		})
	}
}

func TestRebuiltCIFAR10(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds the full CIFAR-10 (about 10 s the first time)")
	}
	dir := shared.RebuiltCIFAR10(t)
	s, err := Load10(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range []struct {
		set        []int32
		labelsFile string
		perClass   int
	}{{s.Train.Labels, "cifar10/labels_train.u8", 5000}, {s.Test.Labels, "cifar10/labels_test.u8", 1000}} {
		want, err := os.ReadFile(shared.File(t, sp.labelsFile))
		if err != nil {
			t.Fatal(err)
		}
		if len(sp.set) != len(want) {
			t.Fatalf("%d labels, %s has %d", len(sp.set), sp.labelsFile, len(want))
		}
		counts := make([]int, 10)
		for i, l := range sp.set {
			if l != int32(want[i]) {
				t.Fatalf("record %d: label %d, %s says %d", i, l, sp.labelsFile, want[i])
			}
			counts[l]++
		}
		for c, n := range counts {
			if n != sp.perClass {
				t.Errorf("class %d has %d images, want %d", c, n, sp.perClass)
			}
		}
	}
	// Pixels of the last training record, read independently.
	rec := rawRecord(t, filepath.Join(dir, "cifar-10-batches-bin", "data_batch_5.bin"), CIFAR10, 9999)
	if !bytes.Equal(s.Train.Image(49999), rec[1:]) {
		t.Error("last training image differs from the last record of data_batch_5.bin")
	}
}

func BenchmarkLoad10(b *testing.B) {
	dir := shared.RebuiltCIFAR10(b)
	b.SetBytes(60000 * 3073)
	for i := 0; i < b.N; i++ {
		if _, err := Load10(dir); err != nil {
			b.Fatal(err)
		}
	}
}
