package cuda

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

// Convolutions through cuDNN's backend (graph) API. The legacy API
// (cudnnFindConvolution*, conv.go) offers each direction a fixed list of
// algorithms, and for bf16 NHWC that list holds only implicit-GEMM
// kernels; the backend API reaches cuDNN's engines, among them the fast
// bf16 tensor-core kernels. For each convolution shape and direction the
// backend describes the one operation as a graph (tensors of the layout
// convLayout gives, a convolution descriptor, the operation), asks the
// engine heuristics (mode A, then the fallback mode) for engine configs,
// and keeps the first whose numerical notes the precision allows, whose
// execution plan finalizes and whose workspace fits the bound (or, with
// Options.GraphTune above 1, the fastest of the first such configs, timed
// on the call's buffers). The plan is made once per shape and direction
// and kept in the shape's convPlan; each call then sets its buffers in a
// variant pack and executes.
//
// Options.ConvAPI chooses the path: "legacy", "graph" (a shape and
// direction with no usable plan runs on the legacy API, the reason
// written to the algorithm log, or to stderr without one) or
// "graph-only" (no such fallback: the reason is the backend's error).

// The values of Options.ConvAPI.
const (
	ConvAPILegacy    = "legacy"
	ConvAPIGraph     = "graph"
	ConvAPIGraphOnly = "graph-only"
)

// ConvAPIEnv names the environment variable that chooses the convolution
// path when Options.ConvAPI is empty (so that a built program can be
// compared on both without a flag of its own).
const ConvAPIEnv = "SIMCLR_CUDNN_CONV_API"

// GraphTuneEnv names the environment variable that sets Options.GraphTune
// when that is 0.
const GraphTuneEnv = "SIMCLR_CUDNN_GRAPH_TUNE"

// ValidConvAPI reports whether api is an accepted Options.ConvAPI.
func ValidConvAPI(api string) error {
	switch api {
	case "", ConvAPILegacy, ConvAPIGraph, ConvAPIGraphOnly:
		return nil
	}
	return fmt.Errorf("unknown cuDNN convolution API %q: use %s, %s or %s", api, ConvAPILegacy, ConvAPIGraph, ConvAPIGraphOnly)
}

// convDir is one of a convolution's three directions.
type convDir int

const (
	dirForward convDir = iota
	dirBackwardData
	dirBackwardFilter
)

func (d convDir) String() string {
	return [...]string{"forward", "backward-data", "backward-filter"}[d]
}

// cuDNN backend API constants (cudnn_graph.h of cuDNN 9).
const (
	// cudnnBackendDescriptorType_t
	bkConvolution     = 1
	bkEngine          = 2
	bkEngineCfg       = 3
	bkEngineHeur      = 4
	bkExecutionPlan   = 5
	bkOpConvForward   = 10
	bkOpConvBwdFilter = 11
	bkOpConvBwdData   = 12
	bkOperationGraph  = 15
	bkVariantPack     = 16
	bkTensor          = 17
	// cudnnBackendAttributeType_t
	btHandle          = 0
	btDataType        = 1
	btInt64           = 3
	btFloat           = 4
	btDouble          = 5
	btVoidPtr         = 6
	btConvolutionMode = 7
	btHeurMode        = 8
	btNumericalNote   = 11
	btDescriptor      = 15
	// cudnnBackendAttributeName_t
	baConvCompType       = 100
	baConvMode           = 101
	baConvDilations      = 102
	baConvFilterStrides  = 103
	baConvPostPaddings   = 104
	baConvPrePaddings    = 105
	baConvSpatialDims    = 106
	baHeurMode           = 200
	baHeurGraph          = 201
	baHeurResults        = 202
	baCfgEngine          = 300
	baPlanHandle         = 400
	baPlanEngineCfg      = 401
	baPlanWorkspaceSize  = 402
	baOpConvForwardAlpha = 700 // then beta, conv, w, x, y
	baOpConvBwdDataAlpha = 706 // then beta, conv, w, dx, dy
	baOpConvBwdFiltAlpha = 712 // then beta, conv, dw, x, dy
	baGraphHandle        = 800
	baGraphOps           = 801
	baTensorAlignment    = 900
	baTensorDataType     = 901
	baTensorDims         = 902
	baTensorStrides      = 903
	baTensorUID          = 906
	baPackUIDs           = 1000
	baPackPointers       = 1001
	baPackWorkspace      = 1003
	baEngineGlobalIndex  = 1301
	baEngineNumNote      = 1303
	// cudnnBackendHeurMode_t
	heurModeFallback = 2
	heurModeA        = 3
	// cudnnBackendNumericalNote_t
	noteTensorCore                = 0
	noteDownConvertInputs         = 1
	noteReducedPrecisionReduction = 2
	noteTypeCount                 = 10
	// The tensors' unique ids in a convolution's graph and variant pack.
	uidX = 'x'
	uidW = 'w'
	uidY = 'y'
	// graphAlignment is the byte alignment the tensors are declared with;
	// every buffer and scratch block starts on a 256-byte boundary
	// (the arena's), and execute checks it.
	graphAlignment = 16
)

