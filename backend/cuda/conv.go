package cuda

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

// convPlan holds the cuDNN descriptors and chosen algorithms of one
// convolution shape, made on first use and kept for the run (one per layer
// shape and batch size). Each direction has its own convolution descriptor
// because the algorithm found may need its own math type.
type convPlan struct {
	x, y, w                     uintptr // tensor and filter descriptors
	convFwd, convBwdD, convBwdF uintptr
	// The legacy API's algorithm of each direction, chosen on first use.
	fwd, bwdD, bwdF legacyAlgo
	// graph holds the backend API's plan of each direction (convgraph.go);
	// graphFailed marks a direction that runs on the legacy API instead.
	graph       [3]*graphPlan
	graphFailed [3]bool
}

func (p *convPlan) destroy(c *cudnnAPI) {
	for _, g := range p.graph {
		if g != nil {
			g.destroy(c)
		}
	}
	for _, d := range []uintptr{p.x, p.y} {
		if d != 0 {
			mustCall(c.destroyTensor, d)
		}
	}
	if p.w != 0 {
		mustCall(c.destroyFilter, p.w)
	}
	for _, d := range []uintptr{p.convFwd, p.convBwdD, p.convBwdF} {
		if d != 0 {
			mustCall(c.destroyConv, d)
		}
	}
}

// algoPerf is one entry of cudnnConvolution*AlgoPerf_t.
type algoPerf struct {
	algo, status int32
	time         float32
	memory       uint64
	mathType     int32
}

// parsePerf decodes count cudnnConvolution*AlgoPerf_t records (all three
// directions share the layout: algo, status int32; time float; memory
// size_t; determinism, mathType int32; reserved int[3]).
func parsePerf(raw []byte, count int) []algoPerf {
	out := make([]algoPerf, 0, count)
	for i := 0; i < count; i++ {
		r := raw[i*cudnnAlgoPerfSize:]
		out = append(out, algoPerf{
			algo:     int32(binary.LittleEndian.Uint32(r[0:])),
			status:   int32(binary.LittleEndian.Uint32(r[cudnnAlgoPerfStatusOff:])),
			time:     math.Float32frombits(binary.LittleEndian.Uint32(r[cudnnAlgoPerfTimeOff:])),
			memory:   binary.LittleEndian.Uint64(r[cudnnAlgoPerfMemoryOff:]),
			mathType: int32(binary.LittleEndian.Uint32(r[cudnnAlgoPerfMathOff:])),
		})
	}
	return out
}

// chooseAlgo takes the first (fastest: cuDNN sorts them) usable algorithm:
// succeeded, fits the workspace, and of a math type the precision allows:
// fp32 only CUDNN_FMA_MATH (DEFAULT_MATH lets cuDNN pick tensor cores on
// some algorithms, which is not fp32), tf32 anything but
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (which may compute in fp16/bf16).
func chooseAlgo(perf []algoPerf, wsLimit uint64, fp32 bool) (algoPerf, bool) {
	for _, p := range perf {
		if p.status != cudnnStatusSuccess || p.memory > wsLimit {
			continue
		}
		if fp32 && p.mathType != cudnnFMAMath {
			continue
		}
		if !fp32 && p.mathType == cudnnTensorOpMathAllowConversion {
			continue
		}
		return p, true
	}
	return algoPerf{}, false
}

// findWorkspace is the workspace cuDNN's benchmark gets for one shape and
// direction: the most that any of its algos algorithms needs by cuDNN's
// own answer (size; false where the algorithm does not apply), leaving
// out those that need more than the bound, which could not be chosen.
// Giving the benchmark the whole bound instead would keep that much device
// memory for the run even where every algorithm needs a few kilobytes.
func findWorkspace(algos int, bound uint64, size func(algo int32) (uint64, bool)) uint64 {
	var most uint64
	for a := range int32(algos) {
		if n, ok := size(a); ok && n <= bound {
			most = max(most, n)
		}
	}
	return most
}

