package cuda

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/tensor"
)

// The backend-API path on the emulator, whose two fake engines per
// operation are described in cudaemu/csrc/cudnn.c: engine 0 (tensor
// cores, a workspace) needs channel counts that are multiples of 8,
// engine 1 runs anything. Parity with the CPU is TestParityConvGraph and
// TestParityBF16ConvGraph; these tests check the plan cache, the engine
// choice, the fallback and the errors.

func TestResolveConvAPI(t *testing.T) {
	tests := []struct {
		opt, env, want string
		errHas         []string
	}{
		{"", "", ConvAPILegacy, nil},
		{"", ConvAPIGraph, ConvAPIGraph, nil},
		{ConvAPIGraphOnly, ConvAPILegacy, ConvAPIGraphOnly, nil},
		{ConvAPILegacy, ConvAPIGraph, ConvAPILegacy, nil},
		{"cudnn-frontend", "", "", []string{"Options.ConvAPI", `"cudnn-frontend"`, "legacy, graph or graph-only"}},
		{"", "Graph", "", []string{ConvAPIEnv, `"Graph"`, "legacy, graph or graph-only"}},
	}
	for _, tc := range tests {
		got, err := resolveConvAPI(tc.opt, tc.env)
		if tc.errHas == nil {
			if err != nil || got != tc.want {
				t.Errorf("resolveConvAPI(%q, %q) = %q, %v; want %q", tc.opt, tc.env, got, err, tc.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("resolveConvAPI(%q, %q) = %q, want an error", tc.opt, tc.env, got)
			continue
		}
		for _, w := range tc.errHas {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("resolveConvAPI(%q, %q) error %q does not name %s", tc.opt, tc.env, err, w)
			}
		}
	}
}

func TestResolveGraphTune(t *testing.T) {
	tests := []struct {
		opt    int
		env    string
		want   int
		errHas string
	}{
		{0, "", 1, ""},
		{0, "4", 4, ""},
		{2, "4", 2, ""},
		{0, "0", 0, GraphTuneEnv},
		{0, "all", 0, GraphTuneEnv},
		{-1, "", 0, "Options.GraphTune"},
	}
	for _, tc := range tests {
		got, err := resolveGraphTune(tc.opt, tc.env)
		if tc.errHas == "" && (err != nil || got != tc.want) {
			t.Errorf("resolveGraphTune(%d, %q) = %d, %v; want %d", tc.opt, tc.env, got, err, tc.want)
		}
		if tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)) {
			t.Errorf("resolveGraphTune(%d, %q) = %d, %v; want an error naming %s", tc.opt, tc.env, got, err, tc.errHas)
		}
	}
}

func TestNotesAllowed(t *testing.T) {
	tests := []struct {
		notes   []int32
		fp32    bool
		allowed bool
	}{
		{nil, true, true},
		{nil, false, true},
		{[]int32{noteTensorCore}, false, true},
		{[]int32{noteTensorCore}, true, false},
		{[]int32{noteTensorCore, noteDownConvertInputs}, false, false},
		{[]int32{noteReducedPrecisionReduction}, false, false},
		{[]int32{4 /* NONDETERMINISTIC */, 5 /* WINOGRAD */}, true, true},
	}
	for _, tc := range tests {
		why := notesAllowed(tc.notes, tc.fp32)
		if (why == "") != tc.allowed {
			t.Errorf("notesAllowed(%s, fp32=%v) = %q, want allowed=%v", noteList(tc.notes), tc.fp32, why, tc.allowed)
		}
	}
}