// Names for errors and logs.
var (
	bkNames = map[int]string{bkConvolution: "CONVOLUTION_DESCRIPTOR", bkEngine: "ENGINE_DESCRIPTOR", bkEngineCfg: "ENGINECFG_DESCRIPTOR",
		bkEngineHeur: "ENGINEHEUR_DESCRIPTOR", bkExecutionPlan: "EXECUTION_PLAN_DESCRIPTOR",
		bkOpConvForward: "OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR", bkOpConvBwdFilter: "OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR",
		bkOpConvBwdData: "OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR", bkOperationGraph: "OPERATIONGRAPH_DESCRIPTOR",
		bkVariantPack: "VARIANT_PACK_DESCRIPTOR", bkTensor: "TENSOR_DESCRIPTOR"}
	btNames = map[int]string{btHandle: "HANDLE", btDataType: "DATA_TYPE", btInt64: "INT64", btFloat: "FLOAT", btDouble: "DOUBLE",
		btVoidPtr: "VOID_PTR", btConvolutionMode: "CONVOLUTION_MODE", btHeurMode: "HEUR_MODE", btNumericalNote: "NUMERICAL_NOTE",
		btDescriptor: "BACKEND_DESCRIPTOR"}
	baNames = map[int]string{baConvCompType: "CONVOLUTION_COMP_TYPE", baConvMode: "CONVOLUTION_CONV_MODE",
		baConvDilations: "CONVOLUTION_DILATIONS", baConvFilterStrides: "CONVOLUTION_FILTER_STRIDES",
		baConvPostPaddings: "CONVOLUTION_POST_PADDINGS", baConvPrePaddings: "CONVOLUTION_PRE_PADDINGS",
		baConvSpatialDims: "CONVOLUTION_SPATIAL_DIMS", baHeurMode: "ENGINEHEUR_MODE", baHeurGraph: "ENGINEHEUR_OPERATION_GRAPH",
		baHeurResults: "ENGINEHEUR_RESULTS", baCfgEngine: "ENGINECFG_ENGINE", baPlanHandle: "EXECUTION_PLAN_HANDLE",
		baPlanEngineCfg: "EXECUTION_PLAN_ENGINE_CONFIG", baPlanWorkspaceSize: "EXECUTION_PLAN_WORKSPACE_SIZE",
		baGraphHandle: "OPERATIONGRAPH_HANDLE", baGraphOps: "OPERATIONGRAPH_OPS", baTensorAlignment: "TENSOR_BYTE_ALIGNMENT",
		baTensorDataType: "TENSOR_DATA_TYPE", baTensorDims: "TENSOR_DIMENSIONS", baTensorStrides: "TENSOR_STRIDES",
		baTensorUID: "TENSOR_UNIQUE_ID", baPackUIDs: "VARIANT_PACK_UNIQUE_IDS", baPackPointers: "VARIANT_PACK_DATA_POINTERS",
		baPackWorkspace: "VARIANT_PACK_WORKSPACE", baEngineGlobalIndex: "ENGINE_GLOBAL_INDEX", baEngineNumNote: "ENGINE_NUMERICAL_NOTE"}
	noteNames = []string{"TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION", "FFT", "NONDETERMINISTIC", "WINOGRAD",
		"WINOGRAD_TILE_4x4", "WINOGRAD_TILE_6x6", "WINOGRAD_TILE_13x13", "STRICT_NAN_PROP"}
)

func nameOf(m map[int]string, v int) string {
	if n, ok := m[v]; ok {
		return n
	}
	return fmt.Sprint(v)
}