// logAlgos writes cuDNN's records for one shape and direction (perf: the
// benchmark's, fastest first, or the heuristic's when the benchmark gave
// no usable one), marks the choice with *, and says why each record
// before it was passed over. The benchmark had a workspace of given bytes
// (findWorkspace), at most the bound.
func logAlgos(w io.Writer, what string, names []string, s tensor.ConvShape, perf []algoPerf, choice algoPerf, found bool, given, bound uint64, fp32 bool) {
	if len(perf) == 0 {
		fmt.Fprintf(w, "cudnn %s %s: no algorithm records\n", what, s)
	}
	for _, p := range perf {
		why := ""
		// cuDNN's benchmark marks an algorithm it could not run for want
		// of workspace as failed: the size says which failures those are.
		switch {
		case p.memory > bound:
			why = fmt.Sprintf(" (needs more workspace than the %s bound)", human(bound))
		case p.memory > given:
			why = fmt.Sprintf(" (needs more workspace than the %s its size query gave the benchmark)", human(given))
		case p.status != cudnnStatusSuccess:
			why = fmt.Sprintf(" (failed, status %d)", p.status)
		case fp32 && p.mathType != cudnnFMAMath, !fp32 && p.mathType == cudnnTensorOpMathAllowConversion:
			why = " (math type not allowed at this precision)"
		}
		mark := " "
		if found && p == choice {
			mark = "*"
		}
		fmt.Fprintf(w, "cudnn %s %s: %s algo %d%s math %d%s %.3f ms workspace %s%s\n", what, s, mark,
			p.algo, enumName(names, int(p.algo)), p.mathType, enumName(mathNames, int(p.mathType)), p.time, human(p.memory), why)
	}
}

// cuDNN's names of its legacy convolution algorithms (cudnn_cnn.h, without
// their common prefix) and math types, by enum value, for the algorithm log.
var (
	fwdAlgoNames     = []string{"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"}
	bwdDataAlgoNames = []string{"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"}
	bwdFiltAlgoNames = []string{"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"}
	mathNames        = []string{"DEFAULT", "TENSOR_OP", "TENSOR_OP_ALLOW_CONVERSION", "FMA"}
)

// enumName is " (NAME)" for value v of names, or "" where v is not in it
// (a newer cuDNN's value): the number alone is still printed.
func enumName(names []string, v int) string {
	if v < 0 || v >= len(names) {
		return ""
	}
	return " (" + names[v] + ")"
}

// settleWorkspace returns the workspace the chosen algorithm runs with: the
// larger of the perf record's and cuDNN's answer for the algorithm under
// the math type now set on the descriptor (query). The record can be
// smaller than what the final descriptor needs (the heuristic's records
// carry estimates, and the math type may have changed since the
// measurement), and running with too small a workspace fails or corrupts.
func settleWorkspace(choice algoPerf, query func(algo int32) (uint64, error)) (uint64, error) {
	size, err := query(choice.algo)
	if err != nil {
		return 0, err
	}
	return max(size, choice.memory), nil
}

func (b *Backend) mathType() int {
	if b.tensorCores() {
		return cudnnTensorOpMath
	}
	return cudnnFMAMath
}

// tensorCores reports whether convolutions may run on tensor cores (tf32
// and bf16); fp32 keeps FMA arithmetic.
func (b *Backend) tensorCores() bool { return b.tf32 || b.bf16 }

// convLayout is the format and data type of a convolution's tensors and
// filter: fp32 NCHW (KCRS filters), or at bf16 NHWC (KRSC filters), the
// layout cuDNN's bf16 tensor-core kernels run on without a transpose.
func (b *Backend) convLayout() (format, dtype uintptr) {
	if b.bf16 {
		return cudnnTensorNHWC, cudnnDataBFloat16
	}
	return cudnnTensorNCHW, cudnnDataFloat
}

