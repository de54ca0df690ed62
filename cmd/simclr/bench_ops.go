package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/simclr-go/simclr/tensor"
)

// opTimer is a backend that adds up, per kind of operation, the wall time
// and the process CPU time its calls take (bench --op-times). The ratio
// of the two says how well an operation keeps the workers busy: 2 on two
// fully used cores, 1 where one works and the other waits. Convolutions
// are told apart by shape, the layers of a network being where the time
// goes; the rest by operation. It synchronises the device before and
// after each timed call, so on a GPU the figures include the
// synchronisation and the step runs slower than it would.
type opTimer struct {
	tensor.Backend
	ops map[string]*opTime
}

type opTime struct {
	name      string
	calls     int
	wall, cpu time.Duration
}

func newOpTimer(b tensor.Backend) *opTimer {
	return &opTimer{Backend: b, ops: map[string]*opTime{}}
}

// reset forgets what was timed (the warm-up step).
func (t *opTimer) reset() { clear(t.ops) }

func (t *opTimer) timed(name string, fn func()) {
	t.Backend.Sync()
	cpu0, _ := processCPUTime()
	start := time.Now()
	fn()
	t.Backend.Sync()
	wall := time.Since(start)
	cpu1, _ := processCPUTime()
	o := t.ops[name]
	if o == nil {
		o = &opTime{name: name}
		t.ops[name] = o
	}
	o.calls++
	o.wall += wall
	o.cpu += cpu1 - cpu0
}

func convName(dir string, s tensor.ConvShape) string {
	return fmt.Sprintf("conv %s %dx%d/%d %d->%d at %dx%d", dir, s.R, s.S, s.Stride, s.C, s.K, s.H, s.W)
}

func (t *opTimer) Conv2dForward(s tensor.ConvShape, x, w, y tensor.Buffer) {
	t.timed(convName("forward", s), func() { t.Backend.Conv2dForward(s, x, w, y) })
}

func (t *opTimer) Conv2dBackward(s tensor.ConvShape, x, w, dy, dx, dw tensor.Buffer) {
	t.timed(convName("backward", s), func() { t.Backend.Conv2dBackward(s, x, w, dy, dx, dw) })
}

func (t *opTimer) BatchNormForwardTrain(s tensor.BNShape, x, gamma, beta, y, mean, invStd, runMean, runVar tensor.Buffer) {
	t.timed("batch norm forward", func() {
		t.Backend.BatchNormForwardTrain(s, x, gamma, beta, y, mean, invStd, runMean, runVar)
	})
}

func (t *opTimer) BatchNormAddReLUForwardTrain(s tensor.BNShape, x, gamma, beta, residual, y, mean, invStd, runMean, runVar tensor.Buffer) {
	t.timed("batch norm + add + ReLU forward", func() {
		t.Backend.BatchNormAddReLUForwardTrain(s, x, gamma, beta, residual, y, mean, invStd, runMean, runVar)
	})
}

func (t *opTimer) BatchNormBackward(s tensor.BNShape, x, dy, gamma, mean, invStd, dx, dgamma, dbeta tensor.Buffer) {
	t.timed("batch norm backward", func() {
		t.Backend.BatchNormBackward(s, x, dy, gamma, mean, invStd, dx, dgamma, dbeta)
	})
}

func (t *opTimer) ReLUForward(x, y tensor.Buffer) {
	t.timed("ReLU forward", func() { t.Backend.ReLUForward(x, y) })
}

func (t *opTimer) ReLUBackward(y, dy, dx tensor.Buffer) {
	t.timed("ReLU backward", func() { t.Backend.ReLUBackward(y, dy, dx) })
}

func (t *opTimer) GlobalAvgPoolForward(n, c, hw int, x, y tensor.Buffer) {
	t.timed("average pool forward", func() { t.Backend.GlobalAvgPoolForward(n, c, hw, x, y) })
}

func (t *opTimer) GlobalAvgPoolBackward(n, c, hw int, dy, dx tensor.Buffer) {
	t.timed("average pool backward", func() { t.Backend.GlobalAvgPoolBackward(n, c, hw, dy, dx) })
}

func (t *opTimer) LinearForward(n, in, out int, x, w, bias, y tensor.Buffer) {
	t.timed("linear forward", func() { t.Backend.LinearForward(n, in, out, x, w, bias, y) })
}

func (t *opTimer) LinearBackward(n, in, out int, x, w, dy, dx, dw, db tensor.Buffer) {
	t.timed("linear backward", func() { t.Backend.LinearBackward(n, in, out, x, w, dy, dx, dw, db) })
}

func (t *opTimer) NTXent(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) tensor.LossResult {
	var r tensor.LossResult
	t.timed("NT-Xent loss", func() { r = t.Backend.NTXent(n, d, tau, multilevel, z, dz) })
	return r
}

func (t *opTimer) SGDStep(c tensor.SGDConfig, w, g, v tensor.Buffer) {
	t.timed("SGD step", func() { t.Backend.SGDStep(c, w, g, v) })
}

func (t *opTimer) Add(out, a, b tensor.Buffer) {
	t.timed("add", func() { t.Backend.Add(out, a, b) })
}

func (t *opTimer) Copy(dst, src tensor.Buffer) {
	t.timed("copy", func() { t.Backend.Copy(dst, src) })
}

func (t *opTimer) Zero(x tensor.Buffer) {
	t.timed("zero", func() { t.Backend.Zero(x) })
}

// opTimeRow is one line of the --op-times table, per step.
type opTimeRow struct {
	Op           string  `json:"op"`
	CallsPerStep float64 `json:"calls_per_step"`
	WallMS       float64 `json:"wall_ms_per_step"`
	CPUMS        float64 `json:"cpu_ms_per_step"`
}

// rows returns the timed operations per step, longest wall time first.
func (t *opTimer) rows(steps int) []opTimeRow {
	var rows []opTimeRow
	for _, o := range t.ops {
		rows = append(rows, opTimeRow{Op: o.name, CallsPerStep: float64(o.calls) / float64(steps),
			WallMS: o.wall.Seconds() * 1e3 / float64(steps), CPUMS: o.cpu.Seconds() * 1e3 / float64(steps)})
	}
	slices.SortFunc(rows, func(a, b opTimeRow) int { return cmp.Compare(b.WallMS, a.WallMS) })
	return rows
}

// writeOpTimes prints rows as a table, with what the step spent outside
// the timed operations.
func writeOpTimes(w io.Writer, rows []opTimeRow, stepMS float64) {
	fmt.Fprintf(w, "\n%-44s %8s %10s %10s %8s\n", "operation (per step)", "calls", "wall ms", "CPU ms", "CPU/wall")
	var wall float64
	for _, r := range rows {
		ratio := 0.0
		if r.WallMS > 0 {
			ratio = r.CPUMS / r.WallMS
		}
		fmt.Fprintf(w, "%-44s %8.1f %10.2f %10.2f %8.2f\n", r.Op, r.CallsPerStep, r.WallMS, r.CPUMS, ratio)
		wall += r.WallMS
	}
	fmt.Fprintf(w, "%-44s %8s %10.2f\n", "outside the timed operations", "", stepMS-wall)
}