// openEmu opens the backend on the emulator with the given options.
func openEmu(t *testing.T, opts Options) *Backend {
	t.Helper()
	useEmulator(t)
	b, err := Open(opts)
	if err != nil {
		t.Fatalf("Open(%+v) on the emulator: %v", opts, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// convStep runs forward and backward (with dx) of s on random data.
func convStep(b *Backend, s tensor.ConvShape) {
	x, w, y := b.Alloc(s.InLen()), b.Alloc(s.WeightLen()), b.Alloc(s.OutLen())
	dx, dw := b.Alloc(s.InLen()), b.Alloc(s.WeightLen())
	b.Conv2dForward(s, x, w, y)
	b.Conv2dBackward(s, x, w, y, dx, dw)
	for _, buf := range []tensor.Buffer{x, w, y, dx, dw} {
		b.Free(buf)
	}
}

// TestConvGraphPlanCache: one plan per shape and direction, made on first
// use and reused after; each call runs through it (none on the legacy
// API); the engine chosen is the first the heuristics list that runs the
// shape, and its workspace comes from the shared workspace block.
func TestConvGraphPlanCache(t *testing.T) {
	var log bytes.Buffer
	b := openEmu(t, Options{Precision: "bf16", ConvAPI: ConvAPIGraphOnly, AlgoLog: &log})
	wide := tensor.ConvShape{N: 2, C: 16, H: 8, W: 8, K: 32, R: 3, S: 3, Stride: 1, Pad: 1}
	odd := tensor.ConvShape{N: 2, C: 5, H: 7, W: 9, K: 6, R: 3, S: 2, Stride: 2, Pad: 1}
	steps := []struct {
		s                   tensor.ConvShape
		builds, graph       int
		engine              int64
		needsWorkspaceBlock bool
	}{
		{wide, 3, 3, 0, true},
		{wide, 3, 6, 0, true}, // cached
		{odd, 6, 9, 1, false}, // engine 0 refuses C=5
		{odd, 6, 12, 1, false},
		{wide, 6, 15, 0, true},
	}
	for i, st := range steps {
		convStep(b, st.s)
		if err := b.Sync(); err != nil {
			t.Fatalf("step %d (%s): %v", i, st.s, err)
		}
		if b.graphAttempts != st.builds || b.convCalls.graph != st.graph || b.convCalls.legacy != 0 {
			t.Errorf("step %d (%s): %d plans built, %d graph and %d legacy calls; want %d, %d and 0",
				i, st.s, b.graphAttempts, b.convCalls.graph, b.convCalls.legacy, st.builds, st.graph)
		}
		p := b.convPlans[st.s]
		for d, g := range p.graph {
			if g == nil {
				t.Fatalf("step %d (%s): no %s plan cached", i, st.s, convDir(d))
			}
			if g.engine != st.engine {
				t.Errorf("step %d (%s): %s runs engine %d, want %d", i, st.s, convDir(d), g.engine, st.engine)
			}
			if (g.ws > 0) != st.needsWorkspaceBlock {
				t.Errorf("step %d (%s): %s plan workspace %d bytes", i, st.s, convDir(d), g.ws)
			}
			if ws := b.scratch["the cuDNN convolution workspace"]; g.ws > 0 && (ws == nil || ws.bytes < g.ws) {
				t.Errorf("step %d (%s): the shared workspace block does not hold the plan's %d bytes", i, st.s, g.ws)
			}
		}
	}
	// The backward pass without dx uses the cached filter-gradient plan.
	x, w, dy, dw := b.Alloc(odd.InLen()), b.Alloc(odd.WeightLen()), b.Alloc(odd.OutLen()), b.Alloc(odd.WeightLen())
	b.Conv2dBackward(odd, x, w, dy, nil, dw)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if b.graphAttempts != 6 || b.convCalls.graph != 16 {
		t.Errorf("backward without dx: %d plans built, %d graph calls; want 6 and 16", b.graphAttempts, b.convCalls.graph)
	}
	out := log.String()
	for _, want := range []string{
		"cudnn graph forward " + wide.String() + " (bf16 NHWC): * heuristic A #0 engine 0 (notes TENSOR_CORE)",
		"cudnn graph backward-filter " + odd.String() + " (bf16 NHWC):   heuristic A #0 engine 0 (notes TENSOR_CORE): cuda: cudnnBackendFinalize(EXECUTION_PLAN_DESCRIPTOR)",
		"CUDNN_STATUS_NOT_SUPPORTED_SHAPE",
		"cudnn graph backward-data " + odd.String() + " (bf16 NHWC): * heuristic A #1 engine 1 (notes none)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the algorithm log lacks %q; it reads:\n%s", want, out)
		}
	}
}

// TestConvGraphFallback: a shape no engine runs, or a cuDNN whose graphs
// do not finalize, runs on the legacy API under ConvAPIGraph, the reason
// logged, with the legacy result; under ConvAPIGraphOnly it is one error
// naming the call, the shape and the way out.
func TestConvGraphFallback(t *testing.T) {
	s := tensor.ConvShape{N: 2, C: 32, H: 6, W: 6, K: 16, R: 3, S: 3, Stride: 1, Pad: 1}
	tests := []struct {
		name, env, val, api string
		has                 []string // in the log (graph) or the error (graph-only)
	}{
		{"shape no engine runs/graph", "SIMCLR_CUDA_EMU_CUDNN_GRAPH_MAX_C", "16", ConvAPIGraph,
			[]string{"no usable engine for forward " + s.String(), "heuristic A #0 engine 0", "heuristic FALLBACK #0 engine 1",
				"CUDNN_STATUS_NOT_SUPPORTED_SHAPE", "run on cuDNN's legacy API"}},
		{"shape no engine runs/graph-only", "SIMCLR_CUDA_EMU_CUDNN_GRAPH_MAX_C", "16", ConvAPIGraphOnly,
			[]string{"no usable engine for forward " + s.String(), "CUDNN_STATUS_NOT_SUPPORTED_SHAPE", ConvAPIEnv + "=graph"}},
		{"graph does not finalize/graph", "SIMCLR_CUDA_EMU_CUDNN_NO_GRAPH", "1", ConvAPIGraph,
			[]string{"cudnnBackendFinalize(OPERATIONGRAPH_DESCRIPTOR) for forward " + s.String(), "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN",
				"run on cuDNN's legacy API"}},
		{"graph does not finalize/graph-only", "SIMCLR_CUDA_EMU_CUDNN_NO_GRAPH", "1", ConvAPIGraphOnly,
			[]string{"cudnnBackendFinalize(OPERATIONGRAPH_DESCRIPTOR) for forward " + s.String(), "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN",
				ConvAPIEnv + "=graph"}},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	randn := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.env, tc.val)
			var log bytes.Buffer
			b := openEmu(t, Options{Precision: "fp32", ConvAPI: tc.api, AlgoLog: &log})
			xh, wh := randn(s.InLen()), randn(s.WeightLen())
			x, w, y := b.Alloc(s.InLen()), b.Alloc(s.WeightLen()), b.Alloc(s.OutLen())
			b.Upload(x, xh)
			b.Upload(w, wh)
			b.Conv2dForward(s, x, w, y)
			err := b.Sync()
			if tc.api == ConvAPIGraphOnly {
				if err == nil {
					t.Fatalf("graph-only ran a convolution the backend API cannot")
				}
				for _, want := range tc.has {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("graph with a legacy fallback: %v", err)
			}
			for _, want := range tc.has {
				if !strings.Contains(log.String(), want) {
					t.Errorf("the log lacks %q; it reads:\n%s", want, log.String())
				}
			}
			if b.convFallbacks != 1 || b.convCalls.legacy != 1 || b.convCalls.graph != 0 {
				t.Errorf("%d fallbacks, %d legacy and %d graph calls; want 1, 1 and 0", b.convFallbacks, b.convCalls.legacy, b.convCalls.graph)
			}
			// The fallback is tried once per shape and direction.
			b.Conv2dForward(s, x, w, y)
			if err := b.Sync(); err != nil || b.convFallbacks != 1 || b.graphAttempts != 1 {
				t.Errorf("second call: %v, %d fallbacks, %d plans tried; want 1 and 1", err, b.convFallbacks, b.graphAttempts)
			}
			got := make([]float32, s.OutLen())
			b.Download(got, y)
			c := cpu.New()
			xc, wc, yc := c.Alloc(s.InLen()), c.Alloc(s.WeightLen()), c.Alloc(s.OutLen())
			c.Upload(xc, xh)
			c.Upload(wc, wh)
			c.Conv2dForward(s, xc, wc, yc)
			want := cpu.Data(yc)
			var worst, scale float64
			for i := range want {
				worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
				scale = math.Max(scale, math.Abs(float64(want[i])))
			}
			if !(worst <= 1e-4*scale) {
				t.Errorf("the legacy fallback's result differs from the CPU's by %g (scale %g)", worst, scale)
			}
		})
	}
}

