package train

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
)

// stateFormat versions state.safetensors.
const stateFormat = "simclr-train-state-1"

// ErrRanksDiffer is returned (wrapped) when a run is resumed on another
// number of ranks than it trained on.
var ErrRanksDiffer = errors.New("the number of ranks differs from the checkpoint's")

// rankState is what differs between ranks: the position of each rank's
// level draws and loader stream, and the SGEMM its backend computes with.
type rankState struct {
	EstimatorRNG string `json:"estimator_rng"` // base64 of the estimator's MarshalBinary
	Loader       string `json:"loader"`        // JSON of the stream position
	// Gemm is the CPU backend's SGEMM kind (blas.Choice.Kind), which a
	// start-up race chose: a resumed run keeps it, as the two kernels round
	// differently and a new race may choose the other. Empty on other
	// backends and in checkpoints written before it was recorded.
	Gemm string `json:"gemm,omitempty"`
}

// gemmChooser is a backend whose SGEMM was chosen by measurement and can be
// chosen again by kind (the CPU backend).
type gemmChooser interface {
	GemmKind() string
	SetGemmKind(kind string) error
}

// checkpoint writes state.safetensors (everything a resumed run needs,
// including the parameters) and then model.safetensors (the network under
// torchvision names, for users), each atomically. Resuming reads only the
// state file, so a kill between the two writes leaves a consistent run.
// Every rank calls it: the ranks' generator states and stream positions
// are gathered to rank 0, which alone writes.
func (t *trainer) checkpoint() error {
	mine, estState, err := t.rankState()
	if err != nil {
		return err
	}
	states, err := collective.AllGatherBytes(t.comm, mine)
	if err != nil {
		return fmt.Errorf("checkpoint: gather the ranks' states: %w", err)
	}
	// Each rank's batch-norm running statistics saw only its own batches;
	// the checkpoint (and every rank) keeps their mean. They serve
	// evaluation only: training normalises with batch statistics. A
	// group-norm network's only state is its head's running statistics,
	// part of the function trained and the same on every rank already
	// (reduceHeadStatistics): averaging equal values again over 3 ranks
	// would round some of them, and a checkpoint would change the training.
	if len(t.model.BatchNorms()) > 0 {
		if err := collective.AllReduceMean(t.comm, t.b, t.model.Params().State()); err != nil {
			return fmt.Errorf("checkpoint: average the running statistics: %w", err)
		}
	}
	if t.comm.Rank() != 0 {
		return nil
	}
	if err := checkpoint.Write(filepath.Join(t.plan.Out, runfolder.StateFile), t.stateTensors(), t.stateMeta(states, estState)); err != nil {
		return err
	}
	return t.model.Save(filepath.Join(t.plan.Out, runfolder.ModelFile), map[string]string{
		"iteration": strconv.Itoa(t.iter), "estimator": t.est.Name(), "width": strconv.FormatFloat(t.plan.Run.Width, 'g', -1, 64),
		"proj_dim": strconv.Itoa(t.plan.Run.ProjDim), "dataset": t.plan.Run.Dataset, "version": t.plan.Version,
	})
}

// rankState is this rank's rankState as JSON, and its estimator's state.
func (t *trainer) rankState() (mine, estState []byte, err error) {
	estState, err = t.est.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	pos, _ := json.Marshal(t.stream.Position())
	state := rankState{EstimatorRNG: base64.StdEncoding.EncodeToString(estState), Loader: string(pos)}
	if g, ok := t.b.(gemmChooser); ok {
		state.Gemm = g.GemmKind()
	}
	mine, _ = json.Marshal(state)
	return mine, estState, nil
}