// convPlanLocked returns the plan of s, creating its descriptors.
func (b *Backend) convPlanLocked(s tensor.ConvShape) *convPlan {
	if p := b.convPlans[s]; p != nil {
		return p
	}
	c := &b.libs.cudnn
	p := &convPlan{}
	ok := func(what string, r uintptr) bool {
		err := c.check(what+" for "+s.String(), r)
		b.fail(err)
		return err == nil
	}
	format, dtype := b.convLayout()
	if !ok("cudnnCreateTensorDescriptor", mustCall(c.createTensor, uintptr(unsafe.Pointer(&p.x)))) ||
		!ok("cudnnCreateTensorDescriptor", mustCall(c.createTensor, uintptr(unsafe.Pointer(&p.y)))) ||
		!ok("cudnnCreateFilterDescriptor", mustCall(c.createFilter, uintptr(unsafe.Pointer(&p.w)))) ||
		!ok("cudnnSetTensor4dDescriptor(x)", mustCall(c.setTensor4d, p.x, format, dtype, uintptr(s.N), uintptr(s.C), uintptr(s.H), uintptr(s.W))) ||
		!ok("cudnnSetTensor4dDescriptor(y)", mustCall(c.setTensor4d, p.y, format, dtype, uintptr(s.N), uintptr(s.K), uintptr(s.OutH()), uintptr(s.OutW()))) ||
		!ok("cudnnSetFilter4dDescriptor", mustCall(c.setFilter4d, p.w, dtype, format, uintptr(s.K), uintptr(s.C), uintptr(s.R), uintptr(s.S))) {
		p.destroy(c)
		return nil
	}
	for _, d := range []*uintptr{&p.convFwd, &p.convBwdD, &p.convBwdF} {
		if !ok("cudnnCreateConvolutionDescriptor", mustCall(c.createConv, uintptr(unsafe.Pointer(d)))) ||
			!ok("cudnnSetConvolution2dDescriptor", mustCall(c.setConv2d, *d, uintptr(s.Pad), uintptr(s.Pad), uintptr(s.Stride), uintptr(s.Stride), 1, 1, cudnnCrossCorrelation, cudnnDataFloat)) ||
			!ok("cudnnSetConvolutionMathType", mustCall(c.setConvMath, *d, uintptr(b.mathType()))) {
			p.destroy(c)
			return nil
		}
	}
	b.convPlans[s] = p
	return p
}

// workspaceLocked returns the shared cuDNN workspace, at least bytes long.
func (b *Backend) workspaceLocked(bytes uint64) uint64 {
	if bytes == 0 {
		return 0
	}
	return b.scratchLocked("the cuDNN convolution workspace", bytes)
}

// pickAlgo runs cuDNN's benchmark (find, with our buffers and the
// workspace findWorkspace sizes for the shape's algos algorithms under
// each math type the benchmark tries, at most opts.WorkspaceBytes) and falls back to its heuristic (get_v7) when the
// benchmark fails; it then sets the chosen math type on conv and asks
// cuDNN (wsSize) for the algorithm's workspace under it.
func (b *Backend) pickAlgo(what string, names []string, s tensor.ConvShape, conv uintptr, algos int, find func(ws, wsBytes uint64, raw []byte, count *int32) uintptr, get func(raw []byte, count *int32) uintptr, wsSize func(algo int32, size *uint64) uintptr) (int, uint64) {
	c := &b.libs.cudnn
	raw := make([]byte, cudnnMaxAlgosRequested*cudnnAlgoPerfSize)
	var count int32
	limit := b.opts.WorkspaceBytes
	// In tf32 the benchmark also times the algorithms under the default
	// math type, whose workspace may differ: size under it first, then
	// under the descriptor's own math type, which stays set for the
	// benchmark.
	maths := []int{b.mathType()}
	if b.tensorCores() {
		maths = []int{cudnnDefaultMath, b.mathType()}
	}
	var given uint64
	for _, m := range maths {
		if err := c.check("cudnnSetConvolutionMathType", mustCall(c.setConvMath, conv, uintptr(m))); err != nil {
			b.fail(err)
			return 0, 0
		}
		given = max(given, findWorkspace(algos, limit, func(algo int32) (uint64, bool) {
			var size uint64
			// cudnnStatus_t is a 32-bit int: the upper half of the
			// returned register is not defined by the C ABI.
			return size, int32(wsSize(algo, &size)) == cudnnStatusSuccess
		}))
	}
	ws := b.workspaceLocked(given)
	var perf []algoPerf
	if b.err == nil && int32(find(ws, given, raw, &count)) == cudnnStatusSuccess {
		perf = parsePerf(raw, int(count))
	}
	choice, found := chooseAlgo(perf, limit, !b.tensorCores())
	source := "measured"
	if !found {
		count = 0
		if err := c.check(what+" heuristic for "+s.String(), get(raw, &count)); err != nil {
			b.fail(err)
			return 0, 0
		}
		perf, source = parsePerf(raw, int(count)), "heuristic"
		choice, found = chooseAlgo(perf, limit, !b.tensorCores())
	}
	if b.opts.AlgoLog != nil {
		tag := source
		if b.bf16 {
			// The shape does not say the layout the algorithms ran on.
			tag += ", bf16 NHWC"
		}
		logAlgos(b.opts.AlgoLog, what+" ("+tag+")", names, s, perf, choice, found, given, limit, !b.tensorCores())
	}
	if !found {
		b.fail(fmt.Errorf("cuda: cuDNN has no %s algorithm for %s within a %s workspace", what, s, human(limit)))
		return 0, 0
	}
	if b.tensorCores() {
		// The algorithm may have been measured with another math type
		// than requested; it must run with the one it was measured with.
		// fp32 keeps CUDNN_FMA_MATH (chooseAlgo took only such records).
		if err := c.check("cudnnSetConvolutionMathType", mustCall(c.setConvMath, conv, uintptr(choice.mathType))); err != nil {
			b.fail(err)
			return 0, 0
		}
	}
	ws, err := settleWorkspace(choice, func(algo int32) (uint64, error) {
		var size uint64
		err := c.check(what+" workspace size for "+s.String(), wsSize(algo, &size))
		return size, err
	})
	if err != nil {
		b.fail(err)
		return 0, 0
	}
	return int(choice.algo), ws
}

