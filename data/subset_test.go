package data_test

import (
	"fmt"
	"testing"

	"github.com/simclr-go/simclr/data"
)

// A subset of a class-sorted set (as an image folder loads) must hold every
// class equally, in data-set order, with each image's own pixels.
func TestSubsetIsClassBalanced(t *testing.T) {
	const classes, perClass, h = 4, 5, 2
	img := 3 * h * h
	s := &data.Set{Classes: make([]string, classes), H: h, W: h}
	for c := 0; c < classes; c++ {
		for i := 0; i < perClass; i++ {
			s.Labels = append(s.Labels, int32(c))
			s.Files = append(s.Files, fmt.Sprintf("%d.png", len(s.Labels)))
			for p := 0; p < img; p++ {
				s.Pix = append(s.Pix, uint8(len(s.Labels)))
			}
		}
	}
	for _, tc := range []struct{ n, wantPerClassMin, wantPerClassMax int }{
		{8, 2, 2}, {10, 2, 3}, {20, 5, 5}, {0, 5, 5}, {99, 5, 5},
	} {
		sub := s.Subset(tc.n)
		counts := make([]int, classes)
		for i, l := range sub.Labels {
			counts[l]++
			if i > 0 && l < sub.Labels[i-1] {
				t.Errorf("n=%d: labels out of data-set order: %v", tc.n, sub.Labels)
			}
			if got := sub.Image(i)[0]; int32((int(got)-1)/perClass) != l {
				t.Errorf("n=%d: image %d has pixels of another class (%d) than its label %d", tc.n, i, got, l)
			}
			if want := fmt.Sprintf("%d.png", sub.Image(i)[0]); sub.Files[i] != want {
				t.Errorf("n=%d: image %d is named %s, want %s", tc.n, i, sub.Files[i], want)
			}
		}
		for c, k := range counts {
			if k < tc.wantPerClassMin || k > tc.wantPerClassMax {
				t.Errorf("n=%d: class %d has %d images, want %d..%d (counts %v)", tc.n, c, k, tc.wantPerClassMin, tc.wantPerClassMax, counts)
			}
		}
	}
}