// stateMeta is state.safetensors' metadata: the counters, the ranks'
// states (states, gathered) and, for checkpoints of one process as before
// the ranks existed, rank 0's estimator state and stream position again.
func (t *trainer) stateMeta(states [][]byte, estState []byte) map[string]string {
	all := make([]json.RawMessage, len(states))
	for i, s := range states {
		all[i] = s
	}
	rankStates, _ := json.Marshal(all)
	totals, _ := json.Marshal(t.totals)
	pos, _ := json.Marshal(t.stream.Position())
	params := t.model.Params()
	return map[string]string{
		"ranks":         strconv.Itoa(t.comm.Size()),
		"rank_states":   string(rankStates),
		"totals":        string(totals),
		"format":        stateFormat,
		"iteration":     strconv.Itoa(t.iter),
		"estimator":     t.est.Name(),
		"estimator_rng": base64.StdEncoding.EncodeToString(estState),
		"loader":        string(pos),
		"wall_seconds":  strconv.FormatFloat(t.wall(), 'g', -1, 64),
		"last_loss":     strconv.FormatFloat(t.lastLoss, 'g', -1, 64),
		"last_excess":   strconv.FormatFloat(t.lastExcess, 'g', -1, 64),
		"finished":      strconv.FormatBool(t.finished),
		"passes":        strconv.FormatInt(t.oracle.Passes(), 10),
		"params_len":    strconv.Itoa(params.Len()),
		"state_len":     strconv.Itoa(params.StateLen()),
	}
}

// stateTensors are state.safetensors' tensors, downloaded from the device.
func (t *trainer) stateTensors() []checkpoint.Tensor {
	params := t.model.Params()
	download := func(buf tensor.Buffer) []float32 {
		out := make([]float32, buf.Len())
		t.b.Download(out, buf)
		return out
	}
	tensors := []checkpoint.Tensor{
		{Name: "params", Shape: []int{params.Len()}, Data: download(params.Flat())},
		// Running statistics: batch norm's, or with group norm the head's
		// (a network without any has a State buffer of one unused element).
		{Name: "bn_state", Shape: []int{params.StateLen()}, Data: download(params.State())[:params.StateLen()]},
		{Name: "momentum", Shape: []int{params.Len()}, Data: download(t.opt.State())},
	}
	if t.prev != nil {
		tensors = append(tensors, checkpoint.Tensor{Name: "prev_params", Shape: []int{params.Len()}, Data: download(t.prev)})
	}
	if m, ok := t.est.VRState(); ok {
		tensors = append(tensors, checkpoint.Tensor{Name: "vr_m", Shape: []int{params.Len()}, Data: download(m)})
	}
	// A loss's per-image state (SogCLR's u), the same on every rank (each
	// computes the loss of the whole gathered batch).
	if s, ok := t.oracle.Loss().(contrastive.ImageState); ok {
		u := s.State()
		tensors = append(tensors, checkpoint.Tensor{Name: s.StateName(), Shape: []int{len(u)}, Data: append([]float32(nil), u...)})
	}
	// The group-norm head's statistics of the previous iteration, with
	// which the next VR correction evaluates x_{t-1}.
	if hn := t.model.HeadNorm(); hn != nil {
		if mean, variance, ok := hn.Previous(); ok {
			tensors = append(tensors,
				checkpoint.Tensor{Name: "head_prev_mean", Shape: []int{mean.Len()}, Data: download(mean)},
				checkpoint.Tensor{Name: "head_prev_var", Shape: []int{variance.Len()}, Data: download(variance)})
		}
	}
	return tensors
}

// restore loads state.safetensors into the session: the tensors, this
// rank's draws and stream position, and the counters; rank 0 cuts the
// logs back to the checkpoint's iteration.
func (t *trainer) restore() error {
	path := filepath.Join(t.plan.Out, runfolder.StateFile)
	if t.comm.Rank() == 0 {
		checkpoint.RemoveStale(path)
		checkpoint.RemoveStale(filepath.Join(t.plan.Out, runfolder.ModelFile))
	}
	f, err := checkpoint.Read(path)
	if err != nil {
		return err
	}
	st := checkpointFile{path: path, f: f}
	if f.Metadata["format"] != stateFormat {
		return st.bad("format %q, want %q (written by another program version?)", f.Metadata["format"], stateFormat)
	}
	if err := t.restoreTensors(st); err != nil {
		return err
	}
	if err := t.restoreRankState(st); err != nil {
		return err
	}
	if err := t.restoreCounters(st); err != nil {
		return err
	}
	if t.comm.Rank() != 0 {
		return nil
	}
	for _, name := range []string{runfolder.MetricsFile, runfolder.EvalFile} {
		if err := runfolder.TruncateAfter(filepath.Join(t.plan.Out, name), t.iter); err != nil {
			return err
		}
	}
	return nil
}

