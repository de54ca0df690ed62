package svhn

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/shared"
)

func TestSample(t *testing.T) {
	path := shared.File(t, "svhn/sample_32x32.mat")
	d, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1083
	if len(d.Labels) != n || len(d.Pix) != n*3072 {
		t.Fatalf("got %d labels and %d pixel bytes, want %d and %d", len(d.Labels), len(d.Pix), n, n*3072)
	}
	// The sample's placeholder labels: image i has label (i mod 10)+1 in
	// the file, and 10 means the digit 0.
	for i, l := range d.Labels {
		if want := int32((i%10 + 1) % 10); l != want {
			t.Fatalf("image %d: label %d, want %d", i, l, want)
		}
	}
	// Pixels, computed independently: decompress the first element whole and
	// index X's column-major data (row fastest, then column, channel, image).
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := binary.LittleEndian.Uint32(raw[132:])
	zr, err := zlib.NewReader(bytes.NewReader(raw[136 : 136+size]))
	if err != nil {
		t.Fatal(err)
	}
	m, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// miMATRIX tag (8), flags (16), dims (8+16), name "X" small (8), real-part tag (8).
	const dataAt = 64
	if got := binary.LittleEndian.Uint32(m[dataAt-4:]); got != n*3072 {
		t.Fatalf("layout assumption wrong: real part declares %d bytes", got)
	}
	for _, i := range []int{0, 1, 541, n - 1} {
		for _, p := range [][3]int{{0, 0, 0}, {0, 31, 0}, {0, 0, 31}, {1, 5, 17}, {2, 31, 31}, {2, 20, 3}} {
			ch, r, c := p[0], p[1], p[2]
			want := m[dataAt+r+32*c+1024*ch+3072*i]
			if got := d.Pix[i*3072+ch*1024+r*32+c]; got != want {
				t.Errorf("image %d channel %d row %d column %d: %d, file has %d", i, ch, r, c, got, want)
			}
		}
	}
}

