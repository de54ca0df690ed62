package train

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/simclr-go/simclr/data"
)

// valSplitSeed fixes which images a validation split holds, whatever the
// run's seed: runs tuned against each other score the same images.
const valSplitSeed = 0x76616c

// holdOut splits s into a training part and n class-balanced validation
// images (--val-split): the validation images are drawn round-robin over the
// classes, each class's in a fixed random order, and never trained on. Both
// parts keep data-set order. With n = 0 it returns s and nil.
func holdOut(s *data.Set, n int) (train, val *data.Set, err error) {
	if n == 0 {
		return s, nil, nil
	}
	if n < 0 || n >= s.Len() {
		return nil, nil, fmt.Errorf("--val-split %d: %s has %d images; hold out between 1 and %d", n, s.Name, s.Len(), s.Len()-1)
	}
	byClass := make([][]int, len(s.Classes))
	for i, l := range s.Labels {
		byClass[l] = append(byClass[l], i)
	}
	r := rand.New(rand.NewPCG(valSplitSeed, uint64(s.Len())))
	for _, idx := range byClass {
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	held := make([]bool, s.Len())
	var valIdx []int
	for round := 0; len(valIdx) < n; round++ {
		for _, idx := range byClass {
			if round < len(idx) && len(valIdx) < n {
				valIdx = append(valIdx, idx[round])
				held[idx[round]] = true
			}
		}
	}
	sort.Ints(valIdx)
	var trainIdx []int
	for i := range held {
		if !held[i] {
			trainIdx = append(trainIdx, i)
		}
	}
	train = pick(s, trainIdx, fmt.Sprintf("%s (without %d validation images)", s.Name, n))
	val = pick(s, valIdx, fmt.Sprintf("%s validation split (%d, class-balanced)", s.Name, n))
	return train, val, nil
}

// pick copies the images idx of s into a new set.
func pick(s *data.Set, idx []int, name string) *data.Set {
	img := 3 * s.H * s.W
	out := &data.Set{Name: name, Classes: s.Classes, H: s.H, W: s.W,
		Pix: make([]uint8, 0, len(idx)*img), Labels: make([]int32, 0, len(idx))}
	for _, i := range idx {
		out.Pix = append(out.Pix, s.Image(i)...)
		out.Labels = append(out.Labels, s.Labels[i])
	}
	return out
}