// checkpointFile is a state.safetensors being restored.
type checkpointFile struct {
	path string
	f    *checkpoint.File
}

// bad is an error of the file, naming it.
func (s checkpointFile) bad(format string, args ...any) error {
	return fmt.Errorf("resume from %s: %w", s.path, fmt.Errorf(format, args...))
}

// restoreTensors uploads the checkpoint's tensors: the parameters, the
// running statistics, the optimizer's state, x_{t-1} and the VR estimate,
// SogCLR's averages and the group-norm head's previous statistics.
func (t *trainer) restoreTensors(st checkpointFile) error {
	f, params := st.f, t.model.Params()
	// Group-norm runs of the versions before the head kept running
	// statistics had none (an empty bn_state); their model.safetensors is
	// refused too (resnet18.Model.Load).
	if x, ok := f.Get("bn_state"); ok && len(x.Data) == 0 && t.model.HeadNorm() != nil {
		return st.bad("the group-norm network was trained by an earlier simclr whose projection head kept no running statistics (it collapsed at small batches); this version's head normalises the features with running statistics first: train the network again")
	}
	load := func(name string, dst tensor.Buffer) error {
		x, ok := f.Get(name)
		if !ok {
			return st.bad("tensor %s is missing", name)
		}
		want := dst.Len()
		if dst == params.State() {
			want = params.StateLen() // a State buffer without state holds one unused element
		}
		if len(x.Data) != want {
			return st.bad("tensor %s has %d values, the network wants %d (config.json changed since the checkpoint?)", name, len(x.Data), want)
		}
		if want > 0 {
			t.b.Upload(dst, x.Data)
		}
		return nil
	}
	bufs := map[string]tensor.Buffer{"params": params.Flat(), "bn_state": params.State(), "momentum": t.opt.State()}
	names := []string{"params", "bn_state", "momentum"}
	if t.prev != nil {
		bufs["prev_params"], names = t.prev, append(names, "prev_params")
	}
	if m, ok := t.est.VRState(); ok {
		bufs["vr_m"], names = m, append(names, "vr_m")
	}
	for _, name := range names {
		if err := load(name, bufs[name]); err != nil {
			return err
		}
	}
	if s, ok := t.oracle.Loss().(contrastive.ImageState); ok {
		u, ok := f.Get(s.StateName())
		if !ok {
			return st.bad("tensor %s (the %s loss's per-image state) is missing", s.StateName(), t.oracle.Loss().Kind())
		}
		if err := s.SetState(u.Data); err != nil {
			return st.bad("%w", err)
		}
	}
	return t.restoreHeadPrevious(st)
}

// restoreHeadPrevious restores the group-norm head's statistics of the
// previous iteration, written together (or, before any commit, neither).
func (t *trainer) restoreHeadPrevious(st checkpointFile) error {
	hn := t.model.HeadNorm()
	if hn == nil {
		return nil
	}
	mean, okMean := st.f.Get("head_prev_mean")
	variance, okVar := st.f.Get("head_prev_var")
	switch {
	case okMean && okVar:
		if err := hn.SetPrevious(t.b, mean.Data, variance.Data); err != nil {
			return st.bad("%w", err)
		}
	case okMean != okVar:
		return st.bad("tensor head_prev_mean is there without head_prev_var or the other way round (present: mean %v, variance %v): the file is damaged", okMean, okVar)
	}
	return nil
}

