// Package synthdata makes small labelled image sets for tests of the
// trainer and the SimCLR oracle, which need images that are learnable
// without reading a data set from disk.
package synthdata

import (
	"math/rand/v2"

	"github.com/simclr-go/simclr/data"
)

// Splits is a labelled image set of side x side images: each of the classes
// has its own mean colour, so the images are learnable but not trivially
// equal. The same arguments give the same pixels.
func Splits(nTrain, nTest, side, classes int) *data.Splits {
	r := rand.New(rand.NewPCG(7, 7))
	mk := func(name string, n int) *data.Set {
		s := &data.Set{Name: name, H: side, W: side, Pix: make([]uint8, n*3*side*side), Labels: make([]int32, n)}
		for c := 0; c < classes; c++ {
			s.Classes = append(s.Classes, string(rune('a'+c)))
		}
		for i := 0; i < n; i++ {
			c := i % classes
			s.Labels[i] = int32(c)
			for ch := 0; ch < 3; ch++ {
				base := 40 + 60*((c+ch)%3)
				for p := 0; p < side*side; p++ {
					s.Pix[(i*3+ch)*side*side+p] = uint8(base + r.IntN(80))
				}
			}
		}
		return s
	}
	return &data.Splits{Train: mk("synthetic train", nTrain), Test: mk("synthetic test", nTest),
		Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.25, 0.25, 0.25}}
}
