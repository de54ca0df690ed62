package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is For on goroutines that stay between calls. Starting a goroutine
// is cheap, but when the other cores' threads sleep, waking one costs tens
// of microseconds on a virtual machine, about what a training step's
// small kernels take: a kernel split in two then ends later than on one
// core. A Pool's helpers spin for a while after each part, waiting for the
// next (yielding their core to any other goroutine that wants it), and
// sleep only after a pause of Pool.spin: kernels that follow one another,
// as a step's do, are handed over without a wake-up.
//
// One For runs on the helpers at a time; a For called meanwhile (from
// another goroutine, or from inside a part) runs as the package's For. A
// Pool must be closed, or become unreachable, for its helpers to end.
type Pool struct {
	helpers []*helper
	busy    sync.Mutex // held by the For running on the helpers
	spin    time.Duration
	// tasks and state belong to the For holding busy: reused, so that a
	// For allocates nothing.
	tasks []task
	state *forState
}

// forState is what the parts of a For share with its caller.
type forState struct {
	left   atomic.Int32  // parts on the helpers not yet finished
	asleep atomic.Bool   // the caller sleeps on done
	done   chan struct{} // one token: wakes the caller
}

// helper is one goroutine of a Pool and its mailbox.
type helper struct {
	task   atomic.Pointer[task]
	asleep atomic.Bool   // set before sleeping on wake, then rechecked
	wake   chan struct{} // one token: wakes a sleeping helper
	quit   atomic.Bool
}

// task is one part of a For.
type task struct {
	fn           func(part, lo, hi int)
	part, lo, hi int
	state        *forState
}

// DefaultSpin is how long a helper waits for the next part before it
// sleeps: longer than the gaps between a training step's kernels, short
// enough that an idle process gives its cores back at once.
const DefaultSpin = 200 * time.Microsecond

// NewPool returns a pool for Fors of up to threads parts (threads-1 helpers
// and the caller's goroutine) whose helpers spin for spin before sleeping.
func NewPool(threads int, spin time.Duration) *Pool {
	p := &Pool{spin: spin, tasks: make([]task, max(threads-1, 0)), state: &forState{done: make(chan struct{}, 1)}}
	for range threads - 1 {
		h := &helper{wake: make(chan struct{}, 1)}
		p.helpers = append(p.helpers, h)
		go h.run(spin)
	}
	// The helpers hold only themselves, so p can become garbage.
	runtime.AddCleanup(p, stopHelpers, p.helpers)
	return p
}

// Spin is how long the helpers wait for the next part before they sleep.
func (p *Pool) Spin() time.Duration { return p.spin }

// Close ends the helpers; the pool's Fors then run as the package's For.
func (p *Pool) Close() {
	p.busy.Lock()
	defer p.busy.Unlock()
	stopHelpers(p.helpers)
	p.helpers = nil
}

func stopHelpers(hs []*helper) {
	for _, h := range hs {
		h.quit.Store(true)
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

// For is the package's For, the parts after the first on the helpers.
func (p *Pool) For(n, parts int, fn func(part, lo, hi int)) int {
	if n <= 0 {
		return 0
	}
	parts = min(max(parts, 1), n)
	if parts == 1 {
		fn(0, 0, n)
		return 1
	}
	if parts-1 > len(p.helpers) || !p.busy.TryLock() {
		return For(n, parts, fn)
	}
	defer p.busy.Unlock()
	st := p.state
	st.left.Store(int32(parts - 1))
	for i := range parts - 1 {
		part := i + 1
		p.tasks[i] = task{fn: fn, part: part, lo: part * n / parts, hi: (part + 1) * n / parts, state: st}
		p.helpers[i].post(&p.tasks[i])
	}
	// Deferred, so that a panic in part 0 still waits for the helpers:
	// the next For reuses the tasks and the count.
	defer clear(p.tasks[:parts-1]) // keep nothing of fn's alive until the next For
	defer p.wait(st)
	fn(0, 0, n/parts)
	return parts
}

// wait returns when the helpers have finished their parts: it spins (and
// yields) for p.spin, then sleeps until the last one wakes it, so that a
// caller waiting on helpers that the operating system has descheduled (a
// machine with more busy threads than cores) gives its core back.
func (p *Pool) wait(st *forState) {
	start := time.Now()
	for i := 1; st.left.Load() != 0; i++ {
		if i%64 != 0 {
			continue
		}
		runtime.Gosched()
		if time.Since(start) < p.spin {
			continue
		}
		st.asleep.Store(true)
		for st.left.Load() != 0 {
			<-st.done // a token left by an earlier For's last part just loops
		}
		st.asleep.Store(false)
		return
	}
}

// post hands t to h, waking h if it sleeps. Either h sees t when it
// rechecks after announcing its sleep, or post sees the announcement.
func (h *helper) post(t *task) {
	h.task.Store(t)
	if h.asleep.Load() {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

func (h *helper) run(spin time.Duration) {
	for {
		t := h.next(spin)
		if t == nil {
			return
		}
		t.fn(t.part, t.lo, t.hi)
		st := t.state
		if st.left.Add(-1) == 0 && st.asleep.Load() {
			select {
			case st.done <- struct{}{}:
			default:
			}
		}
	}
}

// next waits for the next task, spinning (and yielding) for spin, then
// sleeping; nil when the pool is closed.
func (h *helper) next(spin time.Duration) *task {
	start := time.Now()
	for i := 0; ; i++ {
		if t := h.task.Swap(nil); t != nil {
			return t
		}
		if h.quit.Load() {
			return nil
		}
		if i%64 != 63 {
			continue
		}
		runtime.Gosched()
		if time.Since(start) < spin {
			continue
		}
		h.asleep.Store(true)
		if t := h.task.Swap(nil); t != nil {
			h.asleep.Store(false)
			return t
		}
		<-h.wake
		h.asleep.Store(false)
		start = time.Now()
	}
}
