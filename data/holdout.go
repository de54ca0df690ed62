package data

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// holdOutSeed fixes which images a validation split holds, whatever a
// run's seed: runs tuned against each other score the same images.
const holdOutSeed = 0x76616c

// HoldOut splits s into the rest and n class-balanced held-out images (a
// validation split, never trained on): they are drawn round-robin over the
// classes, each class's in a fixed random order that depends only on the
// set's size. Both parts keep data-set order. With n = 0 it returns s and
// nil.
func (s *Set) HoldOut(n int) (rest, held *Set, err error) {
	if n == 0 {
		return s, nil, nil
	}
	if n < 0 || n >= s.Len() {
		return nil, nil, fmt.Errorf("hold out %d of the %d images of %s: hold out between 1 and %d", n, s.Len(), s.Name, s.Len()-1)
	}
	byClass := make([][]int, len(s.Classes))
	for i, l := range s.Labels {
		byClass[l] = append(byClass[l], i)
	}
	r := rand.New(rand.NewPCG(holdOutSeed, uint64(s.Len())))
	for _, idx := range byClass {
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	isHeld := make([]bool, s.Len())
	var heldIdx []int
	for round := 0; len(heldIdx) < n; round++ {
		for _, idx := range byClass {
			if round < len(idx) && len(heldIdx) < n {
				heldIdx = append(heldIdx, idx[round])
				isHeld[idx[round]] = true
			}
		}
	}
	sort.Ints(heldIdx)
	var restIdx []int
	for i := range isHeld {
		if !isHeld[i] {
			restIdx = append(restIdx, i)
		}
	}
	rest = s.pick(restIdx, fmt.Sprintf("%s (without %d validation images)", s.Name, n))
	held = s.pick(heldIdx, fmt.Sprintf("%s validation split (%d, class-balanced)", s.Name, n))
	return rest, held, nil
}

// pick copies the images idx of s (with their labels and files) into a
// new set.
func (s *Set) pick(idx []int, name string) *Set {
	img := 3 * s.H * s.W
	out := &Set{Name: name, Classes: s.Classes, H: s.H, W: s.W,
		Pix: make([]uint8, 0, len(idx)*img), Labels: make([]int32, 0, len(idx))}
	for _, i := range idx {
		out.Pix = append(out.Pix, s.Image(i)...)
		out.Labels = append(out.Labels, s.Labels[i])
		if s.Files != nil {
			out.Files = append(out.Files, s.Files[i])
		}
	}
	return out
}

// Validation returns splits for tuning: n class-balanced training images
// held out (Set.HoldOut) as the evaluation set in place of the test set,
// which is left out, and a training subset of trainSubset images (0: all)
// taken from the rest. The normalisation statistics stay those of the full
// training set.
func (s *Splits) Validation(n, trainSubset int) (*Splits, error) {
	rest, held, err := s.Train.HoldOut(n)
	if err != nil {
		return nil, err
	}
	out := *s
	out.Train, out.Test = rest.Subset(trainSubset), held
	return &out, nil
}
