package loader

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/data"
)

var (
	testMean = [3]float32{0.49, 0.48, 0.45}
	testStd  = [3]float32{0.25, 0.24, 0.26}
)

// randomSet is a data.Set of n random h x w images.
func randomSet(n, h, w int, seed uint64) *data.Set {
	rng := rand.New(rand.NewPCG(seed, 3))
	s := &data.Set{Name: "random", Classes: []string{"x"}, H: h, W: w,
		Pix: make([]uint8, n*3*h*w), Labels: make([]int32, n)}
	for i := range s.Pix {
		s.Pix[i] = uint8(rng.UintN(256))
	}
	return s
}

func mustOpen(t testing.TB, set *data.Set, seed uint64, workers, capacity int) *Stream {
	t.Helper()
	s, err := open(set, testMean, testStd, augment.SimCLR(), seed, workers, capacity)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// drawn is what a sequence of Next calls returned, concatenated.
type drawn struct {
	views   []float32
	indices []int
	epochs  []int // epoch of each image
}

// take calls Next once per batch size and concatenates the results,
// checking each Draw's position against the running count.
func take(t *testing.T, s *Stream, sizes ...int) drawn {
	t.Helper()
	var d drawn
	for _, n := range sizes {
		start := s.Position()
		buf := make([]float32, n*2*s.ViewLen())
		got := s.Next(n, buf)
		if got.Epoch != start.Epoch || got.Offset != start.Offset || len(got.Indices) != n {
			t.Fatalf("Next(%d) at %+v reported epoch %d offset %d with %d indices", n, start, got.Epoch, got.Offset, len(got.Indices))
		}
		d.views = append(d.views, buf...)
		d.indices = append(d.indices, got.Indices...)
		g := start.Epoch*s.Len() + start.Offset
		for k := range n {
			d.epochs = append(d.epochs, (g+k)/s.Len())
		}
		if after := s.Position(); after.Epoch*s.Len()+after.Offset != g+n {
			t.Fatalf("after Next(%d) from %+v the position is %+v", n, start, after)
		}
	}
	return d
}

func sameDrawn(t *testing.T, what string, a, b drawn) {
	t.Helper()
	if !slices.Equal(a.indices, b.indices) {
		t.Fatalf("%s: indices differ:\n%v\n%v", what, a.indices, b.indices)
	}
	if len(a.views) != len(b.views) {
		t.Fatalf("%s: %d vs %d floats", what, len(a.views), len(b.views))
	}
	for i := range a.views {
		if a.views[i] != b.views[i] {
			t.Fatalf("%s: float %d (image %d) differs: %v vs %v", what, i, i/(len(a.views)/len(a.indices)), a.views[i], b.views[i])
		}
	}
}

func TestEpochsArePermutations(t *testing.T) {
	const n = 37
	s := mustOpen(t, randomSet(n, 8, 8, 1), 5, 2, 0)
	d := take(t, s, 10, 30, 1, 40, 30) // 111 images = 3 epochs exactly
	var epochs [][]int
	for e := range 3 {
		perm := d.indices[e*n : (e+1)*n]
		for k := range perm {
			if d.epochs[e*n+k] != e {
				t.Fatalf("image %d reported in epoch %d, want %d", e*n+k, d.epochs[e*n+k], e)
			}
		}
		sorted := slices.Sorted(slices.Values(perm))
		for i, v := range sorted {
			if v != i {
				t.Fatalf("epoch %d is not a permutation of 0..%d: %v", e, n-1, perm)
			}
		}
		if !slices.Equal(perm, Permutation(n, 5, e)) {
			t.Fatalf("epoch %d order differs from Permutation(%d, 5, %d)", e, n, e)
		}
		epochs = append(epochs, perm)
	}
	if slices.Equal(epochs[0], epochs[1]) || slices.Equal(epochs[1], epochs[2]) {
		t.Errorf("consecutive epochs share their order: %v", epochs)
	}
}

// TestPermutationUniform: the first image of an epoch is uniform over the
// set (5 sigma on each count over 20000 epochs).
func TestPermutationUniform(t *testing.T) {
	const n, epochs = 5, 20000
	var first [n]int
	for e := range epochs {
		first[Permutation(n, 77, e)[0]]++
	}
	p := 1.0 / n
	bound := 5 * math.Sqrt(p*(1-p)/epochs)
	for i, c := range first {
		if f := float64(c) / epochs; math.Abs(f-p) > bound {
			t.Errorf("image %d first in %.4f of epochs, want %.4f +- %.4f", i, f, p, bound)
		}
	}
}

// TestViewsArePureFunctions: every view in the stream is the augment
// transform of its image under key (seed, epoch, index, view).
func TestViewsArePureFunctions(t *testing.T) {
	set := randomSet(13, 8, 8, 2)
	s := mustOpen(t, set, 9, 3, 0)
	d := take(t, s, 20)
	tr, err := augment.NewTransform(augment.SimCLR(), 8, 8, testMean, testStd)
	if err != nil {
		t.Fatal(err)
	}
	viewLen := s.ViewLen()
	want := make([]float32, viewLen)
	for k, index := range d.indices {
		for v := range 2 {
			tr.Apply(set.Image(index), augment.Key{Seed: 9, Epoch: d.epochs[k], Index: index, View: v}, want)
			got := d.views[(2*k+v)*viewLen:][:viewLen]
			if !slices.Equal(got, want) {
				t.Fatalf("image %d (index %d) view %d differs from the transform of its key", k, index, v)
			}
		}
	}
	// The two views of an image differ.
	if slices.Equal(d.views[:viewLen], d.views[viewLen:2*viewLen]) {
		t.Error("the two views of image 0 are identical")
	}
}

// TestBatchingAndWorkersDoNotMatter: one big Next equals many small ones,
// with any worker count and a ring smaller than the request.
func TestBatchingAndWorkersDoNotMatter(t *testing.T) {
	set := randomSet(23, 8, 8, 3)
	const total = 80 // crosses three epoch boundaries
	reference := take(t, mustOpen(t, set, 4, 1, 0), total)
	cases := []struct {
		name              string
		workers, capacity int
		sizes             []int
	}{
		{"2 workers, small batches", 2, 0, []int{1, 2, 3, 5, 8, 13, 21, 27}},
		{"4 workers, ring of 3 slots", 4, 3, []int{40, 0, 40}},
		{"3 workers, ring of 1 slot", 3, 1, []int{7, 73}},
		{"1 worker, single images", 1, 2, slices.Repeat([]int{1}, total)},
	}
	for _, c := range cases {
		got := take(t, mustOpen(t, set, 4, c.workers, c.capacity), c.sizes...)
		sameDrawn(t, c.name, reference, got)
	}
	other := take(t, mustOpen(t, set, 5, 2, 0), total)
	if slices.Equal(other.indices, reference.indices) {
		t.Error("seeds 4 and 5 give the same order")
	}
}

func TestSeekResumesExactly(t *testing.T) {
	set := randomSet(19, 8, 8, 4)
	original := mustOpen(t, set, 6, 2, 8)
	take(t, original, 25)
	pos := original.Position()
	want := take(t, original, 30)
	if pos != (Position{Epoch: 1, Offset: 6}) {
		t.Fatalf("position after 25 images of 19 = %+v, want epoch 1 offset 6", pos)
	}

	// A fresh stream sought there, and the original sought back with
	// prefetched views in flight, both replay the same images.
	fresh := mustOpen(t, set, 6, 3, 0)
	if err := fresh.Seek(pos); err != nil {
		t.Fatal(err)
	}
	sameDrawn(t, "fresh stream after Seek", want, take(t, fresh, 12, 18))
	if err := original.Seek(pos); err != nil {
		t.Fatal(err)
	}
	sameDrawn(t, "same stream sought back", want, take(t, original, 30))
	// Seeking forward agrees with reading through.
	through := mustOpen(t, set, 6, 1, 0)
	take(t, through, 3*19+4)
	if err := fresh.Seek(Position{Epoch: 3, Offset: 4}); err != nil {
		t.Fatal(err)
	}
	sameDrawn(t, "seek forward", take(t, through, 10), take(t, fresh, 10))

	for _, bad := range []Position{{Epoch: 0, Offset: 19}, {Epoch: -1, Offset: 0}, {Epoch: 0, Offset: -1}} {
		if err := fresh.Seek(bad); err == nil {
			t.Errorf("Seek(%+v) on a set of 19 accepted", bad)
		}
	}
}

// settledGoroutines is the goroutine count once it reaches want or stays
// above it for a second: Close returns when the workers have signalled their
// end, a moment before the runtime retires them.
func settledGoroutines(want int) int {
	got := runtime.NumGoroutine()
	for range 1000 {
		if got <= want {
			break
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		got = runtime.NumGoroutine()
	}
	return got
}

func TestCloseStopsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	set := randomSet(10, 8, 8, 5)
	for _, workers := range []int{1, 4} {
		s, err := open(set, testMean, testStd, augment.SimCLR(), 1, workers, 4)
		if err != nil {
			t.Fatal(err)
		}
		if got := runtime.NumGoroutine(); got < before+workers {
			t.Fatalf("%d goroutines with %d workers running, had %d before", got, workers, before)
		}
		take(t, s, 3)
		s.Close()
		s.Close()
		if after := settledGoroutines(before); after != before {
			t.Errorf("%d goroutines after Close, %d before Open (workers %d)", after, before, workers)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	good := randomSet(3, 8, 8, 6)
	broken := randomSet(3, 8, 8, 6)
	broken.Pix = broken.Pix[:100]
	badCfg := augment.SimCLR()
	badCfg.FlipProb = 2
	cases := []struct {
		name string
		set  *data.Set
		cfg  augment.Config
		std  [3]float32
	}{
		{"empty set", &data.Set{H: 8, W: 8}, augment.SimCLR(), testStd},
		{"pixels do not match labels", broken, augment.SimCLR(), testStd},
		{"invalid config", good, badCfg, testStd},
		{"zero std", good, augment.SimCLR(), [3]float32{0.2, 0, 0.2}},
	}
	for _, c := range cases {
		if s, err := Open(c.set, testMean, c.std, c.cfg, 1, 1); err == nil {
			s.Close()
			t.Errorf("%s: Open accepted it", c.name)
		}
	}
}

func TestEvalBatch(t *testing.T) {
	set := randomSet(6, 4, 5, 7)
	idx := []int{5, 0, 3}
	dst := make([]float32, len(idx)*3*4*5)
	EvalBatch(set, idx, testMean, testStd, dst)
	for k, i := range idx {
		img := set.Image(i)
		for j, v := range img {
			c := j / 20
			want := (float64(v)/255 - float64(testMean[c])) / float64(testStd[c])
			if got := float64(dst[k*60+j]); math.Abs(got-want) > 1e-5 {
				t.Fatalf("image %d element %d = %v, want %v", i, j, got, want)
			}
		}
	}
}

// BenchmarkStream is the loader's throughput on 32x32 images with 2
// workers, batches of 256 images (512 views):
// go test -run XXX -bench Stream -benchtime 20x -cpu 1,2 ./loader/
func BenchmarkStream(b *testing.B) {
	set := randomSet(2048, 32, 32, 8)
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s := mustOpen(b, set, 1, workers, 0)
			const batch = 256
			dst := make([]float32, batch*2*s.ViewLen())
			s.Next(batch, dst) // let the workers fill the ring once
			cpu0 := processCPUSeconds()
			for b.Loop() {
				s.Next(batch, dst)
			}
			b.ReportMetric(float64(b.N*2*batch)/b.Elapsed().Seconds(), "views/s")
			// CPU time of the whole process (workers included) per view: on a
			// shared machine a steadier figure than the wall clock.
			if cpu := processCPUSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(float64(b.N*2*batch)/cpu, "views/cpu-s")
			}
		})
	}
}
