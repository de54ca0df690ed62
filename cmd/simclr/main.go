// Command simclr trains SimCLR models with multilevel Monte Carlo gradient
// estimators and evaluates them. Run `simclr --help` for the commands.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "simclr",
		Short: "SimCLR contrastive learning with multilevel Monte Carlo gradient estimators",
		Long: `simclr trains a ResNet-18 with the SimCLR loss using plain large-batch SGD
(L-SGD) or the multilevel Monte Carlo estimators of Hu, Wang, Chen and He
(V-MLMC, RT-MLMC, RU-MLMC, RR-MLMC and their variance-reduced versions), on a
CPU or an NVIDIA GPU, and evaluates the result with a linear probe or kNN.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newTrainCmd(),
		newEvalCmd(),
		newEmbedCmd(),
		newLevelsCmd(),
		newReportCmd(),
		newBenchCmd(),
		newDataCmd(),
		newDevicesCmd(),
		newVersionCmd(),
	)
	return root
}

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "simclr:", err)
		os.Exit(1)
	}
}
