package loader_test

import (
	"fmt"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/loader"
)

// A training loop draws batches of images as pairs of views, and saves the
// stream's position with its checkpoints.
func Example() {
	set := &data.Set{Name: "tiny", H: 8, W: 8, Pix: make([]uint8, 5*3*8*8), Labels: make([]int32, 5)}
	mean, std := [3]float32{0.5, 0.5, 0.5}, [3]float32{0.25, 0.25, 0.25}
	stream := loader.New(set, mean, std, augment.SimCLR(), 42, 2)
	defer stream.Close()

	const batch = 4
	views := make([]float32, batch*2*stream.ViewLen()) // (2*batch, 3, 8, 8)
	for range 3 {
		draw := stream.Next(batch, views)
		fmt.Printf("epoch %d offset %d: %d images, %d views\n", draw.Epoch, draw.Offset, len(draw.Indices), 2*batch)
	}
	pos := stream.Position() // store in the checkpoint; Seek(pos) resumes exactly
	fmt.Printf("resume at epoch %d offset %d\n", pos.Epoch, pos.Offset)
	// Output:
	// epoch 0 offset 0: 4 images, 8 views
	// epoch 0 offset 4: 4 images, 8 views
	// epoch 1 offset 3: 4 images, 8 views
	// resume at epoch 2 offset 2
}