func opAttrName(attr int) string {
	if n, ok := baNames[attr]; ok {
		return "CUDNN_ATTR_" + n
	}
	if attr >= baOpConvForwardAlpha && attr < baOpConvBwdFiltAlpha+6 {
		op := [...]string{"FORWARD", "BWD_DATA", "BWD_FILTER"}[(attr-baOpConvForwardAlpha)/6]
		slot := [3][6]string{{"ALPHA", "BETA", "CONV_DESC", "W", "X", "Y"}, {"ALPHA", "BETA", "CONV_DESC", "W", "DX", "DY"},
			{"ALPHA", "BETA", "CONV_DESC", "DW", "X", "DY"}}[(attr-baOpConvForwardAlpha)/6][(attr-baOpConvForwardAlpha)%6]
		return "CUDNN_ATTR_OPERATION_CONVOLUTION_" + op + "_" + slot
	}
	return fmt.Sprintf("attribute %d", attr)
}

// graphAPI is the backend API's entry points (optional: a cuDNN without
// them serves the legacy path only).
type graphAPI struct {
	create, destroy, setAttr, getAttr, finalize, execute uintptr
}

func (g *graphAPI) ok() bool { return g.create != 0 }

// graphCalls builds and queries backend descriptors, keeping the first
// error with the call, the descriptor type, the attribute and the shape
// it was for; every descriptor it creates is listed in made.
type graphCalls struct {
	c       *cudnnAPI
	subject string // the direction and shape, for errors
	made    []uintptr
	err     error
}

func (g *graphCalls) fail(call string, r uintptr) bool {
	if g.err != nil {
		return true
	}
	if err := g.c.check(call+" for "+g.subject, r); err != nil {
		g.err = err
		return true
	}
	return false
}

// create makes a descriptor of type typ (0 after an error).
func (g *graphCalls) create(typ int) uintptr {
	if g.err != nil {
		return 0
	}
	var d uintptr
	if g.fail("cudnnBackendCreateDescriptor("+nameOf(bkNames, typ)+")", mustCall(g.c.graph.create, uintptr(typ), uintptr(unsafe.Pointer(&d)))) {
		return 0
	}
	g.made = append(g.made, d)
	return d
}

// set sets attribute attr of d (of type typ) to n elements of attribute
// type at at p.
func (g *graphCalls) set(d uintptr, typ, attr, at, n int, p unsafe.Pointer) {
	if g.err != nil {
		return
	}
	g.fail(fmt.Sprintf("cudnnBackendSetAttribute(%s, %s, %d x %s)", nameOf(bkNames, typ), opAttrName(attr), n, nameOf(btNames, at)),
		mustCall(g.c.graph.setAttr, d, uintptr(attr), uintptr(at), uintptr(n), uintptr(p)))
}

func (g *graphCalls) setInt64s(d uintptr, typ, attr int, v ...int64) {
	g.set(d, typ, attr, btInt64, len(v), unsafe.Pointer(&v[0]))
	runtime.KeepAlive(v)
}

func (g *graphCalls) setEnum(d uintptr, typ, attr, at int, v int32) {
	g.set(d, typ, attr, at, 1, unsafe.Pointer(&v))
	runtime.KeepAlive(&v)
}

func (g *graphCalls) setDescs(d uintptr, typ, attr int, v ...uintptr) {
	g.set(d, typ, attr, btDescriptor, len(v), unsafe.Pointer(&v[0]))
	runtime.KeepAlive(v)
}

func (g *graphCalls) setFloat(d uintptr, typ, attr int, v float32) {
	g.set(d, typ, attr, btFloat, 1, unsafe.Pointer(&v))
	runtime.KeepAlive(&v)
}

func (g *graphCalls) setHandle(d uintptr, typ, attr int, h uintptr) {
	g.set(d, typ, attr, btHandle, 1, unsafe.Pointer(&h))
	runtime.KeepAlive(&h)
}

func (g *graphCalls) finalize(d uintptr, typ int) {
	if g.err == nil {
		g.fail("cudnnBackendFinalize("+nameOf(bkNames, typ)+")", mustCall(g.c.graph.finalize, d))
	}
}

// get reads up to len(out) elements of attribute attr of d into out and
// returns how many cuDNN gave (out may be nil: the count only).
func (g *graphCalls) get(d uintptr, typ, attr, at int, want int, out unsafe.Pointer) int {
	if g.err != nil {
		return 0
	}
	var n int64
	g.fail(fmt.Sprintf("cudnnBackendGetAttribute(%s, %s, %s)", nameOf(bkNames, typ), opAttrName(attr), nameOf(btNames, at)),
		mustCall(g.c.graph.getAttr, d, uintptr(attr), uintptr(at), uintptr(want), uintptr(unsafe.Pointer(&n)), uintptr(out)))
	return int(n)
}