// TestConvGraphBadAttribute: a descriptor attribute of the wrong type or
// count, or a descriptor finalized without one it needs, is an error
// naming the call, the descriptor, the attribute and cuDNN's status.
func TestConvGraphBadAttribute(t *testing.T) {
	b := openEmu(t, Options{Precision: "bf16", ConvAPI: ConvAPIGraph})
	tests := []struct {
		name string
		do   func(g *graphCalls)
		has  []string
	}{
		{"wrong type", func(g *graphCalls) {
			d := g.create(bkConvolution)
			v := []float64{1, 1}
			g.set(d, bkConvolution, baConvDilations, btDouble, 2, unsafe.Pointer(&v[0]))
		}, []string{"cudnnBackendSetAttribute(CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_DILATIONS, 2 x DOUBLE)", "CUDNN_STATUS_BAD_PARAM"}},
		{"wrong count", func(g *graphCalls) {
			d := g.create(bkConvolution)
			g.setInt64s(d, bkConvolution, baConvPrePaddings, 1, 1, 1)
		}, []string{"cudnnBackendSetAttribute(CONVOLUTION_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 3 x INT64)", "CUDNN_STATUS_BAD_PARAM"}},
		{"attribute of another descriptor", func(g *graphCalls) {
			d := g.create(bkTensor)
			g.setInt64s(d, bkTensor, baConvSpatialDims, 2)
		}, []string{"cudnnBackendSetAttribute(TENSOR_DESCRIPTOR, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 1 x INT64)", "CUDNN_STATUS_BAD_PARAM"}},
		{"operation attribute of the wrong direction", func(g *graphCalls) {
			d := g.create(bkOpConvBwdData)
			g.setFloat(d, bkOpConvBwdData, baOpConvForwardAlpha, 1)
		}, []string{"CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA", "OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR", "CUDNN_STATUS_BAD_PARAM"}},
		{"finalized without its data type", func(g *graphCalls) {
			d := g.create(bkTensor)
			g.setInt64s(d, bkTensor, baTensorDims, 1, 2, 3, 4)
			g.finalize(d, bkTensor)
		}, []string{"cudnnBackendFinalize(TENSOR_DESCRIPTOR) for test", "CUDNN_STATUS_BAD_PARAM"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b.enter()
			defer b.leave()
			g := &graphCalls{c: &b.libs.cudnn, subject: "test"}
			tc.do(g)
			g.destroy()
			if g.err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.has {
				if !strings.Contains(g.err.Error(), w) {
					t.Errorf("error %q does not name %q", g.err, w)
				}
			}
		})
	}
	// None of it touched the backend's state.
	if err := b.Sync(); err != nil {
		t.Errorf("the backend holds an error after the descriptor errors: %v", err)
	}
}

