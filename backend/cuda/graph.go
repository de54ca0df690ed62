package cuda

import (
	"errors"
	"slices"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

// Step graphs. A training step at a small level (2 to 32 images) queues a
// few hundred kernels and library calls that each finish in microseconds,
// so the host's work per call (argument checks, cgo-free calls through
// purego, the driver's own launch path) costs more than the device's.
// GraphStep records such a step once on the stream (stream capture) into a
// CUDA graph and replays it with one cuGraphLaunch, which queues the same
// work at the cost of one call.
//
// A recorded graph holds device addresses and the host-side choices made
// while it was recorded (algorithms, plans, which bf16 copies were made),
// so the protocol is:
//
//   - The first call for a key runs the step eagerly: plans, cuDNN's
//     algorithm searches, scratch and activation buffers are made then.
//   - The second records it (stream capture), instantiates the graph and
//     launches it. The step's host code runs once more, queueing nothing
//     that runs: work is recorded, not executed.
//   - Later calls launch the graph without calling step.
//   - Freeing any allocation the graph reads or writes (Free of a buffer,
//     a scratch block that grows, the model's parameters or activations
//     replaced) drops the graph: the key starts over with an eager call.
//
// What a graph cannot hold refuses the capture: a read of results to the
// host (NTXent's loss, Dot, Download), Upload, Sync, cuDNN's algorithm
// search, work of another library (RunExternal), and Alloc. The capture
// is then discarded, the step runs again eagerly (the work recorded never
// ran, so it runs exactly once), and the key stays eager for the run;
// GraphStats names the operation. A step that grows the arena while it
// is recorded fails with an error instead: cuMemAlloc is not permitted
// during a capture.

// GraphStats counts how GraphStep ran the steps given to it.
type GraphStats struct {
	// Eager counts steps run eagerly (each key's first, and every step of
	// a refused key or without graph support).
	Eager int
	// Captures counts graphs recorded; Replays, launches of a recorded
	// graph without calling the step (the launch right after a capture
	// not counted).
	Captures, Replays int
	// Invalidations counts graphs dropped because an allocation they use
	// was freed.
	Invalidations int
	// Refused maps each key whose step cannot be recorded to the reason.
	Refused map[any]string
}

// stepGraph is the state of one key.
type stepGraph struct {
	exec    uintptr  // the instantiated graph, 0 before the capture
	uses    []uint64 // sorted bases of the arena allocations the graph uses
	wrote   [][2]uint64
	refused string
}

// captureState collects what the step does while it is recorded.
type captureState struct {
	addrs   []uint64    // device addresses of the recorded work
	wrote   [][2]uint64 // ranges written, for the bf16 cache at each replay
	zero    [][2]uint64 // buffers Alloc made meanwhile (address, floats), zeroed after
	refused string
}

// errCaptureAlloc is the failure of an allocation the arena cannot serve
// from its chunks while a step is being recorded.
var errCaptureAlloc = errors.New("the step needed new device memory while it was being recorded as a graph (cuMemAlloc is not permitted during stream capture); a step given to GraphStep must allocate only in its first, eager call")

func (b *Backend) graphsSupported() bool {
	d := &b.libs.driver
	return d.cuStreamBeginCapture != 0 && d.cuGraphLaunch != 0
}

// GraphStep runs step, which queues device work only, as a recorded graph
// keyed by key (a comparable value: the caller's description of
// everything that decides what step queues, such as the batch size and
// the kind of pass). step must queue the same work on the same buffers
// each time it is called with the same key, keep the host state it
// changes the same whatever the call, and not allocate after its first
// call for the key. On a later call it may not be called at all. Results
// the host needs are read after GraphStep returns (ReadNTXent for the
// loss). GraphStep must not run concurrently with other calls on the
// backend. It returns the backend's failure, if any.
func (b *Backend) GraphStep(key any, step func()) error {
	b.enter()
	if b.err != nil {
		err := b.err
		b.leave()
		return err
	}
	if b.capture != nil {
		// A step inside a step being recorded is part of that record.
		b.leave()
		step()
		return nil
	}
	g := b.graphs[key]
	switch {
	case !b.graphsSupported():
		if b.graphStats.Refused[key] == "" {
			b.graphStats.Refused[key] = "the CUDA driver has no stream capture and graph calls (cuStreamBeginCapture_v2, cuGraphInstantiateWithFlags, cuGraphLaunch)"
		}
		fallthrough
	case g == nil || g.refused != "":
		if g == nil && b.graphsSupported() {
			b.graphs[key] = &stepGraph{}
		}
		b.graphStats.Eager++
		b.leave()
		step()
	case g.exec == 0:
		b.leave()
		if b.captureStep(key, g, step) {
			b.enter()
			b.launchGraphLocked(g)
			b.leave()
		}
	default:
		b.graphStats.Replays++
		b.launchGraphLocked(g)
		b.leave()
	}
	return b.failure()
}

// failure is the recorded device failure, if any.
func (b *Backend) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// captureStep records step into g and reports whether it did. When the
// capture is refused, step runs eagerly and g keeps the reason.
func (b *Backend) captureStep(key any, g *stepGraph, step func()) bool {
	d := &b.libs.driver
	b.enter()
	if err := d.check("cuStreamBeginCapture", mustCall(d.cuStreamBeginCapture, b.stream, captureModeGlobal)); err != nil {
		g.refused = err.Error()
		b.graphStats.Refused[key] = g.refused
		b.graphStats.Eager++
		b.leave()
		step()
		return false
	}
	b.capture = &captureState{}
	b.leave()
	step()
	b.enter()
	c := b.capture
	b.capture = nil
	var graph uintptr
	endErr := d.check("cuStreamEndCapture", mustCall(d.cuStreamEndCapture, b.stream, uintptr(unsafe.Pointer(&graph))))
	// The buffers Alloc made while recording were not zeroed (the memset
	// was recorded); zero them now, before anything reads them.
	for _, z := range c.zero {
		b.memsetLocked(z[0], int(z[1]))
	}
	if c.refused == "" && endErr != nil {
		c.refused = endErr.Error()
	}
	if c.refused == "" && b.err == nil {
		var exec uintptr
		if err := d.check("cuGraphInstantiateWithFlags", mustCall(d.cuGraphInstantiate, uintptr(unsafe.Pointer(&exec)), graph, 0)); err != nil {
			c.refused = err.Error()
		} else {
			g.exec = exec
		}
	}
	if graph != 0 {
		mustCall(d.cuGraphDestroy, graph)
	}
	if g.exec == 0 {
		if c.refused == "" {
			c.refused = "an earlier device failure"
		}
		g.refused = c.refused
		// The bf16 weight conversions recorded in the discarded capture
		// never ran, yet marked their copies current: the eager rerun
		// converts again.
		b.staleAllLocked()
		b.graphStats.Refused[key] = g.refused
		b.graphStats.Eager++
		b.leave()
		step()
		return false
	}
	g.uses = b.arena.owners(c.addrs)
	g.wrote = c.wrote
	b.graphStats.Captures++
	b.leave()
	return true
}

// launchGraphLocked queues g's graph and marks stale the bf16 copies of
// what it writes, as the eager step's calls would.
func (b *Backend) launchGraphLocked(g *stepGraph) {
	d := &b.libs.driver
	b.fail(d.check("cuGraphLaunch", mustCall(d.cuGraphLaunch, g.exec, b.stream)))
	for _, r := range g.wrote {
		b.staleRangeLocked(r[0], r[1])
	}
}

// GraphStats reports how GraphStep ran the steps so far.
func (b *Backend) GraphStats() GraphStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.graphStats
	s.Refused = make(map[any]string, len(b.graphStats.Refused))
	for k, v := range b.graphStats.Refused {
		s.Refused[k] = v
	}
	return s
}

