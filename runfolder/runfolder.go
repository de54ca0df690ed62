// Package runfolder defines the files a training run leaves in its folder
// (docs/definitions.md, section 7 "What a run writes") and reads and appends
// them, so that the trainer, the evaluation commands and the report agree on
// one format:
//
//	config.json          every resolved setting, the program version, the device
//	metrics.jsonl        one Metrics object per logged iteration
//	eval.jsonl           one Eval object per evaluation during training
//	linear_probe.json    the Probe of the last linear-probe evaluation
//	model.safetensors    the network (torchvision names, head.*)
//	state.safetensors    everything else a resumed run needs
//
// A JSON-lines file may be kept compressed as NAME.gz (metrics.jsonl.gz):
// the readers take it where NAME itself is missing, so run folders stored
// compressed open as written ones do.
package runfolder

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File names inside a run folder.
const (
	ConfigFile  = "config.json"
	MetricsFile = "metrics.jsonl"
	EvalFile    = "eval.jsonl"
	ProbeFile   = "linear_probe.json"
	ModelFile   = "model.safetensors"
	StateFile   = "state.safetensors"
)

// Metrics is one line of metrics.jsonl: the state after Iteration
// iterations (1-based count of completed iterations).
type Metrics struct {
	Iteration int `json:"iteration"`
	// Epoch is Iteration over the iterations of an epoch, ceil(n/2^L)
	// (docs/definitions.md, section 5 "Epochs and run length").
	Epoch float64 `json:"epoch"`
	// DataEpoch is SamplesDrawn / n, the passes over the training images.
	DataEpoch float64 `json:"data_epoch"`
	// Levels are the levels queried this iteration.
	Levels []int `json:"levels"`
	// SamplesDrawn and Evaluations are cumulative (docs/definitions.md, section
	// 3 "Cost accounting"). Evaluations counts forward/backward passes through
	// the network: one per oracle evaluation with --halves shared (a VR
	// correction evaluates each draw twice), three per evaluation of H^l with
	// --halves separate (B, B1, B2; h^l takes one).
	SamplesDrawn int64 `json:"samples_drawn"`
	Evaluations  int64 `json:"evaluations"`
	// Redraws counts RU/RR levels drawn above the largest servable level
	// and drawn again (cumulative; docs/definitions.md, section 2 "The
	// estimators").
	Redraws int64 `json:"redraws,omitempty"`
	// Loss is the mean SimCLR loss L_B of the batches drawn this iteration,
	// evaluated at the current parameters (batches of different levels
	// have different loss scales: log(2N - 1) at chance for N images).
	Loss float64 `json:"loss"`
	// LossMinusLog2NMinus1 is the mean of L_B - log(2N - 1) over the same
	// batches: 0 for a network that has learnt nothing whatever the batch
	// size, so it compares across levels, estimators and runs. Absent
	// (nil) in runs written before it existed.
	LossMinusLog2NMinus1 *float64 `json:"loss_minus_log_2n_minus_1,omitempty"`
	LR                   float64  `json:"lr"`
	WallSeconds          float64  `json:"wall_seconds"`
}

// Eval is one line of eval.jsonl: a kNN evaluation during training.
type Eval struct {
	Iteration    int     `json:"iteration"`
	Epoch        float64 `json:"epoch"`
	SamplesDrawn int64   `json:"samples_drawn"`
	WallSeconds  float64 `json:"wall_seconds"`
	KNNTop1      float64 `json:"knn_top1"`
	KNNTop5      float64 `json:"knn_top5"`
	K            int     `json:"k"`
	TrainImages  int     `json:"train_images"`
	TestImages   int     `json:"test_images"`
}

// Probe is linear_probe.json.
type Probe struct {
	Checkpoint   string      `json:"checkpoint"`
	Iteration    int         `json:"iteration"`
	Dataset      string      `json:"dataset"`
	Top1         float64     `json:"top1"`
	Top5         float64     `json:"top5"`
	L2           float64     `json:"l2"`
	Grid         []GridPoint `json:"grid"`
	TrainImages  int         `json:"train_images"`
	TestImages   int         `json:"test_images"`
	FeatureDim   int         `json:"feature_dim"`
	Seconds      float64     `json:"seconds"`
	RandomInit   bool        `json:"random_init,omitempty"`
	BaselineTop1 *float64    `json:"random_init_top1,omitempty"`
}

// GridPoint is the held-out accuracy of one L2 penalty.
type GridPoint struct {
	L2          float64 `json:"l2"`
	HoldOutTop1 float64 `json:"holdout_top1"`
}

// WriteJSON writes v as indented JSON to path atomically (temporary file,
// sync, rename).
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s: %w (the file is damaged; it is JSON written by simclr)", path, err)
	}
	return nil
}

// Appender appends JSON lines to a file, syncing each one so that a crash
// loses at most the line being written.
type Appender struct {
	f *os.File
}

// OpenAppender opens path for appending, creating it if needed.
func OpenAppender(path string) (*Appender, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Appender{f: f}, nil
}

// Append writes v as one JSON line.
func (a *Appender) Append(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := a.f.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("append to %s: %w", a.f.Name(), err)
	}
	return nil
}

// Close syncs and closes the file.
func (a *Appender) Close() error {
	if a == nil || a.f == nil {
		return nil
	}
	a.f.Sync()
	return a.f.Close()
}

// CompressedSuffix names the compressed form of a run file.
const CompressedSuffix = ".gz"

// ReadFile reads path or, where path is missing, its gzip-compressed form
// path.gz. A missing file is an error wrapping os.ErrNotExist that names
// path.
func ReadFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if !errors.Is(err, os.ErrNotExist) {
		return data, err
	}
	f, gzErr := os.Open(path + CompressedSuffix)
	if errors.Is(gzErr, os.ErrNotExist) {
		return nil, err
	}
	if gzErr != nil {
		return nil, gzErr
	}
	defer f.Close()
	zr, gzErr := gzip.NewReader(f)
	if gzErr != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), gzErr)
	}
	data, gzErr = io.ReadAll(zr)
	if gzErr != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), gzErr)
	}
	return data, nil
}

// ReadLines decodes every complete JSON line of path (or of path.gz, see
// ReadFile); a missing file has no lines. A damaged last line (a crash
// mid-write) is skipped; a damaged line elsewhere is an error.
func ReadLines[T any](path string) ([]T, error) {
	data, err := ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []T
	lines := bytes.Split(bytes.TrimSpace(data), []byte{'\n'})
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			if i == len(lines)-1 {
				break // the line a crash interrupted
			}
			return out, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// TruncateAfter rewrites the JSON-lines file at path keeping only the lines
// whose "iteration" is at most iteration: a resumed run continues from its
// checkpoint, and lines logged after it would otherwise appear twice.
func TruncateAfter(path string, iteration int) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var it struct {
			Iteration *int `json:"iteration"`
		}
		if json.Unmarshal(sc.Bytes(), &it) != nil || it.Iteration == nil || *it.Iteration > iteration {
			continue
		}
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	return writeAtomic(path, kept.Bytes())
}