// destroy destroys every descriptor made but those of keep.
func (g *graphCalls) destroy(keep ...uintptr) {
	for _, d := range g.made {
		kept := false
		for _, k := range keep {
			kept = kept || k == d
		}
		if !kept && d != 0 {
			mustCall(g.c.graph.destroy, d)
		}
	}
	g.made = nil
}

// graphPlan is one finalized execution plan of one shape and direction,
// with the descriptors it was made from (kept while it lives).
type graphPlan struct {
	plan   uintptr
	ws     uint64
	engine int64
	what   string // the heuristic, rank, engine and notes, for logs
	keep   []uintptr
}

func (p *graphPlan) destroy(c *cudnnAPI) {
	for i := len(p.keep) - 1; i >= 0; i-- {
		mustCall(c.graph.destroy, p.keep[i])
	}
	p.keep = nil
}

// packedStrides gives the strides of a packed (n, c, h, w) array: NCHW
// order, or NHWC (c varying fastest).
func packedStrides(format uintptr, c, h, w int) []int64 {
	if format == cudnnTensorNHWC {
		return []int64{int64(h * w * c), 1, int64(w * c), int64(c)}
	}
	return []int64{int64(c * h * w), int64(h * w), int64(w), 1}
}

// notesAllowed reports whether an engine of these numerical notes keeps
// the precision's arithmetic (why not, else ""): fp32 no tensor cores and
// no reduced precision; tf32 no conversion of its fp32 inputs to fp16 or
// bf16; every precision sums in fp32.
func notesAllowed(notes []int32, fp32 bool) string {
	for _, n := range notes {
		switch {
		case n == noteReducedPrecisionReduction:
			return "sums in reduced precision"
		case n == noteDownConvertInputs:
			return "converts its inputs down"
		case fp32 && n == noteTensorCore:
			return "runs on tensor cores, which fp32 does not allow"
		}
	}
	return ""
}

func noteList(notes []int32) string {
	if len(notes) == 0 {
		return "none"
	}
	s := make([]string, len(notes))
	for i, n := range notes {
		if int(n) < len(noteNames) {
			s[i] = noteNames[n]
		} else {
			s[i] = fmt.Sprint(n)
		}
	}
	return strings.Join(s, ",")
}

// graphCandidates are the usable plans of one shape and direction, in
// the heuristics' order, and the descriptors they share (the tensors, the
// convolution, the operation and its graph), which the chosen plan keeps.
type graphCandidates struct {
	plans    []*graphPlan
	shared   []uintptr
	rejected []string // the engine configs passed over, and why
}

// choose keeps plan i, destroying the others, and returns it with the
// shared descriptors in its keep.
func (gc *graphCandidates) choose(c *cudnnAPI, i int) *graphPlan {
	for j, p := range gc.plans {
		if j != i {
			p.destroy(c)
		}
	}
	p := gc.plans[i]
	p.keep = append(append([]uintptr{}, gc.shared...), p.keep...)
	return p
}

