package data

import (
	"fmt"
	"sort"
)

// Subset keeps n images of s (all when n is 0 or too large; s itself is
// then returned), taken round-robin over the classes in data-set order and
// kept in that order, so that a subset of a class-sorted image folder is as
// balanced as one of the shuffled CIFAR binary batches (the first n of a
// folder would be one or two classes).
func (s *Set) Subset(n int) *Set {
	if s == nil || n <= 0 || n >= s.Len() {
		return s
	}
	byClass := make([][]int, len(s.Classes))
	for i, l := range s.Labels {
		byClass[l] = append(byClass[l], i)
	}
	keep := make([]int, 0, n)
	for round := 0; len(keep) < n; round++ {
		for _, idx := range byClass {
			if round < len(idx) && len(keep) < n {
				keep = append(keep, idx[round])
			}
		}
	}
	sort.Ints(keep)
	return s.pick(keep, fmt.Sprintf("%s (%d, class-balanced)", s.Name, n))
}

// Subset returns splits with train and test images of each split kept by
// Set.Subset (0 keeps a split whole); the normalisation statistics stay
// those of the full training set.
func (s *Splits) Subset(train, test int) *Splits {
	out := *s
	out.Train = s.Train.Subset(train)
	out.Test = s.Test.Subset(test)
	return &out
}
