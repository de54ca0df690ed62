package cifar

import (
	"bytes"
	"os"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/shared"
)

// FuzzReadRecords feeds arbitrary bytes and sizes to the record reader for
// every kind: it must return records or an error without panicking, and
// what it returns must match the input byte for byte.
func FuzzReadRecords(f *testing.F) {
	for _, p := range []struct{ file, kind string }{
		{"cifar10/test_batch.prefix1017.bin", "10"}, {"cifar100/train.prefix1117.bin", "100"},
	} {
		b, err := os.ReadFile(shared.File(f, p.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:2*3074], int64(2*3073), uint8(0))
		f.Add(b[:2*3074], int64(2*3074), uint8(1))
		f.Add(b[:3074], int64(3074), uint8(2))
	}
	f.Add([]byte{}, int64(0), uint8(0))
	f.Add([]byte{10}, int64(3073), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, size int64, kindByte uint8) {
		k := Kind(kindByte % 3)
		pix, labels, err := ReadRecords(bytes.NewReader(in), size, k)
		if err != nil {
			return
		}
		rec := k.RecordLen()
		if int64(len(labels)*rec) != size || len(pix) != len(labels)*ImageBytes || len(labels) > k.MaxRecords() {
			t.Fatalf("size %d: %d labels and %d pixel bytes", size, len(labels), len(pix))
		}
		for i, l := range labels {
			r := in[i*rec : (i+1)*rec]
			want := int32(r[0])
			if k == CIFAR100Fine {
				want = int32(r[1])
			}
			if l != want || int(l) >= k.NumClasses() {
				t.Fatalf("record %d: label %d, input has %d", i, l, want)
			}
			if !bytes.Equal(pix[i*ImageBytes:(i+1)*ImageBytes], r[rec-ImageBytes:]) {
				t.Fatalf("record %d: pixels differ from the input", i)
			}
		}
	})
}
