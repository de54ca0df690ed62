package cuda

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/tensor"
)

func TestGridFor(t *testing.T) {
	tests := []struct{ n, sms, want int }{
		{0, 132, 1},
		{1, 132, 1},
		{256, 132, 1},
		{257, 132, 2},
		{1 << 20, 132, 4096},
		{1 << 30, 132, 132 * 32}, // capped: grid-stride loops cover the rest
		{1 << 30, 0, 32},
	}
	for _, tc := range tests {
		if got := gridFor(tc.n, tc.sms); got != tc.want {
			t.Errorf("gridFor(%d, %d) = %d, want %d", tc.n, tc.sms, got, tc.want)
		}
	}
}

func TestReduceGrid(t *testing.T) {
	for _, n := range []int{0, 1, 1023, 1024, 1025, 1 << 20, 1 << 30} {
		g := reduceGrid(n)
		if g < 1 || g > maxReduceBlocks {
			t.Errorf("reduceGrid(%d) = %d outside [1, %d]", n, g, maxReduceBlocks)
		}
		if n > 0 && g*blockSize*4 < n && g != maxReduceBlocks {
			t.Errorf("reduceGrid(%d) = %d blocks leave more than 4 items per thread", n, g)
		}
	}
}

func TestBNSplits(t *testing.T) {
	tests := []struct {
		name       string
		c, m, sms  int
		wantSplits int
	}{
		{"head BN1d (C=512, M=1024)", 512, 1024, 132, 1},
		{"stem 64 ch, 1024 views of 32x32", 64, 1024 * 1024, 132, 9},
		{"layer4 512 ch, 16 positions, 1024 views", 512, 16 * 1024, 132, 2},
		{"tiny", 3, 10, 132, 1},
	}
	for _, tc := range tests {
		got := bnSplits(tc.c, tc.m, tc.sms)
		if got != tc.wantSplits {
			t.Errorf("%s: bnSplits = %d, want %d", tc.name, got, tc.wantSplits)
		}
		if got > 1 && tc.m/got < blockSize*4 {
			t.Errorf("%s: %d splits leave blocks of %d values", tc.name, got, tc.m/got)
		}
	}
}

func perfRecord(algo, status int32, ms float32, mem uint64, math int32) []byte {
	r := make([]byte, cudnnAlgoPerfSize)
	binary.LittleEndian.PutUint32(r[0:], uint32(algo))
	binary.LittleEndian.PutUint32(r[cudnnAlgoPerfStatusOff:], uint32(status))
	binary.LittleEndian.PutUint32(r[cudnnAlgoPerfTimeOff:], mathFloat32bits(ms))
	binary.LittleEndian.PutUint64(r[cudnnAlgoPerfMemoryOff:], mem)
	binary.LittleEndian.PutUint32(r[cudnnAlgoPerfMathOff:], uint32(math))
	return r
}

func mathFloat32bits(f float32) uint32 { return math.Float32bits(f) }

func TestChooseAlgo(t *testing.T) {
	var raw []byte
	raw = append(raw, perfRecord(6, 0, 0.1, 1<<30, cudnnTensorOpMath)...)             // fastest, too much workspace
	raw = append(raw, perfRecord(5, 9, 0.2, 0, cudnnTensorOpMath)...)                 // failed status
	raw = append(raw, perfRecord(7, 0, 0.25, 0, cudnnTensorOpMathAllowConversion)...) // fp16 conversion: never
	raw = append(raw, perfRecord(1, 0, 0.3, 1<<20, cudnnTensorOpMath)...)             // tf32 choice
	raw = append(raw, perfRecord(2, 0, 0.4, 0, cudnnDefaultMath)...)                  // may use tensor cores: not fp32
	raw = append(raw, perfRecord(0, 0, 0.5, 0, cudnnFMAMath)...)                      // fp32 choice
	perf := parsePerf(raw, 6)
	if perf[3].algo != 1 || perf[3].memory != 1<<20 || perf[3].time != 0.3 || perf[3].mathType != cudnnTensorOpMath || perf[1].status != 9 {
		t.Fatalf("parsePerf = %+v", perf)
	}
	tests := []struct {
		name     string
		perf     []algoPerf
		fp32     bool
		wantAlgo int32 // -1: none acceptable
	}{
		{"tf32 skips ALLOW_CONVERSION", perf, false, 1},
		{"fp32 takes only FMA math", perf, true, 0},
		{"fp32 refuses DEFAULT math", perf[:5], true, -1},
		{"tf32 refuses a conversion-only list", perf[2:3], false, -1},
		{"tf32 may take DEFAULT math", perf[4:], false, 2},
	}
	for _, tc := range tests {
		got, ok := chooseAlgo(tc.perf, 256<<20, tc.fp32)
		if tc.wantAlgo < 0 {
			if ok {
				t.Errorf("%s: chose %+v, want none", tc.name, got)
			}
			continue
		}
		if !ok || got.algo != tc.wantAlgo {
			t.Errorf("%s: chose %+v, %v; want algo %d", tc.name, got, ok, tc.wantAlgo)
		}
	}
}

