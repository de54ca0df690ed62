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
implementation was loaded (OpenBLAS through purego, or the pure-Go kernel) and
the core count; for CUDA, which libraries were found where, their versions, the
GPUs, and why the CUDA backend cannot be used when it cannot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "CPU: %d cores (GOMAXPROCS %d), %s/%s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
			g := blas.Open()
			fmt.Fprintf(out, "  sgemm: %s\n", g.Name())
			if _, err := blas.OpenBLAS(); err != nil {
				fmt.Fprintf(out, "  OpenBLAS not used: %v\n", err)
			}
			fmt.Fprintln(out)
			r := cuda.Probe()
			fmt.Fprint(out, r.String())
			return nil
		},
	}
}
