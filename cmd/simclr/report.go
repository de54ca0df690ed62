package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/simclr-go/simclr/report"
)

func newReportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report RUN [RUN...] --out DIR",
		Short: "Compare runs: PNG plots of loss and accuracy against cost, and a Markdown table",
		Long: `report reads run folders and writes into DIR: loss_vs_{samples,iterations,wall}.png,
accuracy_vs_{samples,iterations,wall}.png (kNN accuracy during training as lines,
the linear probe as a marker; only when a run has evaluations), one line per run,
and report.md, a table of estimator, epochs, images drawn, oracle evaluations,
wall time, kNN and linear-probe accuracy.`,
		Example: `  simclr report runs/lsgd runs/vr-rt --out reports/cmp`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var runs []*report.Run
			for _, dir := range args {
				r, err := report.Load(dir)
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
			files, err := report.Write(runs, out)
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", f)
			}
			fmt.Fprint(cmd.OutOrStdout(), "\n"+report.Table(runs))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "report", "folder for the plots and report.md (created if needed)")
	return cmd
}
