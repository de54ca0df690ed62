package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/runfolder"
)

// Run is a trained run as the commands that read one (simclr eval, embed,
// levels) open it: its folder and the settings and plan its config.json
// recorded. Resuming a run goes through Start, which reads the same file.
type Run struct {
	Dir      string
	Settings Settings
	Plan     RunPlan
}

// OpenRun opens the run folder dir: the one way a command reads a trained
// run. It reads config.json only; ModelFile finds the network.
func OpenRun(dir string) (*Run, error) {
	s, p, err := LoadRun(dir)
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Settings: s, Plan: p}, nil
}

// ModelFile is the run's model.safetensors, checked to exist, so that a run
// that has not checkpointed yet is reported before any data is read.
func (r *Run) ModelFile() (string, error) {
	path := filepath.Join(r.Dir, runfolder.ModelFile)
	if _, err := os.Stat(path); err != nil {
		return path, fmt.Errorf("run folder %s has no %s yet (it writes one at its first checkpoint): %w", r.Dir, runfolder.ModelFile, err)
	}
	return path, nil
}

// SogCLRState is what a SogCLR run's state file holds of its moving
// averages (docs/definitions.md, section 10 "Decoupled losses"), with what
// it takes to replay the stream that made them.
type SogCLRState struct {
	// U is u_k of every training image (0: never visited).
	U []float32
	// Head is where the training stream stands: the next image the run
	// would draw.
	Head loader.Position
	// Iteration is the iterations done.
	Iteration int
	// Batch is the images of one draw (2^L) and DrawsPerIteration the
	// draws an iteration averages (--lsgd-draws).
	Batch, DrawsPerIteration int
	// StreamSeed seeds the training stream (rank 0's, the only one).
	StreamSeed uint64
	// Gamma is the gamma the next visit of an image would use (the
	// schedule's last value).
	Gamma float64
}

// SogCLRState reads u and the stream position from the run's
// state.safetensors. It needs a SogCLR run of one process: on several
// ranks each rank's stream is its own.
func (r *Run) SogCLRState() (*SogCLRState, error) {
	if loss, err := contrastive.ParseLoss(r.Settings.Loss); err != nil || loss != contrastive.SogCLR {
		return nil, fmt.Errorf("run %s trained with --loss %s: only a SogCLR run (--loss sogclr) keeps the averages u", r.Dir, r.Settings.Loss)
	}
	path := filepath.Join(r.Dir, runfolder.StateFile)
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, fmt.Errorf("run folder %s: %w (it writes one at its first checkpoint)", r.Dir, err)
	}
	ranks, ok, err := checkpoint.ParseMeta[int](path, f.Metadata, "ranks")
	if err != nil {
		return nil, err
	}
	if ok && ranks != 1 {
		return nil, fmt.Errorf("%s: the run trained on %d ranks, each with a stream of its own; the replay of a SogCLR run needs a run of one process", path, ranks)
	}
	iter, err := checkpoint.RequireMeta[int](path, f.Metadata, "iteration")
	if err != nil {
		return nil, err
	}
	var head loader.Position
	if err := json.Unmarshal([]byte(f.Metadata["loader"]), &head); err != nil {
		return nil, fmt.Errorf("%s: metadata field \"loader\" is %q, not a stream position: the file is damaged or was not written by simclr", path, f.Metadata["loader"])
	}
	u, ok := f.Get("sogclr_u")
	if !ok {
		return nil, fmt.Errorf("%s: tensor sogclr_u (SogCLR's averages) is missing: the file is damaged or was written before SogCLR kept state", path)
	}
	total := r.Plan.TotalIters
	return &SogCLRState{U: u.Data, Head: head, Iteration: iter, Batch: 1 << r.Settings.MaxLevel,
		DrawsPerIteration: max(r.Settings.NL, 1), StreamSeed: rankSeed(r.Settings.Seed, 0),
		Gamma: r.Settings.gammaSchedule().At(max(total-1, 0), max(total, 1))}, nil
}