// buildGraphPlans makes up to want execution plans of direction dir of
// s, the first engine configs of the heuristics (mode A, then the
// fallback mode) that the precision allows, that finalize and that fit
// the workspace bound, or says why there is none.
func (b *Backend) buildGraphPlans(dir convDir, s tensor.ConvShape, want int) (*graphCandidates, error) {
	c := &b.libs.cudnn
	if !c.graph.ok() {
		return nil, fmt.Errorf("cuDNN at %s lacks the backend API (cudnnBackendCreateDescriptor)", c.lib.path)
	}
	b.graphAttempts++
	g := &graphCalls{c: c, subject: dir.String() + " " + s.String()}
	format, dtype := b.convLayout()
	tensorDesc := func(uid int64, n, ch, h, w int) uintptr {
		t := g.create(bkTensor)
		g.setEnum(t, bkTensor, baTensorDataType, btDataType, int32(dtype))
		g.setInt64s(t, bkTensor, baTensorDims, int64(n), int64(ch), int64(h), int64(w))
		g.setInt64s(t, bkTensor, baTensorStrides, packedStrides(format, ch, h, w)...)
		g.setInt64s(t, bkTensor, baTensorUID, uid)
		g.setInt64s(t, bkTensor, baTensorAlignment, graphAlignment)
		g.finalize(t, bkTensor)
		return t
	}
	x := tensorDesc(uidX, s.N, s.C, s.H, s.W)
	w := tensorDesc(uidW, s.K, s.C, s.R, s.S)
	y := tensorDesc(uidY, s.N, s.K, s.OutH(), s.OutW())
	conv := g.create(bkConvolution)
	g.setEnum(conv, bkConvolution, baConvCompType, btDataType, cudnnDataFloat)
	g.setEnum(conv, bkConvolution, baConvMode, btConvolutionMode, cudnnCrossCorrelation)
	g.setInt64s(conv, bkConvolution, baConvSpatialDims, 2)
	g.setInt64s(conv, bkConvolution, baConvPrePaddings, int64(s.Pad), int64(s.Pad))
	g.setInt64s(conv, bkConvolution, baConvPostPaddings, int64(s.Pad), int64(s.Pad))
	g.setInt64s(conv, bkConvolution, baConvDilations, 1, 1)
	g.setInt64s(conv, bkConvolution, baConvFilterStrides, int64(s.Stride), int64(s.Stride))
	g.finalize(conv, bkConvolution)
	opType, base := bkOpConvForward, baOpConvForwardAlpha
	switch dir {
	case dirBackwardData:
		opType, base = bkOpConvBwdData, baOpConvBwdDataAlpha
	case dirBackwardFilter:
		opType, base = bkOpConvBwdFilter, baOpConvBwdFiltAlpha
	}
	op := g.create(opType)
	g.setFloat(op, opType, base, 1)
	g.setFloat(op, opType, base+1, 0)
	g.setDescs(op, opType, base+2, conv)
	// Slots 3, 4, 5 hold the filter, the input and the output, or their
	// gradients, in every direction: forward W, X, Y; backward data W, DX,
	// DY; backward filter DW, X, DY.
	g.setDescs(op, opType, base+3, w)
	g.setDescs(op, opType, base+4, x)
	g.setDescs(op, opType, base+5, y)
	g.finalize(op, opType)
	graph := g.create(bkOperationGraph)
	g.setHandle(graph, bkOperationGraph, baGraphHandle, b.cudnnHandle)
	g.setDescs(graph, bkOperationGraph, baGraphOps, op)
	g.finalize(graph, bkOperationGraph)
	if g.err != nil {
		g.destroy()
		return nil, g.err
	}
	out := &graphCandidates{shared: []uintptr{x, w, y, conv, op, graph}}
	var rejected []string
modes:
	for _, mode := range []int32{heurModeA, heurModeFallback} {
		modeName := map[int32]string{heurModeA: "A", heurModeFallback: "FALLBACK"}[mode]
		heur := g.create(bkEngineHeur)
		g.setDescs(heur, bkEngineHeur, baHeurGraph, graph)
		g.setEnum(heur, bkEngineHeur, baHeurMode, btHeurMode, mode)
		g.finalize(heur, bkEngineHeur)
		count := g.get(heur, bkEngineHeur, baHeurResults, btDescriptor, 0, nil)
		if g.err != nil {
			// A mode that cannot rank this graph: the next may.
			rejected = append(rejected, fmt.Sprintf("heuristic %s: %v", modeName, g.err))
			g.err = nil
			continue
		}
		cfgs := make([]uintptr, count)
		for i := range cfgs {
			cfgs[i] = g.create(bkEngineCfg)
		}
		if count > 0 {
			count = min(count, g.get(heur, bkEngineHeur, baHeurResults, btDescriptor, count, unsafe.Pointer(&cfgs[0])))
			runtime.KeepAlive(cfgs)
		}
		if g.err != nil {
			rejected = append(rejected, fmt.Sprintf("heuristic %s: %v", modeName, g.err))
			g.err = nil
			continue
		}
		for i, cfg := range cfgs[:count] {
			engine := g.create(bkEngine)
			g.engineOf(cfg, engine)
			var index int64
			g.get(engine, bkEngine, baEngineGlobalIndex, btInt64, 1, unsafe.Pointer(&index))
			notes := make([]int32, noteTypeCount)
			notes = notes[:g.get(engine, bkEngine, baEngineNumNote, btNumericalNote, len(notes), unsafe.Pointer(&notes[0]))]
			what := fmt.Sprintf("heuristic %s #%d engine %d (notes %s)", modeName, i, index, noteList(notes))
			if g.err != nil {
				rejected = append(rejected, fmt.Sprintf("%s: %v", what, g.err))
				g.err = nil
				continue
			}
			if why := notesAllowed(notes, !b.tensorCores()); why != "" {
				rejected = append(rejected, what+": "+why)
				continue
			}
			plan := g.create(bkExecutionPlan)
			g.setHandle(plan, bkExecutionPlan, baPlanHandle, b.cudnnHandle)
			g.setDescs(plan, bkExecutionPlan, baPlanEngineCfg, cfg)
			g.finalize(plan, bkExecutionPlan)
			var ws int64
			g.get(plan, bkExecutionPlan, baPlanWorkspaceSize, btInt64, 1, unsafe.Pointer(&ws))
			if g.err != nil {
				rejected = append(rejected, fmt.Sprintf("%s: %v", what, g.err))
				g.err = nil
				continue
			}
			if uint64(ws) > b.opts.WorkspaceBytes {
				rejected = append(rejected, fmt.Sprintf("%s: needs a %s workspace, more than the %s bound", what, human(uint64(ws)), human(b.opts.WorkspaceBytes)))
				continue
			}
			out.plans = append(out.plans, &graphPlan{plan: plan, ws: uint64(ws), engine: index, what: what, keep: []uintptr{cfg, plan}})
			if len(out.plans) == want {
				break modes
			}
		}
		if count == 0 {
			rejected = append(rejected, "heuristic "+modeName+": no engine configs")
		}
	}
	out.rejected = rejected
	if len(out.plans) == 0 {
		g.destroy()
		return nil, fmt.Errorf("cuDNN's backend API has no usable engine for %s %s (%s): %s", dir, s, b.layoutTag(), strings.Join(rejected, "; "))
	}
	keep := append([]uintptr{}, out.shared...)
	for _, p := range out.plans {
		keep = append(keep, p.keep...)
	}
	g.destroy(keep...)
	return out, nil
}

