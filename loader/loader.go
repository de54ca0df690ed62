// Package loader turns a data.Set into the training stream SimCLR consumes:
// an endless sequence of images, shuffled afresh each epoch, each delivered
// as its two augmented views. Worker goroutines render views ahead of the
// consumer into a bounded ring. What the stream yields is a pure function of
// the seed and the position in the stream (epoch, offset): it does not depend
// on the number of workers or on how the consumer slices it into batches, and
// Seek resumes it exactly.
package loader

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/data"
)

// Position is a place in the stream: the next image is the Offset-th
// (0-based) of the permutation of epoch Epoch.
type Position struct {
	Epoch  int `json:"epoch"`
	Offset int `json:"offset"`
}

// Draw describes what one Next call returned.
type Draw struct {
	// Epoch and Offset are the position of the first image drawn.
	Epoch, Offset int
	// Indices are the data-set indices of the images drawn, in order. The
	// slice is reused by the next call to Next: copy it to keep it.
	Indices []int
}

// tagPerm separates the permutation streams from the view streams derived
// from the same seed.
const tagPerm = 0x7065726d // "perm"

// ringBytes bounds the memory of the prefetch ring.
const ringBytes = 32 << 20

// Stream is the augmented training stream of one data set. Next, Position,
// Seek and Close must be called from one goroutine at a time.
type Stream struct {
	set     *data.Set
	n       int // images in the set
	seed    uint64
	viewLen int // floats in one view
	imgLen  int // floats in both views of one image
	outH    int
	outW    int

	mu       sync.Mutex
	space    *sync.Cond // workers wait for a free slot or an end of Seek
	ready    *sync.Cond // the consumer waits for its slot, Seek for idle workers
	ring     []float32  // capacity slots of imgLen floats
	slotPos  []int      // global position held by a finished slot, -1 if none
	slotIdx  []int      // data-set index of the image in a slot
	head     int        // global position (epoch*n + offset) the consumer reads next
	next     int        // next global position a worker claims
	inflight int        // slots being rendered
	seeking  bool
	closed   bool
	perms    map[int][]int // permutation of each epoch between head and next
	indices  []int
	wg       sync.WaitGroup
}

// New is Open for callers that validated cfg (cfg.Validate) and the
// statistics beforehand; it panics on what Open would report.
func New(set *data.Set, mean, std [3]float32, cfg augment.Config, seed uint64, workers int) *Stream {
	s, err := Open(set, mean, std, cfg, seed, workers)
	if err != nil {
		panic(err)
	}
	return s
}

// Open starts a stream over set with the view transform cfg, inputs
// normalised by mean and std, and workers goroutines rendering views
// (workers <= 0 means GOMAXPROCS). It starts at epoch 0, offset 0. Close
// stops the workers.
func Open(set *data.Set, mean, std [3]float32, cfg augment.Config, seed uint64, workers int) (*Stream, error) {
	return open(set, mean, std, cfg, seed, workers, 0)
}

// open is Open with the ring's slot count; 0 sizes it from ringBytes.
func open(set *data.Set, mean, std [3]float32, cfg augment.Config, seed uint64, workers, capacity int) (*Stream, error) {
	if set == nil || set.Len() == 0 {
		return nil, fmt.Errorf("loader: empty data set: nothing to stream")
	}
	if len(set.Pix) != set.Len()*3*set.H*set.W {
		return nil, fmt.Errorf("loader: %s holds %d pixel bytes for %d images of 3x%dx%d", set.Name, len(set.Pix), set.Len(), set.H, set.W)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	transforms := make([]*augment.Transform, workers)
	for i := range transforms {
		t, err := augment.NewTransform(cfg, set.H, set.W, mean, std)
		if err != nil {
			return nil, fmt.Errorf("loader: %s: %w", set.Name, err)
		}
		transforms[i] = t
	}
	s := &Stream{set: set, n: set.Len(), seed: seed, viewLen: transforms[0].ViewLen()}
	s.outH, s.outW = transforms[0].OutSize()
	s.imgLen = 2 * s.viewLen
	if capacity <= 0 {
		capacity = min(max(ringBytes/(4*s.imgLen), 4*workers, 16), 4096)
	}
	s.ring = make([]float32, capacity*s.imgLen)
	s.slotPos = make([]int, capacity)
	s.slotIdx = make([]int, capacity)
	for i := range s.slotPos {
		s.slotPos[i] = -1
	}
	s.space = sync.NewCond(&s.mu)
	s.ready = sync.NewCond(&s.mu)
	s.perms = make(map[int][]int)
	s.wg.Add(workers)
	for _, t := range transforms {
		go s.work(t)
	}
	return s, nil
}

// ViewLen is the float32 count of one view (3 x H x W).
func (s *Stream) ViewLen() int { return s.viewLen }

// ViewSize is the height and width of the views.
func (s *Stream) ViewSize() (h, w int) { return s.outH, s.outW }

// Len is the number of images per epoch.
func (s *Stream) Len() int { return s.n }

// capacity is the number of ring slots.
func (s *Stream) capacity() int { return len(s.slotPos) }

// indexAt is the data-set index of the image at global position g. Called
// with mu held.
func (s *Stream) indexAt(g int) int {
	epoch := g / s.n
	perm, ok := s.perms[epoch]
	if !ok {
		perm = Permutation(s.n, s.seed, epoch)
		s.perms[epoch] = perm
	}
	return perm[g%s.n]
}

// Permutation is the order in which epoch visits the n images of a stream
// seeded with seed: a Fisher-Yates shuffle driven by a PCG stream derived
// from (seed, epoch).
func Permutation(n int, seed uint64, epoch int) []int {
	r := newRand(augment.Derive(seed, tagPerm, uint64(epoch)))
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm
}

// work is one worker: claim the next position while the ring has room,
// render both views of its image into its slot, publish it.
func (s *Stream) work(t *augment.Transform) {
	defer s.wg.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for !s.closed && (s.seeking || s.next >= s.head+s.capacity()) {
			s.space.Wait()
		}
		if s.closed {
			return
		}
		g := s.next
		s.next++
		slot := g % s.capacity()
		index := s.indexAt(g)
		epoch := g / s.n
		s.inflight++
		s.mu.Unlock()

		dst := s.ring[slot*s.imgLen:][:s.imgLen]
		img := s.set.Image(index)
		for view := range 2 {
			t.Apply(img, augment.Key{Seed: s.seed, Epoch: epoch, Index: index, View: view}, dst[view*s.viewLen:][:s.viewLen])
		}

		s.mu.Lock()
		s.inflight--
		s.slotPos[slot] = g
		s.slotIdx[slot] = index
		if g == s.head || (s.seeking && s.inflight == 0) {
			s.ready.Broadcast()
		}
	}
}

