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
	params := t.model.Params()
	download := func(buf tensor.Buffer) []float32 {
		out := make([]float32, buf.Len())
		t.b.Download(out, buf)
		return out
	}
	estState, err := t.est.MarshalBinary()
	if err != nil {
		return err
	}
	pos, _ := json.Marshal(t.stream.Position())
	state := rankState{EstimatorRNG: base64.StdEncoding.EncodeToString(estState), Loader: string(pos)}
	if g, ok := t.b.(gemmChooser); ok {
		state.Gemm = g.GemmKind()
	}
	mine, _ := json.Marshal(state)
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
		if err := collective.AllReduceMean(t.comm, t.b, params.State()); err != nil {
			return fmt.Errorf("checkpoint: average the running statistics: %w", err)
		}
	}
	if t.comm.Rank() != 0 {
		return nil
	}
	all := make([]json.RawMessage, len(states))
	for i, s := range states {
		all[i] = s
	}
	rankStates, _ := json.Marshal(all)
	totals, _ := json.Marshal(t.totals)
	meta := map[string]string{
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
	// SogCLR's u, the same on every rank (each computes the loss of the
	// whole gathered batch).
	if u := t.oracle.SogCLRState(); u != nil {
		tensors = append(tensors, checkpoint.Tensor{Name: "sogclr_u", Shape: []int{len(u)}, Data: append([]float32(nil), u...)})
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
	if err := checkpoint.Write(filepath.Join(t.plan.Out, runfolder.StateFile), tensors, meta); err != nil {
		return err
	}
	return t.model.Save(filepath.Join(t.plan.Out, runfolder.ModelFile), map[string]string{
		"iteration": strconv.Itoa(t.iter), "estimator": t.est.Name(), "width": strconv.FormatFloat(t.cfg.Width, 'g', -1, 64),
		"proj_dim": strconv.Itoa(t.cfg.ProjDim), "dataset": t.cfg.Dataset, "version": t.plan.Version,
	})
}

// restore loads state.safetensors into the session.
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
	bad := func(format string, args ...any) error {
		return fmt.Errorf("resume from %s: %w", path, fmt.Errorf(format, args...))
	}
	if f.Metadata["format"] != stateFormat {
		return bad("format %q, want %q (written by another program version?)", f.Metadata["format"], stateFormat)
	}
	params := t.model.Params()
	// Group-norm runs of the versions before the head kept running
	// statistics had none (an empty bn_state); their model.safetensors is
	// refused too (resnet18.Model.Load).
	if x, ok := f.Get("bn_state"); ok && len(x.Data) == 0 && t.model.HeadNorm() != nil {
		return bad("the group-norm network was trained by an earlier simclr whose projection head kept no running statistics (it collapsed at small batches); this version's head normalises the features with running statistics first: train the network again")
	}
	load := func(name string, dst tensor.Buffer) error {
		x, ok := f.Get(name)
		if !ok {
			return bad("tensor %s is missing", name)
		}
		want := dst.Len()
		if dst == params.State() {
			want = params.StateLen() // a State buffer without state holds one unused element
		}
		if len(x.Data) != want {
			return bad("tensor %s has %d values, the network wants %d (config.json changed since the checkpoint?)", name, len(x.Data), want)
		}
		if want > 0 {
			t.b.Upload(dst, x.Data)
		}
		return nil
	}
	for _, p := range []struct {
		name string
		dst  tensor.Buffer
	}{{"params", params.Flat()}, {"bn_state", params.State()}, {"momentum", t.opt.State()}} {
		if err := load(p.name, p.dst); err != nil {
			return err
		}
	}
	if t.prev != nil {
		if err := load("prev_params", t.prev); err != nil {
			return err
		}
	}
	if m, ok := t.est.VRState(); ok {
		if err := load("vr_m", m); err != nil {
			return err
		}
	}
	if t.oracle.SogCLRState() != nil {
		u, ok := f.Get("sogclr_u")
		if !ok {
			return bad("tensor sogclr_u (SogCLR's averages) is missing")
		}
		if err := t.oracle.SetSogCLRState(u.Data); err != nil {
			return bad("%w", err)
		}
	}
	if hn := t.model.HeadNorm(); hn != nil {
		mean, okMean := f.Get("head_prev_mean")
		variance, okVar := f.Get("head_prev_var")
		switch {
		case okMean && okVar:
			if err := hn.SetPrevious(t.b, mean.Data, variance.Data); err != nil {
				return bad("%w", err)
			}
		case okMean != okVar: // written together (or, before any commit, neither)
			return bad("tensor head_prev_mean is there without head_prev_var or the other way round (present: mean %v, variance %v): the file is damaged", okMean, okVar)
		}
	}
	// Each rank continues its own draws: the checkpoint holds every rank's
	// generator state and stream position, so it needs the same number of
	// ranks (a checkpoint of one process has no rank_states).
	ranks, ok, err := checkpoint.ParseMeta[int](path, f.Metadata, "ranks")
	if err != nil {
		return err
	}
	if !ok {
		ranks = 1
	}
	if ranks != t.comm.Size() {
		return bad("%w: the run trained on %d rank(s) and this session has %d; resume it with the same number (mpirun -np %d simclr train --resume %s, or without mpirun for 1), since each rank continues its own draws",
			ErrRanksDiffer, ranks, t.comm.Size(), ranks, t.plan.Out)
	}
	mine := rankState{EstimatorRNG: f.Metadata["estimator_rng"], Loader: f.Metadata["loader"]}
	if s := f.Metadata["rank_states"]; s != "" {
		var all []rankState
		if err := json.Unmarshal([]byte(s), &all); err != nil || len(all) != ranks {
			return bad("rank_states: %d entries for %d ranks (%v)", len(all), ranks, err)
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
		return bad("estimator state: %v", err)
	}
	if err := t.est.UnmarshalBinary(estState); err != nil {
		return bad("%v", err)
	}
	t.totals = t.est.Totals()
	if s := f.Metadata["totals"]; s != "" {
		if err := json.Unmarshal([]byte(s), &t.totals); err != nil {
			return bad("totals: %v", err)
		}
	}
	var pos loader.Position
	if err := json.Unmarshal([]byte(mine.Loader), &pos); err != nil {
		return bad("loader position: %v", err)
	}
	if err := t.stream.Seek(pos); err != nil {
		return bad("%v", err)
	}
	// A field that does not parse is an error naming the file and the
	// field; only a missing one (a checkpoint older than the field) takes a
	// default.
	if t.iter, err = checkpoint.RequireMeta[int](path, f.Metadata, "iteration"); err != nil {
		return err
	}
	if t.wallOffset, _, err = checkpoint.ParseMeta[float64](path, f.Metadata, "wall_seconds"); err != nil {
		return err
	}
	if t.lastLoss, _, err = checkpoint.ParseMeta[float64](path, f.Metadata, "last_loss"); err != nil {
		return err
	}
	if t.lastExcess, ok, err = checkpoint.ParseMeta[float64](path, f.Metadata, "last_excess"); err != nil {
		return err
	} else if !ok {
		t.lastExcess = math.NaN()
	}
	// Checkpoints from before --halves counted one pass per evaluation.
	passes, ok, err := checkpoint.ParseMeta[int64](path, f.Metadata, "passes")
	if err != nil {
		return err
	}
	if !ok {
		passes = t.est.Totals().Evals
	}
	t.oracle.SetPasses(passes)
	if f.Metadata["totals"] == "" {
		t.totals.Evals = passes // a checkpoint from before data-parallel training, which kept no totals of its own
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
