package train

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/simclr-go/simclr/runfolder"
)

// Run is a trained run as the commands that read one (simclr eval, embed,
// levels) open it: its folder and the settings and plan its config.json
// recorded. Resuming a run goes through Start, which reads the same file.
type Run struct {
	Dir      string
	Settings Settings
	Plan     Plan
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
