package cuda

import (
	"embed"
	"strings"
)

// kernelFiles holds the CUDA C of every kernel that is not a convolution or
// a matrix product, one file per concern named like backend/cpu's Go files
// (vector, layers, batchnorm, groupnorm, loss, optim; bf16 holds the
// conversions of the bf16 precision), plus prelude.cu, which they all
// use.
//
//go:embed kernels/*.cu
var kernelFiles embed.FS

// kernelOrder is the order in which kernelSource joins the files: the
// prelude first, since the others use its definitions.
var kernelOrder = []string{"prelude.cu", "vector.cu", "layers.cu", "batchnorm.cu", "groupnorm.cu", "loss.cu", "optim.cu", "bf16.cu"}

// kernelSource is the one program NVRTC compiles at start-up: the files of
// kernelOrder joined. It includes no headers (NVRTC has none of the C
// library), uses a fixed block size of blockSize threads for every kernel
// that reduces in shared memory, and accumulates every sum in double so
// results match backend/cpu, which does the same. Reductions go through
// per-block partial sums added in a fixed order, so results do not depend on
// scheduling (no floating-point atomics).
//
// Each kernel's signature is also listed in kernelSigs; a test checks the two
// agree, and launch checks every call site against kernelSigs.
var kernelSource = joinKernelFiles()

// joinKernelFiles reads kernelOrder from kernelFiles. The files are part of
// the binary, so a missing one is a build defect, caught by the tests.
func joinKernelFiles() string {
	var src strings.Builder
	for _, name := range kernelOrder {
		b, err := kernelFiles.ReadFile("kernels/" + name)
		if err != nil {
			panic("cuda: embedded kernel file: " + err.Error())
		}
		src.WriteString("// ---- " + name + " ----\n")
		src.Write(b)
		src.WriteString("\n")
	}
	return src.String()
}

// blockSize is the BLOCK of kernelSource.
const blockSize = 256

// kernelSigs lists every kernel launched from Go with its parameter kinds:
// p = pointer, i = int, f = float, d = double.
var kernelSigs = map[string]string{
	"k_scale":             "pfi",
	"k_axpy":              "pfpi",
	"k_add":               "pppi",
	"k_dot_partial":       "ppip",
	"k_sum_partials":      "pip",
	"k_count_nonfinite":   "pip",
	"k_relu_fwd":          "ppi",
	"k_relu_bwd":          "pppi",
	"k_gap_fwd":           "ppii",
	"k_gap_bwd":           "ppii",
	"k_bias_add":          "ppii",
	"k_bias_grad":         "ppii",
	"k_bn_partial":        "piiiip",
	"k_bn_finalize":       "piiiffipppp",
	"k_bn_apply":          "ppppppiii",
	"k_bn_apply_relu":     "pppppppiii",
	"k_bn_eval":           "ppppppfiii",
	"k_bn_bwd_partial":    "ppppiiiip",
	"k_bn_bwd_finalize":   "piippp",
	"k_bn_bwd_dx":         "pppppppiii",
	"k_gn_fwd":            "ppppppiiiif",
	"k_gn_bwd_dx":         "pppppppiiii",
	"k_gn_bwd_params":     "ppppiii",
	"k_l2norm_rows":       "pppii",
	"k_ntxent_rows":       "pppifi",
	"k_ntxent_sum":        "piip",
	"k_l2norm_bwd":        "ppppii",
	"k_decoupled_rows":    "pppppiffi",
	"k_u_mean":            "ppi",
	"k_sgd":               "pppifffi",
	"k_lars_partial":      "ppifp",
	"k_lars_trust":        "pifp",
	"k_lars_update":       "pppifffpi",
	"k_to_bf16":           "ppi",
	"k_nchw_to_nhwc_bf16": "ppiii",
	"k_nhwc_bf16_to_nchw": "ppiii",
}
