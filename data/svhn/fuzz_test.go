package svhn

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/shared"
)

// FuzzReadMAT feeds arbitrary bytes to the MAT-file reader, both with the
// honest size and with a size claiming more than the stream holds: it must
// return (data or an error) without panicking, hanging or allocating more
// than the file can justify (the deflate bound keeps that to about 1000x the
// input). Seeds: generated files of every shape the writer makes, and the
// first kilobytes of the real sample and truncated SVHN files.
func FuzzReadMAT(f *testing.F) {
	le, be := binary.LittleEndian, binary.BigEndian
	for _, file := range [][]byte{
		writeMAT(matOptions{compressed: true}, xVar(1), yVar(10)),
		writeMAT(matOptions{}, xVar(1), yVar(3)),
		writeMAT(matOptions{bigEndian: true}, yDouble(be, 1, 2), xVar(2)),
		writeMAT(matOptions{compressed: true}, yDouble(le, 1), xVar(1)),
		writeMAT(matOptions{}),
	} {
		f.Add(file)
	}
	for _, name := range []string{"svhn/sample_32x32.mat", "svhn/train_32x32.truncated.mat"} {
		b, err := os.ReadFile(shared.File(f, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:4096])
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		for _, size := range []int64{int64(len(file)), int64(len(file)) + 100} {
			d, err := ReadMAT(bytes.NewReader(file), size)
			if err != nil {
				continue
			}
			if len(d.Pix) != 3072*len(d.Labels) || len(d.Labels) == 0 {
				t.Fatalf("%d pixel bytes for %d labels", len(d.Pix), len(d.Labels))
			}
			for i, l := range d.Labels {
				if l < 0 || l > 9 {
					t.Fatalf("label %d is %d", i, l)
				}
			}
		}
	})
}

// oneByteReader hands out one byte per Read, to exercise short reads.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func TestShortReads(t *testing.T) {
	file := writeMAT(matOptions{compressed: true}, xVar(2), yVar(4, 10))
	d, err := ReadMAT(oneByteReader{bytes.NewReader(file)}, int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Labels) != 2 || d.Labels[1] != 0 || d.Pix[3072+1024+2*32+5] != pixel(1, 1, 2, 5) {
		t.Errorf("read through one-byte reads differs: labels %v", d.Labels)
	}
}
