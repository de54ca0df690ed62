package loss_test

import (
	"fmt"

	"github.com/simclr-go/simclr/loss"
)

// Two images with two 2-d views each (rows 0,1 and rows 2,3); the rows
// need not be normalised.
func ExampleNTXent() {
	z := []float32{3, 4, 1, 0, 0, 2, -1, 1}
	dz := make([]float32, len(z))
	value, full := loss.NTXent(2, 2, 0.5, false, z, dz)
	fmt.Printf("loss %.4f (full batch %.4f)\n", value, full)
	// Output: loss 0.6495 (full batch 0.6495)
}