// engineOf fills the new engine descriptor with the engine of cfg.
func (g *graphCalls) engineOf(cfg, engine uintptr) {
	e := []uintptr{engine}
	g.get(cfg, bkEngineCfg, baCfgEngine, btDescriptor, 1, unsafe.Pointer(&e[0]))
	runtime.KeepAlive(e)
}

// layoutTag names the data type and layout of the convolutions.
func (b *Backend) layoutTag() string {
	if b.bf16 {
		return "bf16 NHWC"
	}
	return b.opts.Precision + " NCHW"
}

// convLog is where the choice of plans and the fallbacks are written: the
// algorithm log, else stderr (a fallback changes the speed, and the user
// who asked for the graph API should learn of it).
func (b *Backend) convLog() io.Writer {
	if b.opts.AlgoLog != nil {
		return b.opts.AlgoLog
	}
	return os.Stderr
}

// graphPlanLocked returns the execution plan of direction dir of the
// shape of p, making it on first use (and timing the candidates on the
// buffers ptrs, as runGraph takes them, when Options.GraphTune asks), or
// nil when the legacy path runs it: under ConvAPILegacy, or under ConvAPIGraph when no plan could be
// made (logged once). Under ConvAPIGraphOnly that failure is the
// backend's error.
func (b *Backend) graphPlanLocked(p *convPlan, dir convDir, s tensor.ConvShape, ptrs [3]uintptr) *graphPlan {
	if b.convAPI == ConvAPILegacy || b.err != nil {
		return nil
	}
	if g := p.graph[dir]; g != nil {
		return g
	}
	if p.graphFailed[dir] {
		return nil
	}
	cands, err := b.buildGraphPlans(dir, s, max(b.graphTune, 1))
	if err == nil {
		g := b.pickGraphPlan(cands, dir, s, ptrs)
		p.graph[dir] = g
		return g
	}
	if b.convAPI == ConvAPIGraphOnly {
		b.fail(fmt.Errorf("cuda: %w (the convolution API is %s: set %s=%s, or Options.ConvAPI, to run such shapes on the legacy API)",
			err, ConvAPIGraphOnly, ConvAPIEnv, ConvAPIGraph))
		return nil
	}
	p.graphFailed[dir] = true
	b.convFallbacks++
	fmt.Fprintf(b.convLog(), "cuda: %v; this shape and direction run on cuDNN's legacy API\n", err)
	return nil
}

