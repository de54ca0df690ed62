package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/simclr-go/simclr/data/datasets"
)

// newDataCmd is `simclr data`: commands about the data sets on disk.
func newDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Inspect the data sets on disk",
		Long: `Commands about the data sets simclr reads. To download them, run
scripts/fetch_data.sh (see scripts/fetch_data.sh --help).`,
	}
	cmd.AddCommand(newDataInspectCmd())
	return cmd
}

func newDataInspectCmd() *cobra.Command {
	var (
		dataset string
		dataDir string
		size    int
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Load a data set and report its counts, image size, statistics and the first problem found",
		Long: `inspect loads a data set exactly as training does and reports the number of
images per split and class, the image size, the normalisation statistics, the
statistics measured on the training set, and the first problem found (or "ok"),
so you can tell whether your data is usable. It exits with status 1 when there
is a problem.`,
		Example: `  simclr data inspect --dataset cifar10 --data-dir data-cache
  simclr data inspect --dataset folder:/data/pets --size 64 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := datasets.Inspect(dataset, dataDir, size)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else if err := writeReport(out, r); err != nil {
				return err
			}
			if !r.OK {
				return errors.New("data inspect: the data is not usable (see the status above)")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataset, "dataset", "cifar10", "data set to inspect: "+datasets.Names())
	f.StringVar(&dataDir, "data-dir", datasets.DefaultDir, "folder holding the data sets, as written by scripts/fetch_data.sh --dir")
	f.IntVar(&size, "size", 0, "image side to load at: 0 keeps the data set's own size; CIFAR and SVHN accept only 32, folder data sets are scaled and centre-cropped (default 0)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON instead of a table (default false)")
	return cmd
}

// writeReport prints a report as a table.
func writeReport(w io.Writer, r *datasets.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "dataset: %s (data dir %s)\n", r.Dataset, r.DataDir)
	if r.Classes != nil {
		fmt.Fprintf(w, "images:  %dx%dx%d (channels x height x width), %d classes\n", r.Channels, r.Height, r.Width, len(r.Classes))
		fmt.Fprintf(tw, "class\ttrain\ttest\t\n")
		for c, name := range r.Classes {
			fmt.Fprintf(tw, "%s\t%d\t%d\t\n", name, r.Train.PerClass[c], r.Test.PerClass[c])
		}
		fmt.Fprintf(tw, "total\t%d\t%d\t\n", r.Train.Images, r.Test.Images)
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "normalisation:     mean %s  std %s\n", triple(r.Mean), triple(r.Std))
		fmt.Fprintf(w, "training set:      mean %s  std %s\n", triple(r.TrainMean), triple(r.TrainStd))
	}
	_, err := fmt.Fprintf(w, "status: %s\n", r.Problem)
	return err
}

func triple(v [3]float32) string { return fmt.Sprintf("(%.4f, %.4f, %.4f)", v[0], v[1], v[2]) }