// restoreRankState finds this rank's state in the checkpoint and restores
// its SGEMM, generator state and stream position. Each rank continues its
// own draws: the checkpoint holds every rank's generator state and stream
// position, so it needs the same number of ranks (a checkpoint of one
// process has no rank_states).
func (t *trainer) restoreRankState(st checkpointFile) error {
	meta := st.f.Metadata
	ranks, ok, err := checkpoint.ParseMeta[int](st.path, meta, "ranks")
	if err != nil {
		return err
	}
	if !ok {
		ranks = 1
	}
	if ranks != t.comm.Size() {
		return st.bad("%w: the run trained on %d rank(s) and this session has %d; resume it with the same number (mpirun -np %d simclr train --resume %s, or without mpirun for 1), since each rank continues its own draws",
			ErrRanksDiffer, ranks, t.comm.Size(), ranks, t.plan.Out)
	}
	mine := rankState{EstimatorRNG: meta["estimator_rng"], Loader: meta["loader"]}
	if s := meta["rank_states"]; s != "" {
		var all []rankState
		if err := json.Unmarshal([]byte(s), &all); err != nil || len(all) != ranks {
			return st.bad("rank_states: %d entries for %d ranks (%v)", len(all), ranks, err)
		}
		mine = all[t.comm.Rank()]
	}
	if g, ok := t.b.(gemmChooser); ok && mine.Gemm != "" && mine.Gemm != g.GemmKind() {
		if err := g.SetGemmKind(mine.Gemm); err != nil {
			return fmt.Errorf("resume %s: the run trained with the %s SGEMM, and resuming with another would round differently: %w (resume on a machine that has it)", t.plan.Out, mine.Gemm, err)
		}
		t.logf("resume: SGEMM %s, as the run trained with (%s)", mine.Gemm, t.b.Describe())
	}
	estState, err := base64.StdEncoding.DecodeString(mine.EstimatorRNG)
	if err != nil {
		return st.bad("estimator state: %v", err)
	}
	if err := t.est.UnmarshalBinary(estState); err != nil {
		return st.bad("%v", err)
	}
	var pos loader.Position
	if err := json.Unmarshal([]byte(mine.Loader), &pos); err != nil {
		return st.bad("loader position: %v", err)
	}
	if err := t.stream.Seek(pos); err != nil {
		return st.bad("%v", err)
	}
	return nil
}

// restoreCounters restores the run's totals, iteration, wall time, last
// losses and oracle passes. A field that does not parse is an error naming
// the file and the field; only a missing one (a checkpoint older than the
// field) takes a default.
func (t *trainer) restoreCounters(st checkpointFile) error {
	path, meta := st.path, st.f.Metadata
	t.totals = t.est.Totals()
	if s := meta["totals"]; s != "" {
		if err := json.Unmarshal([]byte(s), &t.totals); err != nil {
			return st.bad("totals: %v", err)
		}
	}
	var err error
	if t.iter, err = checkpoint.RequireMeta[int](path, meta, "iteration"); err != nil {
		return err
	}
	if t.wallOffset, _, err = checkpoint.ParseMeta[float64](path, meta, "wall_seconds"); err != nil {
		return err
	}
	if t.lastLoss, _, err = checkpoint.ParseMeta[float64](path, meta, "last_loss"); err != nil {
		return err
	}
	var ok bool
	if t.lastExcess, ok, err = checkpoint.ParseMeta[float64](path, meta, "last_excess"); err != nil {
		return err
	} else if !ok {
		t.lastExcess = math.NaN()
	}
	// Checkpoints from before --halves counted one pass per evaluation.
	passes, ok, err := checkpoint.ParseMeta[int64](path, meta, "passes")
	if err != nil {
		return err
	}
	if !ok {
		passes = t.est.Totals().Evals
	}
	t.oracle.SetPasses(passes)
	if meta["totals"] == "" {
		t.totals.Evals = passes // a checkpoint from before data-parallel training, which kept no totals of its own
	}
	return nil
}