// pickGraphPlan keeps one of the candidates: the heuristics' first, or
// where there are several (Options.GraphTune) the fastest on the buffers
// ptrs: each runs once to warm up, then graphTuneRuns times between two
// stream synchronisations. The log (Options.AlgoLog) gets the engine
// configs passed over, the candidates and their times, the choice marked.
func (b *Backend) pickGraphPlan(gc *graphCandidates, dir convDir, s tensor.ConvShape, ptrs [3]uintptr) *graphPlan {
	c := &b.libs.cudnn
	times := make([]time.Duration, len(gc.plans))
	best := 0
	if len(gc.plans) > 1 {
		for i, g := range gc.plans {
			times[i] = -1
			if b.execGraph(g, dir, s, ptrs) != nil || b.syncLocked() != nil {
				continue
			}
			start := time.Now()
			failed := false
			for range graphTuneRuns {
				failed = failed || b.execGraph(g, dir, s, ptrs) != nil
			}
			if failed || b.syncLocked() != nil {
				continue
			}
			times[i] = time.Since(start) / graphTuneRuns
			if times[best] < 0 || times[i] < times[best] {
				best = i
			}
		}
	}
	if log := b.opts.AlgoLog; log != nil {
		tag := fmt.Sprintf("cudnn graph %s %s (%s):", dir, s, b.layoutTag())
		for _, r := range gc.rejected {
			fmt.Fprintf(log, "%s   %s\n", tag, r)
		}
		for i, g := range gc.plans {
			mark, timing := " ", ""
			if i == best {
				mark = "*"
			}
			switch {
			case len(gc.plans) == 1:
			case times[i] < 0:
				timing = " (failed to run)"
			default:
				timing = fmt.Sprintf(" %.3f ms", times[i].Seconds()*1e3)
			}
			fmt.Fprintf(log, "%s %s %s workspace %s%s\n", tag, mark, g.what, human(g.ws), timing)
		}
	}
	return gc.choose(c, best)
}

// graphTuneRuns is how many timed runs each candidate plan gets.
const graphTuneRuns = 3

// runGraph executes plan g on the buffers x, w and y (forward's names:
// in backward data x is dx, in both backward directions y is dy and in
// backward filter w is dw), recording a failure as the backend's.
func (b *Backend) runGraph(g *graphPlan, dir convDir, s tensor.ConvShape, x, w, y uintptr) {
	if b.err != nil {
		return
	}
	if err := b.execGraph(g, dir, s, [3]uintptr{x, w, y}); err != nil {
		b.fail(err)
		return
	}
	b.convCalls.graph++
}

// execGraph executes plan g on the buffers x, w, y of ptrs and returns
// cuDNN's error; the workspace comes from the shared block.
func (b *Backend) execGraph(g *graphPlan, dir convDir, s tensor.ConvShape, ptrs [3]uintptr) error {
	x, w, y := ptrs[0], ptrs[1], ptrs[2]
	for _, p := range ptrs {
		if p%graphAlignment != 0 {
			return fmt.Errorf("cuda: %s %s: buffer at %#x is not %d-byte aligned as the cuDNN plan declares", dir, s, p, graphAlignment)
		}
	}
	ws := b.workspaceLocked(g.ws)
	if b.err != nil {
		return b.err
	}
	c := &b.libs.cudnn
	gc := &graphCalls{c: c, subject: dir.String() + " " + s.String()}
	pack := gc.create(bkVariantPack)
	uids := []int64{uidX, uidW, uidY}
	pointers := []uintptr{x, w, y}
	gc.setInt64s(pack, bkVariantPack, baPackUIDs, uids...)
	gc.set(pack, bkVariantPack, baPackPointers, btVoidPtr, len(pointers), unsafe.Pointer(&pointers[0]))
	wsp := []uintptr{uintptr(ws)}
	gc.set(pack, bkVariantPack, baPackWorkspace, btVoidPtr, 1, unsafe.Pointer(&wsp[0]))
	gc.finalize(pack, bkVariantPack)
	if gc.err == nil {
		gc.fail("cudnnBackendExecute", mustCall(c.graph.execute, b.cudnnHandle, g.plan, pack))
	}
	runtime.KeepAlive(pointers)
	runtime.KeepAlive(wsp)
	gc.destroy()
	return gc.err
}
