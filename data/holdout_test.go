package data

import "testing"

// idSet is a set whose image i has every pixel byte equal to i (ids below
// 256), labels cycling over classes in blocks (class-sorted like a folder).
func idSet(n, classes int) *Set {
	const h = 8
	s := &Set{Name: "ids", Classes: make([]string, classes), H: h, W: h}
	for i := range n {
		s.Labels = append(s.Labels, int32(i*classes/n))
		for range 3 * h * h {
			s.Pix = append(s.Pix, uint8(i))
		}
	}
	return s
}

func ids(s *Set) map[uint8]int32 {
	out := map[uint8]int32{}
	for i := range s.Len() {
		out[s.Image(i)[0]] = s.Labels[i]
	}
	return out
}

func TestHoldOutIsClassBalancedAndDisjoint(t *testing.T) {
	const n, classes = 200, 4
	s := idSet(n, classes)
	for _, hold := range []int{1, 8, 10, 199} {
		train, val, err := s.HoldOut(hold)
		if err != nil {
			t.Fatal(err)
		}
		if train.Len()+val.Len() != n || val.Len() != hold {
			t.Fatalf("hold %d: %d training + %d validation images of %d", hold, train.Len(), val.Len(), n)
		}
		tr, va := ids(train), ids(val)
		for id, l := range va {
			if _, ok := tr[id]; ok {
				t.Errorf("hold %d: image %d is in both parts", hold, id)
			}
			if want := int32(int(id) * classes / n); l != want {
				t.Errorf("hold %d: image %d carries label %d, want %d", hold, id, l, want)
			}
		}
		counts := make([]int, classes)
		for _, l := range val.Labels {
			counts[l]++
		}
		for c, k := range counts {
			if k < hold/classes || k > (hold+classes-1)/classes {
				t.Errorf("hold %d: class %d has %d validation images (counts %v)", hold, c, k, counts)
			}
		}
		// The same split whatever the run: it depends on the data set only.
		_, again, _ := s.HoldOut(hold)
		for i := range val.Labels {
			if val.Image(i)[0] != again.Image(i)[0] {
				t.Fatalf("hold %d: a second split differs at %d", hold, i)
			}
		}
	}
	for _, bad := range []int{-1, n, n + 1} {
		if _, _, err := s.HoldOut(bad); err == nil {
			t.Errorf("hold %d of %d: no error", bad, n)
		}
	}
}
