package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/blas"
)

func newDevicesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List the compute devices simclr can use: the CPU's SGEMM and any CUDA GPU",
		Long: `devices reports what --device auto would find: on the CPU, which SGEMM
implementation was chosen and why (a system BLAS identified as OpenBLAS, BLIS or
MKL, or one faster than the built-in kernel in a timed product; else the
built-in pure-Go kernel) and the core count; for CUDA, which libraries were found where, their versions, the
GPUs, and why the CUDA backend cannot be used when it cannot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "CPU: %d cores (GOMAXPROCS %d), %s/%s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
			c := blas.Choose(runtime.NumCPU())
			fmt.Fprintf(out, "  sgemm: %s\n  chosen because: %s\n", c.Gemm.Name(), c.Why)
			fmt.Fprintln(out)
			r := cuda.Probe()
			fmt.Fprint(out, r.String())
			return nil
		},
	}
}