// The workspace is the larger of the record's and cuDNN's answer for the
// chosen algorithm, and a failed query is an error, not a guess.
func TestSettleWorkspace(t *testing.T) {
	tests := []struct {
		name          string
		record, query uint64
		want          uint64
	}{
		{"query larger (math type changed since the measurement)", 1 << 20, 3 << 20, 3 << 20},
		{"record larger", 4 << 20, 1 << 20, 4 << 20},
		{"heuristic record without size", 0, 5 << 10, 5 << 10},
	}
	for _, tc := range tests {
		var asked int32 = -1
		got, err := settleWorkspace(algoPerf{algo: 4, memory: tc.record}, func(algo int32) (uint64, error) {
			asked = algo
			return tc.query, nil
		})
		if err != nil || got != tc.want || asked != 4 {
			t.Errorf("%s: %d, %v (asked for algo %d); want %d for algo 4", tc.name, got, err, asked, tc.want)
		}
	}
	if _, err := settleWorkspace(algoPerf{algo: 1, memory: 8}, func(int32) (uint64, error) {
		return 0, errors.New("CUDNN_STATUS_BAD_PARAM")
	}); err == nil {
		t.Error("a failed workspace query was not reported")
	}
}

// launch checks its arguments against kernelSigs before touching the
// device, so a wrong call site fails loudly in any test that reaches it.
func TestLaunchChecksArguments(t *testing.T) {
	b := &Backend{}
	buf := &devBuf{ptr: 256, n: 4}
	tests := []struct {
		name string
		args []any
		want string
	}{
		{"k_nope", nil, "unknown kernel"},
		{"k_scale", []any{buf, float32(2)}, "takes 3 arguments"},
		{"k_scale", []any{buf, 2, 4}, "argument 1 is f, got int"},
		{"k_scale", []any{float32(1), float32(2), 4}, "argument 0 is p, got float32"},
		{"k_scale", []any{buf, float32(2), int64(4)}, "argument 2 has unsupported type int64"},
		{"k_scale", []any{buf, float32(2), buf}, "argument 2 is i, got a buffer"},
		{"k_scale", []any{buf, float32(2), 1 << 40}, "got int 1099511627776"},
		{"k_axpy", []any{buf, float32(1), 512, 4}, "argument 2 is p, got int"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.Contains(msg, tc.want) {
					t.Fatalf("launch(%s, %v): recover() = %v, want a panic with %q", tc.name, tc.args, r, tc.want)
				}
			}()
			b.launch(tc.name, 1, 1, tc.args...)
		})
	}
}

// The algorithm log marks the record chosen and says why each faster one
// was passed over, for both precisions; cuDNN's benchmark reports an
// algorithm it had too little workspace for as failed, and the log puts
// that down to the workspace.
func TestLogAlgos(t *testing.T) {
	var raw []byte
	raw = append(raw, perfRecord(6, 0, 0.1, 1<<30, cudnnTensorOpMath)...)
	raw = append(raw, perfRecord(4, 4002, -1, 300<<20, cudnnTensorOpMath)...)
	raw = append(raw, perfRecord(3, 4002, -1, 100<<20, cudnnTensorOpMath)...)
	raw = append(raw, perfRecord(5, 9, 0.2, 0, cudnnTensorOpMath)...)
	raw = append(raw, perfRecord(7, 0, 0.25, 0, cudnnTensorOpMathAllowConversion)...)
	raw = append(raw, perfRecord(1, 0, 0.3, 1<<20, cudnnTensorOpMath)...)
	raw = append(raw, perfRecord(0, 0, 0.5, 0, cudnnFMAMath)...)
	perf := parsePerf(raw, 7)
	s := tensor.ConvShape{N: 8, C: 64, H: 32, W: 32, K: 64, R: 3, S: 3, Stride: 1, Pad: 1}
	const given, bound = 2 << 20, 256 << 20
	over := []string{
		"algo 6 (WINOGRAD) math 1 (TENSOR_OP) 0.100 ms workspace 1.00 GiB (needs more workspace than the 256.0 MiB bound)",
		"algo 4 (FFT) math 1 (TENSOR_OP) -1.000 ms workspace 300.0 MiB (needs more workspace than the 256.0 MiB bound)",
		"algo 3 (DIRECT) math 1 (TENSOR_OP) -1.000 ms workspace 100.0 MiB (needs more workspace than the 2.0 MiB its size query gave the benchmark)",
		"algo 5 (FFT_TILING) math 1 (TENSOR_OP) 0.200 ms workspace 0 B (failed, status 9)",
		"algo 7 (WINOGRAD_NONFUSED) math 2 (TENSOR_OP_ALLOW_CONVERSION) 0.250 ms workspace 0 B (math type not allowed at this precision)",
	}
	tests := []struct {
		name   string
		fp32   bool
		chosen int32
		want   []string // per record, in order: what its line must hold
	}{
		{"tf32", false, 1, append(over[:5:5], ": * algo 1 (IMPLICIT_PRECOMP_GEMM) math 1 (TENSOR_OP) 0.300 ms workspace 1.0 MiB", ":   algo 0 (IMPLICIT_GEMM) math 3 (FMA) 0.500 ms workspace 0 B")},
		{"fp32", true, 0, append(over[:5:5], "algo 1 (IMPLICIT_PRECOMP_GEMM) math 1 (TENSOR_OP) 0.300 ms workspace 1.0 MiB (math type not allowed at this precision)",
			": * algo 0 (IMPLICIT_GEMM) math 3 (FMA) 0.500 ms workspace 0 B")},
	}
	for _, tc := range tests {
		choice, found := chooseAlgo(perf, bound, tc.fp32)
		if !found || choice.algo != tc.chosen {
			t.Fatalf("%s: chooseAlgo = %+v, %v; want algo %d", tc.name, choice, found, tc.chosen)
		}
		var sb strings.Builder
		logAlgos(&sb, "forward (measured)", fwdAlgoNames, s, perf, choice, found, given, bound, tc.fp32)
		lines := strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n")
		if len(lines) != len(tc.want) {
			t.Fatalf("%s: %d lines, want %d:\n%s", tc.name, len(lines), len(tc.want), sb.String())
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(lines[i], "cudnn forward (measured) "+s.String()+": ") || !strings.Contains(lines[i], w) {
				t.Errorf("%s: line %d is %q, want it to hold %q", tc.name, i, lines[i], w)
			}
		}
		if n := strings.Count(sb.String(), ": * "); n != 1 {
			t.Errorf("%s: %d records marked chosen, want 1:\n%s", tc.name, n, sb.String())
		}
	}
}

