// Package data holds the in-memory form every data set reader produces: one
// compact uint8 array of images plus labels. Readers live in the
// sub-packages (cifar, svhn, folder).
package data

// Set is a labelled image set held as N x 3 x H x W uint8 (RGB planes, rows
// top to bottom), the layout of the CIFAR binary records.
type Set struct {
	Name    string   // for messages, e.g. "cifar10 train"
	Classes []string // class names in label order
	H, W    int      // image size; every image has 3 channels
	Pix     []uint8  // len = N*3*H*W
	Labels  []int32  // len = N, values in [0, len(Classes))
	// Files names the file each image was read from, for sets read from
	// one file per image (image folders); nil for sets read from a few
	// large files (CIFAR, SVHN), whose images are known by their index.
	Files []string
}

// Len is the number of images.
func (s *Set) Len() int { return len(s.Labels) }

// Image returns the 3*H*W bytes of image i (a view, not a copy).
func (s *Set) Image(i int) []uint8 {
	n := 3 * s.H * s.W
	return s.Pix[i*n : (i+1)*n]
}

// Splits is a data set's training and test sets with the per-channel
// statistics used to normalise inputs (in [0,1] pixel units).
type Splits struct {
	Train, Test *Set
	Mean, Std   [3]float32
}
