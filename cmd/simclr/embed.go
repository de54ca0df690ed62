package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/datasets"
	"github.com/simclr-go/simclr/eval"
	"github.com/simclr-go/simclr/internal/npy"
)

// embedLogEvery is the interval of embed's progress lines when no
// progress bar is shown.
const embedLogEvery = 10 * time.Second

// embedOptions are embed's own flags; the network and the data come
// through evalTarget, as for eval.
type embedOptions struct {
	split      string
	out        string
	projection bool
	noProgress bool
}

func newEmbedCmd() *cobra.Command {
	var (
		e   evalTarget
		opt embedOptions
	)
	cmd := &cobra.Command{
		Use:   "embed",
		Short: "Write the features of every image of a data set as a NumPy .npy file, with a CSV index",
		Long: `embed runs every image of one split of a data set through a trained network
and writes what it computes, one row per image, to a NumPy .npy file (float32,
N x D, format 1.0: numpy.load reads it), and beside it a CSV index with the
same base name: row (the image's index in the split), file (for image
folders), label and class.

--dataset folder:PATH also takes a flat folder of pictures, PATH/*.jpg (or
.png), without train/ and test/ class folders: every picture is embedded
(--split does not matter), and the CSV index has no label or class column.

The rows are the backbone's pooled features (D = 512 at width 1), or with
--projection the projection head's output (D = the run's --proj-dim), before
the L2 normalisation of the loss. The images are prepared exactly as for
'simclr eval': un-augmented, scaled and centre-cropped to 32x32 for image
folders, normalised with the data set's per-channel statistics, and batch
norm runs in evaluation mode with the running statistics saved in the
checkpoint (re-estimated by precise BN at the end of training). Every image
of the split is embedded, whatever subset the run trained or was scored on.`,
		Example: `  simclr embed --run runs/quick --split test --out test.npy
  simclr embed --run runs/quick --dataset folder:photos --split train --out photos.npy
  simclr embed --run runs/quick --dataset folder:my-pictures --out mine.npy
  simclr embed --checkpoint runs/quick/model.safetensors --dataset cifar10 --projection --out z.npy`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEmbed(cmd, &e, opt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&e.run, "run", "", "run folder whose model.safetensors and config.json (data set, width, head) to use")
	f.StringVar(&e.checkpoint, "checkpoint", "", "model checkpoint (model.safetensors) to use instead of a run folder")
	f.StringVar(&e.dataset, "dataset", "", "data set to embed: "+datasets.Names()+" (default: the run's, else cifar10)")
	f.StringVar(&e.dataset, "data", "", "the same as --dataset")
	f.StringVar(&e.dataDir, "data-dir", "", "folder holding the data sets (default: the run's, else "+datasets.DefaultDir+")")
	f.StringVar(&opt.split, "split", "test", "split to embed: train or test")
	f.StringVar(&opt.out, "out", "", "the .npy file to write; the CSV index goes beside it (FILE.npy -> FILE.csv)")
	f.BoolVar(&opt.projection, "projection", false, "write the projection head's output instead of the backbone features")
	f.Float64Var(&e.width, "width", 0, "network width multiplier (0: the run's or the checkpoint's metadata, else 1)")
	f.StringVar(&e.device, "device", "auto", "compute device: auto (CUDA when found, else CPU), cpu or cuda")
	f.StringVar(&e.precision, "precision", "tf32", "CUDA matrix precision: tf32, fp32 or bf16 (bf16 convolutions and matrix products with fp32 sums; compute capability 8.0 or newer); tf32 and fp32 are ignored on the CPU, bf16 is refused there")
	f.BoolVar(&opt.noProgress, "no-progress", false, "no progress bar on a terminal")
	// MarkHidden fails only for an undefined flag.
	_ = f.MarkHidden("data")
	return cmd
}

// embedPaths checks --out and returns the .npy and .csv paths; the folder
// must exist, so that no data is read for a file that cannot be written.
func embedPaths(out string) (npyPath, csvPath string, err error) {
	if out == "" {
		return "", "", errors.New("--out: name the .npy file to write, e.g. --out features.npy")
	}
	base, ok := strings.CutSuffix(out, ".npy")
	if !ok || filepath.Base(base) == "" || strings.HasSuffix(base, string(filepath.Separator)) {
		return "", "", fmt.Errorf("--out %s: name a .npy file, e.g. --out features.npy (the CSV index is written beside it as features.csv)", out)
	}
	dir := filepath.Dir(out)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", "", fmt.Errorf("--out %s: folder %s does not exist; create it first", out, dir)
	}
	return out, base + ".csv", nil
}

