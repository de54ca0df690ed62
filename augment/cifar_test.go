package augment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/simclr-go/simclr/data"
)

// cifarPrefix is the first 1,017 records of the official CIFAR-10
// test_batch.bin (1 label byte + 3,072 pixel bytes each), kept beside the
// checkout (see ../shared/data/README.md).
var cifarPrefix = filepath.Join("..", "..", "shared", "data", "cifar10", "test_batch.prefix1017.bin")

// cifarImages reads the first n real CIFAR-10 images. The shared data is
// required (CI has it), so its absence fails the test instead of quietly
// testing something else.
func cifarImages(tb testing.TB, n int) *data.Set {
	tb.Helper()
	raw, err := os.ReadFile(cifarPrefix)
	if err != nil {
		tb.Fatalf("shared test data missing: %v (tests read ../shared/data beside the repository checkout; see DEVELOPERS.md)", err)
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