func TestTruncatedReal(t *testing.T) {
	path := shared.File(t, "svhn/train_32x32.truncated.mat")
	_, err := ReadFile(path)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{path, "truncated", "download it again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	sample := shared.File(t, "svhn/sample_32x32.mat")
	for _, name := range []string{"train_32x32.mat", "test_32x32.mat", "extra_32x32.mat"} {
		if err := os.Symlink(sample, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, extra := range []bool{false, true} {
		s, err := Load(dir, extra)
		if err != nil {
			t.Fatal(err)
		}
		wantTrain := 1083
		if extra {
			wantTrain *= 2
		}
		if s.Train.Len() != wantTrain || s.Test.Len() != 1083 || len(s.Train.Pix) != wantTrain*3072 {
			t.Errorf("extra=%v: %d/%d images, want %d/1083", extra, s.Train.Len(), s.Test.Len(), wantTrain)
		}
		if extra { // extra (the same sample) follows train image for image
			for _, i := range []int{0, 500, 1082} {
				if !bytes.Equal(s.Train.Image(1083+i), s.Train.Image(i)) || s.Train.Labels[1083+i] != s.Train.Labels[i] {
					t.Errorf("extra image %d differs from train image %d", 1083+i, i)
				}
			}
		}
		if s.Mean != Mean || s.Std != Std || len(s.Train.Classes) != 10 || s.Train.H != 32 {
			t.Errorf("bad metadata")
		}
	}
	os.Remove(filepath.Join(dir, "test_32x32.mat"))
	if _, err := Load(dir, false); err == nil || !strings.Contains(err.Error(), "test_32x32.mat") {
		t.Errorf("missing test file: error %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	other := matVar{name: "__meta", class: 6, dims: []int32{1, 2}, dataType: miDOUBLE, data: make([]byte, 16)}
	cell := matVar{name: "c", class: 1, dims: []int32{1, 1}, dataType: miUINT8, data: []byte{1, 2, 3, 4, 5}}
	for _, tc := range []struct {
		name string
		opt  matOptions
		vars []matVar
	}{
		{"compressed LE", matOptions{compressed: true}, []matVar{xVar(3), yVar(1, 10, 5)}},
		{"plain LE", matOptions{}, []matVar{xVar(3), yVar(1, 10, 5)}},
		{"compressed BE", matOptions{compressed: true, bigEndian: true}, []matVar{xVar(3), yDouble(be, 1, 10, 5)}},
		{"plain BE double y", matOptions{bigEndian: true}, []matVar{yDouble(be, 1, 10, 5), xVar(3)}},
		{"y first, other vars", matOptions{compressed: true}, []matVar{other, yDouble(le, 1, 10, 5), cell, xVar(3)}},
		{"one image, small y", matOptions{}, []matVar{xVar(1), {name: "y", class: 9, dims: []int32{1, 1}, dataType: miUINT8, data: []byte{1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeMAT(tc.opt, tc.vars...)
			d, err := ReadMAT(bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			n := len(d.Labels)
			wantLabels := "[1 0 5]"
			if n == 1 {
				wantLabels = "[1]"
			}
			if got := fmt.Sprint(d.Labels); got != wantLabels {
				t.Errorf("labels %s, want %s", got, wantLabels)
			}
			for i := 0; i < n; i++ {
				for ch := 0; ch < 3; ch++ {
					for r := 0; r < 32; r++ {
						for c := 0; c < 32; c++ {
							if got, want := d.Pix[i*3072+ch*1024+r*32+c], pixel(i, ch, r, c); got != want {
								t.Fatalf("image %d channel %d row %d column %d: %d, want %d", i, ch, r, c, got, want)
							}
						}
					}
				}
			}
		})
	}
}

func TestBadMAT(t *testing.T) {
	good := writeMAT(matOptions{compressed: true}, xVar(2), yVar(1, 2))
	wrongDims := xVar(2)
	wrongDims.dims = []int32{32, 32, 1, 6}
	doubleX := xVar(1)
	doubleX.dataType = miDOUBLE
	doubleX.data = make([]byte, 3072*8)
	complexX := xVar(1)
	complexX.complex = true
	bigX := xVar(1)
	bigX.dims = []int32{32, 32, 3, 9_000_000} // declares 27 GB of pixels
	hugeDecl := xVar(1)
	hugeDecl.sizeDelta = 1 << 31
	negDim := xVar(1)
	negDim.dims = []int32{32, 32, 3, -1}
	charX := xVar(1)
	charX.class = 4
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"not a MAT-file", bytes.Repeat([]byte("<html>"), 40), "not a MATLAB 5.0 MAT-file"},
		{"v7.3", writeMAT(matOptions{text: "MATLAB 7.3 MAT-file, HDF5"}), "7.3 (HDF5)"},
		{"bad endian", writeMAT(matOptions{endian: "XX"}), "endian indicator"},
		{"bad version", writeMAT(matOptions{version: 0x0200}), "version 0x0200"},
		{"no variables", writeMAT(matOptions{}), "no variables X and y"},
		{"no y", writeMAT(matOptions{compressed: true}, xVar(2)), "no variable y"},
		{"no X", writeMAT(matOptions{compressed: true}, yVar(1, 2)), "no variable X"},
		{"count mismatch", writeMAT(matOptions{}, xVar(2), yVar(1, 2, 3)), "X holds 2 images but y 3 labels"},
		{"label 0", writeMAT(matOptions{}, xVar(2), yVar(0, 2)), "label 0 (0-based) is 0"},
		{"label 11", writeMAT(matOptions{}, xVar(2), yVar(3, 11)), "label 1 (0-based) is 11"},
		{"label 2.5", writeMAT(matOptions{}, xVar(2), yDouble(binary.LittleEndian, 1, 2.5)), "is 2.5"},
		{"X dims", writeMAT(matOptions{}, wrongDims, yVar(1, 2)), "X has dimensions [32 32 1 6]"},
		{"X double", writeMAT(matOptions{}, doubleX, yVar(1)), "needs uint8 pixels"},
		{"X complex", writeMAT(matOptions{}, complexX, yVar(1)), "X is complex"},
		{"X char", writeMAT(matOptions{}, charX, yVar(1)), "not a numeric array"},
		{"X negative", writeMAT(matOptions{}, negDim, yVar(1)), "dimension 3 is -1"},
		{"X declares more", writeMAT(matOptions{}, bigX, yVar(1)), "declares 3072 data bytes, want 27648000000"},
		{"matrix beyond file", writeMAT(matOptions{}, hugeDecl, yVar(1)), "truncated"},
		{"matrix beyond deflate", writeMAT(matOptions{compressed: true}, hugeDecl, yVar(1)), "decompress to at most"},
		{"two X", writeMAT(matOptions{}, xVar(1), xVar(1), yVar(1)), "second variable X"},
		{"zlib garbage", append(append(good[:128:128], 15, 0, 0, 0, 8, 0, 0, 0), []byte("notzlib!")...), "corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMAT(bytes.NewReader(tc.file), int64(len(tc.file)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

// TestEveryTruncation cuts a valid file (compressed and not) at every
// length: each prefix must fail with an error, never panic or succeed.
func TestEveryTruncation(t *testing.T) {
	for _, compressed := range []bool{true, false} {
		file := writeMAT(matOptions{compressed: compressed}, xVar(2), yVar(4, 10))
		if _, err := ReadMAT(bytes.NewReader(file), int64(len(file))); err != nil {
			t.Fatal(err)
		}
		for cut := 0; cut < len(file); cut++ {
			// The size is honest (the prefix length) ...
			if _, err := ReadMAT(bytes.NewReader(file[:cut]), int64(cut)); err == nil {
				t.Fatalf("compressed=%v: prefix of %d bytes read without error", compressed, cut)
			}
			// ... or claims the full file (a stream that ends early).
			if _, err := ReadMAT(bytes.NewReader(file[:cut]), int64(len(file))); err == nil {
				t.Fatalf("compressed=%v: short stream of %d bytes read without error", compressed, cut)
			}
		}
	}
}

// TestBoundedAllocation reads small hostile files declaring huge arrays and
// checks the reader allocates in proportion to the file, not the claim.
func TestBoundedAllocation(t *testing.T) {
	bigX := xVar(1)
	bigX.dims = []int32{32, 32, 3, 9_000_000}
	bigX.sizeDelta = 9_000_000*3072 - 3072 // matrix and real part claim 27 GB
	bigX.data = nil
	files := [][]byte{
		writeMAT(matOptions{compressed: true}, bigX),
		writeMAT(matOptions{}, bigX),
	}
	for i, file := range files {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadMAT(bytes.NewReader(file), int64(len(file)))
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("file %d: no error", i)
		}
		// Buffers (two 64 KiB bufio readers, the zlib window) are about
		// 200 KiB; 8 MiB leaves room for noise and none for the claim.
		if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
			t.Errorf("file %d (%d bytes): allocated %d bytes reading it (%v)", i, len(file), got, err)
		}
	}
}

func BenchmarkReadSample(b *testing.B) {
	path := shared.File(b, "svhn/sample_32x32.mat")
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for i := 0; i < b.N; i++ {
		if _, err := ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}
