package augment

import (
	"os"
	"testing"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// cifarImages reads the first n real CIFAR-10 images from the test data's
// cifar10/test_batch.prefix1017.bin (the first 1,017 records of the
// official test_batch.bin, 1 label byte + 3,072 pixel bytes each). Its
// absence skips the test, or fails it under CI=true.
func cifarImages(tb testing.TB, n int) *data.Set {
	tb.Helper()
	raw, err := os.ReadFile(testenv.DataFile(tb, "cifar10/test_batch.prefix1017.bin"))
	if err != nil {
		tb.Fatal(err)
	}
	const record = 1 + 3*32*32
	n = min(n, len(raw)/record)
	s := &data.Set{Name: "cifar10 test prefix", H: 32, W: 32, Pix: make([]uint8, 0, n*3072), Labels: make([]int32, n)}
	for i := range n {
		s.Labels[i] = int32(raw[i*record])
		s.Pix = append(s.Pix, raw[i*record+1:(i+1)*record]...)
	}
	return s
}