// TestConvGraphTune: with GraphTune 2 both engines the heuristics rank
// are timed on the call's own buffers (each run writes the output), one
// is kept, and the call's result is still the convolution's: the timing
// runs are not counted as calls and leave no trace in the outputs.
func TestConvGraphTune(t *testing.T) {
	var log bytes.Buffer
	b := openEmu(t, Options{Precision: "fp32", ConvAPI: ConvAPIGraphOnly, GraphTune: 2, AlgoLog: &log})
	s := tensor.ConvShape{N: 2, C: 8, H: 5, W: 5, K: 8, R: 3, S: 3, Stride: 1, Pad: 1}
	rng := rand.New(rand.NewPCG(7, 8))
	randn := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	xh, wh, dyh := randn(s.InLen()), randn(s.WeightLen()), randn(s.OutLen())
	x, w, y, dy := b.Alloc(s.InLen()), b.Alloc(s.WeightLen()), b.Alloc(s.OutLen()), b.Alloc(s.OutLen())
	dx, dw := b.Alloc(s.InLen()), b.Alloc(s.WeightLen())
	b.Upload(x, xh)
	b.Upload(w, wh)
	b.Upload(dy, dyh)
	b.Conv2dForward(s, x, w, y)
	b.Conv2dBackward(s, x, w, dy, dx, dw)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if b.graphAttempts != 3 || b.convCalls.graph != 3 || b.convCalls.legacy != 0 {
		t.Errorf("%d plans tried, %d graph and %d legacy calls; want 3, 3 and 0", b.graphAttempts, b.convCalls.graph, b.convCalls.legacy)
	}
	// fp32 passes over engine 0 (tensor cores): the candidates are
	// engine 1 of mode A and engine 1 of the fallback mode.
	for _, d := range []convDir{dirForward, dirBackwardData, dirBackwardFilter} {
		tag := "cudnn graph " + d.String() + " " + s.String() + " (fp32 NCHW):"
		var timed, chosen int
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.HasPrefix(line, tag) && strings.HasSuffix(line, " ms") {
				timed++
				if strings.HasPrefix(line, tag+" *") {
					chosen++
				}
			}
		}
		if timed != 2 || chosen != 1 {
			t.Errorf("%s: %d candidates timed, %d chosen; want 2 and 1; the log reads:\n%s", d, timed, chosen, log.String())
		}
	}
	c := cpu.New()
	both := func(h []float32) tensor.Buffer { v := c.Alloc(len(h)); c.Upload(v, h); return v }
	xc, wc, dyc := both(xh), both(wh), both(dyh)
	yc, dxc, dwc := c.Alloc(s.OutLen()), c.Alloc(s.InLen()), c.Alloc(s.WeightLen())
	c.Conv2dForward(s, xc, wc, yc)
	c.Conv2dBackward(s, xc, wc, dyc, dxc, dwc)
	for _, r := range []struct {
		name string
		g, c tensor.Buffer
	}{{"y", y, yc}, {"dx", dx, dxc}, {"dw", dw, dwc}} {
		got, want := make([]float32, r.g.Len()), cpu.Data(r.c)
		b.Download(got, r.g)
		var worst, scale float64
		for i := range want {
			worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
			scale = math.Max(scale, math.Abs(float64(want[i])))
		}
		if !(worst <= 1e-4*scale) {
			t.Errorf("%s after tuning differs from the CPU's by %g (scale %g)", r.name, worst, scale)
		}
	}
}