// Conv2dForward: x is (N,C,H,W), w is (K,C,R,S), y is (N,K,OH,OW).
func (b *Backend) Conv2dForward(s tensor.ConvShape, x, w, y tensor.Buffer) {
	checkConv("Conv2dForward", s, x, w, y)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(y)
	if b.err != nil {
		return
	}
	p := b.convPlanLocked(s)
	if p == nil {
		return
	}
	if b.convAPI != ConvAPILegacy && b.refuseCapture("cuDNN's backend API (convolution "+s.String()+")") {
		return
	}
	xp, wp, yp := uintptr(b.ptr(x)), uintptr(b.ptr(w)), uintptr(b.ptr(y))
	if b.bf16 {
		xp = uintptr(b.toBF16NHWC(bf16ConvIn, b.ptr(x), s.N, s.C, s.H*s.W))
		wp = uintptr(b.cachedBF16(b.ptr(w), s.WeightLen(), s.C, s.R*s.S))
		yp = uintptr(b.scratchLocked(bf16ConvOut, uint64(s.OutLen())*2))
		if b.err != nil {
			return
		}
	}
	if g := b.graphPlanLocked(p, dirForward, s, [3]uintptr{xp, wp, yp}); g != nil {
		b.runGraph(g, dirForward, s, xp, wp, yp)
	} else if b.err == nil {
		b.forwardLegacy(p, s, xp, wp, yp)
	}
	if b.bf16 {
		b.fromBF16NHWC(uint64(yp), b.ptr(y), s.N, s.K, s.OutH()*s.OutW())
	}
}

// legacyAlgo is one direction's algorithm on cuDNN's legacy API and its
// workspace, chosen on first use.
type legacyAlgo struct {
	algo  int
	ws    uint64
	found bool
}

// legacyCall is one direction of a convolution on cuDNN's legacy API: its
// name for the algorithm log, the name of its run function for errors, its
// algorithms' names by enum value (for the log), how many algorithms it
// has, and its four functions (find, get, workspace size, run), which take
// the same operands in the same order: two inputs a and b, the
// convolution, the output o.
type legacyCall struct {
	what, call             string
	names                  []string
	algos                  int
	find, get, wsSize, run uintptr
}

// legacyOperands are a direction's descriptors and device pointers: inputs
// a and b, output o.
type legacyOperands struct {
	a, ap, b, bp, o, op uintptr
}

