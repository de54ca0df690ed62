package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/blas"
)

func newDevicesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List the compute devices simclr can use: the CPU's SGEMM and any CUDA GPU",
		Long: `devices reports what --device auto would find: on the CPU, the core count and
the SGEMM chosen and why, for training (one single-threaded SGEMM per worker)
and for the evaluations (one SGEMM on every core): the faster, in a short race
on a training step's products, of the built-in kernel and a system BLAS
(identified as OpenBLAS, BLIS or MKL, or faster than the built-in kernel in a
timed product); for CUDA, which libraries were found where, their versions, the
GPUs, and why the CUDA backend cannot be used when it cannot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "CPU: %d cores (GOMAXPROCS %d), %s/%s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(out, "  training: %s\n", cpu.New().Describe())
			c := blas.Choose(runtime.NumCPU())
			fmt.Fprintf(out, "  evaluation sgemm: %s\n  chosen because: %s\n", c.Gemm.Name(), c.Why)
			fmt.Fprintln(out)
			r := cuda.Probe()
			fmt.Fprint(out, r.String())
			return nil
		},
	}
}
