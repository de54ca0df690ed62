package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/simclr-go/simclr/report"
)

func newReportCmd() *cobra.Command {
	var (
		out           string
		mergeSeeds    bool
		accuracyRange string
	)
	cmd := &cobra.Command{
		Use:   "report RUN [RUN...] --out DIR",
		Short: "Compare runs: PNG plots of loss and accuracy against cost, and a Markdown table",
		Long: `report reads run folders and writes into DIR: loss_vs_{samples,iterations,wall}.png,
accuracy_vs_{samples,iterations,wall}.png (kNN accuracy during training as lines,
the linear probe as a marker; only when a run has evaluations), one line per run,
and report.md, a table of estimator, epochs, images drawn, oracle evaluations,
wall time, kNN and linear-probe accuracy. The accuracy axis is fitted to the
data (at least 5 points tall), or fixed with --accuracy-range; the legend sits
to the right of the plotting area.

With --merge-seeds, runs whose config.json agree in everything but the seed
(and where and how they ran: output folder, workers, checkpoint period,
version) are one line: the mean over the seeds, with a band (bars for the
probe) from the lowest to the highest seed, and report.md gives each
figure's mean ± standard deviation over the seeds.`,
		Example: `  simclr report runs/lsgd runs/vr-rt --out reports/cmp
  simclr report runs/lsgd-s1 runs/lsgd-s2 runs/lsgd-s3 runs/vr-rt-s1 runs/vr-rt-s2 runs/vr-rt-s3 --merge-seeds --out reports/seeds`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := report.Options{MergeSeeds: mergeSeeds}
			if accuracyRange != "" {
				r, err := parseRange(accuracyRange)
				if err != nil {
					return fmt.Errorf("--accuracy-range %s: %w", accuracyRange, err)
				}
				opts.AccuracyRange = &r
			}
			var runs []*report.Run
			for _, dir := range args {
				r, err := report.Load(dir)
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
			files, err := report.Write(runs, out, opts)
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", f)
			}
			table := report.Table(runs)
			if mergeSeeds {
				table = report.SeriesTable(report.Group(runs, true))
			}
			fmt.Fprint(cmd.OutOrStdout(), "\n"+table)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "report", "folder for the plots and report.md (created if needed)")
	cmd.Flags().StringVar(&accuracyRange, "accuracy-range", "", "fix the accuracy plots' y axis to MIN,MAX percent (e.g. 0,100, to compare reports); default: fitted to the data")
	cmd.Flags().BoolVar(&mergeSeeds, "merge-seeds", false, "draw runs that differ only in their seed as one line: mean and range over the seeds; the table gives mean ± standard deviation")
	return cmd
}

// parseRange reads "MIN,MAX" (percent), MIN < MAX, both within 0..100.
func parseRange(s string) (report.Range, error) {
	lo, hi, ok := strings.Cut(s, ",")
	if !ok {
		return report.Range{}, fmt.Errorf("want MIN,MAX in percent, e.g. 0,100")
	}
	var r report.Range
	var err error
	if r.Min, err = strconv.ParseFloat(strings.TrimSpace(lo), 64); err != nil {
		return r, fmt.Errorf("minimum %q is not a number", lo)
	}
	if r.Max, err = strconv.ParseFloat(strings.TrimSpace(hi), 64); err != nil {
		return r, fmt.Errorf("maximum %q is not a number", hi)
	}
	if !(0 <= r.Min && r.Min < r.Max && r.Max <= 100) {
		return r, fmt.Errorf("want 0 <= MIN < MAX <= 100")
	}
	return r, nil
}