// Next fills dst with the next n images of the stream as 2n views,
// (2n, 3, H, W): views 2k and 2k+1 are the two views of the k-th image. It
// blocks until they are rendered; n may exceed the ring and cross epochs.
func (s *Stream) Next(n int, dst []float32) Draw {
	if n < 0 || len(dst) != n*s.imgLen {
		panic(fmt.Sprintf("loader: Next(%d) into %d floats, want %d x 2 x %d = %d", n, len(dst), n, s.viewLen, n*s.imgLen))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		panic("loader: Next on a closed Stream")
	}
	draw := Draw{Epoch: s.head / s.n, Offset: s.head % s.n}
	s.indices = s.indices[:0]
	for k := range n {
		g := s.head
		slot := g % s.capacity()
		for s.slotPos[slot] != g {
			s.ready.Wait()
		}
		// The slot stays ours until head moves past it, so copy unlocked.
		s.mu.Unlock()
		copy(dst[k*s.imgLen:][:s.imgLen], s.ring[slot*s.imgLen:][:s.imgLen])
		s.mu.Lock()
		s.indices = append(s.indices, s.slotIdx[slot])
		s.slotPos[slot] = -1
		s.head++
		if s.head%s.n == 0 {
			delete(s.perms, s.head/s.n-1)
		}
		s.space.Signal()
	}
	draw.Indices = s.indices
	return draw
}

// Position is where the stream stands: the position of the image the next
// call to Next returns first.
func (s *Stream) Position() Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Position{Epoch: s.head / s.n, Offset: s.head % s.n}
}

// Seek moves the stream to pos: what Next returns afterwards is exactly what
// a stream of the same seed and configuration returns from pos. Prefetched
// views are discarded.
func (s *Stream) Seek(pos Position) error {
	if pos.Epoch < 0 || pos.Offset < 0 || pos.Offset >= s.n {
		return fmt.Errorf("loader: cannot seek %s to epoch %d offset %d: want epoch >= 0 and offset in [0, %d) (was the checkpoint made on another data set?)",
			s.set.Name, pos.Epoch, pos.Offset, s.n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		panic("loader: Seek on a closed Stream")
	}
	s.seeking = true
	for s.inflight > 0 {
		s.ready.Wait()
	}
	g := pos.Epoch*s.n + pos.Offset
	s.head, s.next = g, g
	for i := range s.slotPos {
		s.slotPos[i] = -1
	}
	clear(s.perms)
	s.seeking = false
	s.space.Broadcast()
	return nil
}

// Close stops the workers and waits for them to exit. The stream cannot be
// used afterwards; Close may be called more than once.
func (s *Stream) Close() {
	s.mu.Lock()
	s.closed = true
	s.space.Broadcast()
	s.ready.Broadcast()
	s.mu.Unlock()
	s.wg.Wait()
}

// EvalBatch writes the un-augmented, normalised images idx of set into dst,
// (len(idx), 3, H, W): the evaluation inputs.
func EvalBatch(set *data.Set, idx []int, mean, std [3]float32, dst []float32) {
	imgLen := 3 * set.H * set.W
	if len(dst) != len(idx)*imgLen {
		panic(fmt.Sprintf("loader: EvalBatch of %d images into %d floats, want %d x 3 x %d x %d", len(idx), len(dst), len(idx), set.H, set.W))
	}
	for k, i := range idx {
		augment.Eval(set, i, mean, std, dst[k*imgLen:][:imgLen])
	}
}

func newRand(seed1, seed2 uint64) *rand.Rand { return rand.New(rand.NewPCG(seed1, seed2)) }