// runLegacy runs one direction d of a convolution on cuDNN's legacy API:
// it chooses the direction's algorithm on first use (pickAlgo; a captured
// step may not search, so it refuses the capture), then runs it with its
// workspace on the operands.
func (b *Backend) runLegacy(a *legacyAlgo, d legacyCall, s tensor.ConvShape, conv uintptr, x legacyOperands) {
	if !a.found && b.refuseCapture("cuDNN's algorithm search for "+s.String()) {
		return
	}
	h := b.cudnnHandle
	if !a.found {
		a.algo, a.ws = b.pickAlgo(d.what, d.names, s, conv, d.algos,
			func(ws, wsBytes uint64, raw []byte, count *int32) uintptr {
				return mustCall(d.find, h, x.a, x.ap, x.b, x.bp, conv, x.o, x.op, cudnnMaxAlgosRequested,
					uintptr(unsafe.Pointer(count)), uintptr(unsafe.Pointer(&raw[0])), uintptr(ws), uintptr(wsBytes))
			},
			func(raw []byte, count *int32) uintptr {
				return mustCall(d.get, h, x.a, x.b, conv, x.o, cudnnMaxAlgosRequested,
					uintptr(unsafe.Pointer(count)), uintptr(unsafe.Pointer(&raw[0])))
			},
			func(algo int32, size *uint64) uintptr {
				return mustCall(d.wsSize, h, x.a, x.b, conv, x.o, uintptr(algo), uintptr(unsafe.Pointer(size)))
			})
		a.found = b.err == nil
	}
	if b.err != nil {
		return
	}
	ws := b.workspaceLocked(a.ws)
	b.used(uint64(x.ap), uint64(x.bp), uint64(x.op), ws)
	one, zero := float32(1), float32(0)
	b.fail(b.libs.cudnn.check(d.call+" for "+s.String(), mustCall(d.run, h, uintptr(unsafe.Pointer(&one)),
		x.a, x.ap, x.b, x.bp, conv, uintptr(a.algo), uintptr(ws), uintptr(a.ws), uintptr(unsafe.Pointer(&zero)), x.o, x.op)))
	b.convCalls.legacy++
}

// forwardLegacy runs the forward convolution of plan p on cuDNN's legacy
// API.
func (b *Backend) forwardLegacy(p *convPlan, s tensor.ConvShape, xp, wp, yp uintptr) {
	c := &b.libs.cudnn
	b.runLegacy(&p.fwd, legacyCall{"forward", "cudnnConvolutionForward", fwdAlgoNames, cudnnFwdAlgoCount, c.findFwdEx, c.getFwdV7, c.fwdWorkspaceSize, c.convFwd},
		s, p.convFwd, legacyOperands{p.x, xp, p.w, wp, p.y, yp})
}