// refuseCapture reports whether a step is being recorded and, when it
// is, marks the capture refused by what (the first reason is kept).
func (b *Backend) refuseCapture(what string) bool {
	if b.capture == nil {
		return false
	}
	if b.capture.refused == "" {
		b.capture.refused = what + " cannot be part of a graph"
	}
	return true
}

// used notes device addresses the work being recorded reads or writes.
func (b *Backend) used(addrs ...uint64) {
	if b.capture == nil {
		return
	}
	for _, a := range addrs {
		if a != 0 {
			b.capture.addrs = append(b.capture.addrs, a)
		}
	}
}

// graphFreed drops the graphs that use the allocation at base, which the
// arena is about to free: its address may next hold another tensor.
func (b *Backend) graphFreed(base uint64) {
	for key, g := range b.graphs {
		if _, ok := slices.BinarySearch(g.uses, base); ok {
			b.destroyGraph(g)
			delete(b.graphs, key)
			b.graphStats.Invalidations++
		}
	}
}

func (b *Backend) destroyGraph(g *stepGraph) {
	if g.exec != 0 {
		mustCall(b.libs.driver.cuGraphExecDestroy, g.exec)
		g.exec = 0
	}
}

// QueueNTXent is NTXent without the read of its loss to the host: the
// three scalars stay on the device for ReadNTXent, so that the loss can be
// part of a step given to GraphStep.
func (b *Backend) QueueNTXent(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) {
	checkNTXent(n, d, tau, multilevel, z, dz)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(dz)
	b.queueNTXentLocked(n, d, tau, multilevel, z, dz)
}

// ReadNTXent returns the loss of the last NTXent or QueueNTXent queued
// (directly or by a replayed graph); multilevel must be as it was queued.
// It synchronises.
func (b *Backend) ReadNTXent(multilevel bool) tensor.LossResult {
	b.enter()
	defer b.leave()
	return b.readNTXentLocked(multilevel)
}

var _ tensor.StepGraphs = (*Backend)(nil)