func runEmbed(cmd *cobra.Command, e *evalTarget, opt embedOptions) error {
	if e.run == "" && e.checkpoint == "" {
		return errors.New("give --run runs/NAME or --checkpoint FILE: the network whose features to write")
	}
	if opt.split != "train" && opt.split != "test" {
		return fmt.Errorf("--split %q: use train or test", opt.split)
	}
	npyPath, csvPath, err := embedPaths(opt.out)
	if err != nil {
		return err
	}
	// Every image of the split: no subset, and the test split itself
	// rather than a run's validation images.
	e.trainSubset, e.testSub, e.valSplit = 0, 0, 0
	e.unlabelled = true
	b, m, splits, cfg, err := e.open(cmd)
	if err != nil {
		return err
	}
	defer backend.Close(b)
	set := splits.Test
	if opt.split == "train" {
		set = splits.Train
	}
	if set.Len() == 0 {
		return fmt.Errorf("%s holds no images: nothing to embed", set.Name)
	}
	output, what := eval.Backbone, "backbone features"
	if opt.projection {
		output, what = eval.Projection, "projections"
	}
	dim := output.Dim(m)
	logw := cmd.ErrOrStderr()
	var bar *progressbar.ProgressBar
	if !opt.noProgress && term.IsTerminal(int(os.Stderr.Fd())) {
		bar = progressbar.NewOptions(set.Len(), progressbar.OptionSetWriter(logw),
			progressbar.OptionSetDescription("embed"), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionFullWidth())
	}
	fmt.Fprintf(logw, "embed: %d images of %s -> %d %s each; inputs (pixel/255 - mean) / std with mean %.4f and std %.4f\n",
		set.Len(), set.Name, dim, what, splits.Mean, splits.Std)
	start := time.Now()
	lastLog := start
	err = writeAtomic(npyPath, func(w io.Writer) error {
		nw, err := npy.NewWriter(w, set.Len(), dim)
		if err != nil {
			return err
		}
		err = eval.ExtractBatches(b, m, set, splits.Mean, splits.Std, output, func(lo int, rows []float32) error {
			done := lo + len(rows)/dim
			switch {
			case bar != nil:
				bar.Add(len(rows) / dim)
			case time.Since(lastLog) >= embedLogEvery && done < set.Len():
				// Without a terminal, a line now and then.
				lastLog = time.Now()
				fmt.Fprintf(logw, "embed: %d/%d images, %.0f images/s\n", done, set.Len(), float64(done)/time.Since(start).Seconds())
			}
			return nw.Write(rows)
		})
		if err != nil {
			return err
		}
		return nw.Close()
	})
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(logw)
	}
	if err != nil {
		return err
	}
	if err := writeAtomic(csvPath, func(w io.Writer) error { return writeIndex(w, set) }); err != nil {
		os.Remove(npyPath)
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d x %d float32 %s of %s, %s) and its index %s in %.1f s\n",
		npyPath, set.Len(), dim, what, set.Name, cfg.Dataset, csvPath, time.Since(start).Seconds())
	return nil
}

// writeIndex writes the CSV index of set's rows: the row of the .npy file
// (which is also the image's index in its split: every image is embedded,
// in data-set order), the image's file (image folders; empty for sets read
// from a few large files, such as CIFAR's), and for a labelled set its label
// and class name (an unlabelled set, a flat folder of pictures, has
// neither column).
func writeIndex(w io.Writer, set *data.Set) error {
	cw := csv.NewWriter(w)
	labelled := len(set.Classes) > 0
	header := []string{"row", "file"}
	if labelled {
		header = append(header, "label", "class")
	}
	cw.Write(header)
	for i := range set.Len() {
		file := ""
		if set.Files != nil {
			file = set.Files[i]
		}
		row := []string{strconv.Itoa(i), file}
		if labelled {
			label, class := "", ""
			if l := set.Labels[i]; l >= 0 && int(l) < len(set.Classes) {
				label, class = strconv.Itoa(int(l)), set.Classes[l]
			}
			row = append(row, label, class)
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// writeAtomic writes path through a temporary file in the same folder,
// renamed over path only when write succeeds, so that a failed or
// interrupted embed leaves no partial file.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