// The benchmark's workspace is the most any applicable algorithm within
// the bound needs, not the bound itself.
func TestFindWorkspace(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int64 // per algorithm; -1: does not apply
		bound uint64
		want  uint64
	}{
		{"small shape: kilobytes, not the bound", []int64{0, 1 << 10, -1, 64 << 10}, 4 << 30, 64 << 10},
		{"an algorithm over the bound is left out", []int64{0, 300 << 20, 100 << 20, -1}, 256 << 20, 100 << 20},
		{"none applies", []int64{-1, -1}, 4 << 30, 0},
		{"exactly the bound fits", []int64{256 << 20, 1}, 256 << 20, 256 << 20},
	}
	for _, tc := range tests {
		asked := 0
		got := findWorkspace(len(tc.sizes), tc.bound, func(algo int32) (uint64, bool) {
			asked++
			if tc.sizes[algo] < 0 {
				return 0, false
			}
			return uint64(tc.sizes[algo]), true
		})
		if got != tc.want || asked != len(tc.sizes) {
			t.Errorf("%s: findWorkspace = %s after %d queries, want %s after %d", tc.name, human(got), asked, human(tc.want), len(tc.sizes))
		}
	}
}

func TestDefaultWorkspace(t *testing.T) {
	tests := []struct {
		name  string
		avail uint64
		want  uint64
	}{
		{"unknown memory", 0, 256 << 20},
		{"4 GiB free: the floor", 4 << 30, 256 << 20},
		{"16 GiB free", 16 << 30, 1 << 30},
		{"24 GiB free", 24 << 30, 1536 << 20},
		{"an idle 80 GiB H100: the cap", 79 << 30, 4 << 30},
		{"an idle 141 GiB H200: the cap", 139 << 30, 4 << 30},
	}
	for _, tc := range tests {
		if got := defaultWorkspace(tc.avail); got != tc.want {
			t.Errorf("%s: defaultWorkspace(%s) = %s, want %s", tc.name, human(tc.avail), human(got), human(tc.want))
		}
	}
}

// TestAlgoNames: the algorithm log names every algorithm of each direction
// the legacy API counts, and prints a value it has no name for as the
// number alone.
func TestAlgoNames(t *testing.T) {
	for _, tc := range []struct {
		what  string
		names []string
		count int
		last  string
	}{
		{"forward", fwdAlgoNames, cudnnFwdAlgoCount, " (WINOGRAD_NONFUSED)"},
		{"backward-data", bwdDataAlgoNames, cudnnBwdDataAlgoCount, " (WINOGRAD_NONFUSED)"},
		{"backward-filter", bwdFiltAlgoNames, cudnnBwdFilterAlgoCount, " (FFT_TILING)"},
	} {
		names := tc.names
		if len(names) != tc.count || enumName(names, tc.count-1) != tc.last || enumName(names, tc.count) != "" {
			t.Errorf("%s: %d names, last %q, past the end %q; want %d, %q, \"\"", tc.what, len(names), enumName(names, tc.count-1), enumName(names, tc.count), tc.count, tc.last)
		}
	}
	if enumName(mathNames, cudnnFMAMath) != " (FMA)" {
		t.Error("FMA's math type is misnamed")
	}
}