// Conv2dBackward: given dy (N,K,OH,OW), writes dx (N,C,H,W) unless dx is
// nil and dw (K,C,R,S).
func (b *Backend) Conv2dBackward(s tensor.ConvShape, x, w, dy, dx, dw tensor.Buffer) {
	checkConv("Conv2dBackward", s, x, w, dy)
	if dx != nil && dx.Len() != s.InLen() {
		panic(fmt.Sprintf("cuda: Conv2dBackward %s: dx has %d elements, want %d", s, dx.Len(), s.InLen()))
	}
	if dw.Len() != s.WeightLen() {
		panic(fmt.Sprintf("cuda: Conv2dBackward %s: dw has %d elements, want %d", s, dw.Len(), s.WeightLen()))
	}
	b.enter()
	defer b.leave()
	// dx and dw are written (and their bf16 copies made stale) however
	// the call ends: a failure leaves them undefined.
	defer b.wroteLocked(dx, dw)
	if b.err != nil {
		return
	}
	p := b.convPlanLocked(s)
	if p == nil {
		return
	}
	if b.convAPI != ConvAPILegacy && b.refuseCapture("cuDNN's backend API (convolution "+s.String()+")") {
		return
	}
	xp, wp, dyp, dwp := uintptr(b.ptr(x)), uintptr(b.ptr(w)), uintptr(b.ptr(dy)), uintptr(b.ptr(dw))
	if b.bf16 {
		// dy in bf16 and the filter's cached copy first; x is converted
		// after the data gradient, whose bf16 output shares x's scratch
		// block.
		dyp = uintptr(b.toBF16NHWC(bf16ConvOut, b.ptr(dy), s.N, s.K, s.OutH()*s.OutW()))
		wp = uintptr(b.cachedBF16(b.ptr(w), s.WeightLen(), s.C, s.R*s.S))
		if b.err != nil {
			return
		}
	}
	if dx != nil {
		dxp := uintptr(b.ptr(dx))
		if b.bf16 {
			dxp = uintptr(b.scratchLocked(bf16ConvIn, uint64(s.InLen())*2))
			if b.err != nil {
				return
			}
		}
		if g := b.graphPlanLocked(p, dirBackwardData, s, [3]uintptr{dxp, wp, dyp}); g != nil {
			b.runGraph(g, dirBackwardData, s, dxp, wp, dyp)
		} else if b.err == nil {
			b.backwardDataLegacy(p, s, wp, dyp, dxp)
		}
		if b.err != nil {
			return
		}
		if b.bf16 {
			b.fromBF16NHWC(uint64(dxp), b.ptr(dx), s.N, s.C, s.H*s.W)
		}
	}
	if b.bf16 {
		xp = uintptr(b.toBF16NHWC(bf16ConvIn, b.ptr(x), s.N, s.C, s.H*s.W))
		// Not over the filter's copy, which the cache keeps.
		dwp = uintptr(b.scratchLocked(bf16ConvFilterGrad, uint64(s.WeightLen())*2))
		if b.err != nil {
			return
		}
	}
	if g := b.graphPlanLocked(p, dirBackwardFilter, s, [3]uintptr{xp, dwp, dyp}); g != nil {
		b.runGraph(g, dirBackwardFilter, s, xp, dwp, dyp)
	} else if b.err == nil {
		b.backwardFilterLegacy(p, s, xp, dyp, dwp)
	}
	if b.bf16 {
		b.fromBF16NHWC(uint64(dwp), b.ptr(dw), s.K, s.C, s.R*s.S)
	}
}

// backwardDataLegacy runs the data gradient of plan p on cuDNN's legacy
// API.
func (b *Backend) backwardDataLegacy(p *convPlan, s tensor.ConvShape, wp, dyp, dxp uintptr) {
	c := &b.libs.cudnn
	b.runLegacy(&p.bwdD, legacyCall{"backward-data", "cudnnConvolutionBackwardData", bwdDataAlgoNames, cudnnBwdDataAlgoCount, c.findBwdDataEx, c.getBwdDataV7, c.bwdDataWorkspaceSize, c.convBwdData},
		s, p.convBwdD, legacyOperands{p.w, wp, p.y, dyp, p.x, dxp})
}

// backwardFilterLegacy runs the filter gradient of plan p on cuDNN's
// legacy API.
func (b *Backend) backwardFilterLegacy(p *convPlan, s tensor.ConvShape, xp, dyp, dwp uintptr) {
	c := &b.libs.cudnn
	b.runLegacy(&p.bwdF, legacyCall{"backward-filter", "cudnnConvolutionBackwardFilter", bwdFiltAlgoNames, cudnnBwdFilterAlgoCount, c.findBwdFilterEx, c.getBwdFilterV7, c.bwdFilterWorkspaceSz, c.convBwdFilter},
		s, p.convBwdF, legacyOperands{p.x, xp, p.y, dyp, p.w, dwp})
}

func checkConv(op string, s tensor.ConvShape, x, w, y tensor.Buffer) {
	if s.N <= 0 || s.C <= 0 || s.H <= 0 || s.W <= 0 || s.K <= 0 || s.R <= 0 || s.S <= 0 || s.Stride <= 0 || s.Pad < 0 || s.OutH() <= 0 || s.OutW() <= 0 {
		panic(fmt.Sprintf("cuda: %s: invalid %s", op, s))
	}
	if x.Len() != s.InLen() || w.Len() != s.WeightLen() || y.Len() != s.OutLen() {
		panic(fmt.Sprintf("cuda: %s %s: buffers have %d, %d, %d elements, want %d, %d, %d",
			op, s, x.Len(), w.Len(), y.Len(), s.InLen(), s.WeightLen(), s.OutLen()))
	}
}
