package train

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/optim"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
)

// Environment of a TestDistWorker rank started by mpirun.
const (
	envDistWorker = "SIMCLR_TRAIN_DIST_WORKER" // the run folder
	envDistEst    = "SIMCLR_TRAIN_DIST_ESTIMATOR"
	envDistIters  = "SIMCLR_TRAIN_DIST_ITERATIONS"
	envDistKillAt = "SIMCLR_TRAIN_DIST_KILL_AT" // rank 1 kills itself after this iteration
	envDistResume = "SIMCLR_TRAIN_DIST_RESUME"
	envDistStop   = "SIMCLR_TRAIN_DIST_STOP_AFTER" // iterations before an interruption
	envDistFailAt = "SIMCLR_TRAIN_DIST_FAIL_AT"    // rank 1 fails (an error) after this iteration
	envDistNorm   = "SIMCLR_TRAIN_DIST_NORM"       // --norm (default batch)
	envDistNoCkpt = "SIMCLR_TRAIN_DIST_NO_CKPT"    // no periodic checkpoints (only the final one)
)

// distConfig is the tiny run every rank and the reference train: 8 images
// per L-SGD draw (4 per rank on 2 ranks), levels 1..3, QE 2 so that VR
// alternates fresh estimates and corrections. estimator is --estimator, or
// ESTIMATOR:LOSS with --loss too.
func distConfig(out, estimator string, iterations int) Settings {
	cfg := Defaults()
	cfg.Dataset = "synthetic"
	cfg.Estimator = estimator
	if est, loss, ok := strings.Cut(estimator, ":"); ok {
		cfg.Estimator, cfg.Loss = est, loss
	}
	cfg.MinLevel, cfg.MaxLevel = 1, 3
	cfg.Iterations = iterations
	cfg.QE = 2
	cfg.Width = 0.0625
	cfg.ProjDim = 16
	cfg.LR = 0.05
	cfg.Device = "cpu"
	cfg.Workers = 1
	cfg.Probe = false
	cfg.CheckpointEvery = 2
	cfg.Dist = "mpi"
	cfg.Out = out
	return cfg
}

// serialCPU is a CPU backend with one worker: the workers' partial weight
// gradients are summed in an order that depends on their number, and mpirun
// binds each rank to one core, so the ranks and the reference must agree
// on it to be compared closely.
func serialCPU() *cpu.Backend {
	g, err := blas.OpenBLASThreads(1)
	if err != nil {
		g = blas.PureGo(1)
	}
	return cpu.NewWith(g, 1)
}

func paramsFile(dir string, rank, iter int) string {
	return filepath.Join(dir, fmt.Sprintf("params-rank%d-iter%d.bin", rank, iter))
}

// stateFile is where a worker writes its running statistics after a step.
func stateFile(dir string, rank, iter int) string {
	return filepath.Join(dir, fmt.Sprintf("state-rank%d-iter%d.bin", rank, iter))
}

// requireMPIRun returns mpirun's path; without it the test skips on a
// developer's machine and fails under CI, which installs Open MPI.
func requireMPIRun(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		testenv.Missing(t, "mpirun not found: install openmpi-bin and libopenmpi3 to run the distributed training tests (.ci/run does)")
	}
	return path
}

// mpirunWorkers runs TestDistWorker on np ranks with env and returns its
// combined output and error.
func mpirunWorkers(t *testing.T, np int, env ...string) (string, error) {
	t.Helper()
	// A session folder of its own: mpiruns of tests of several packages run
	// at once, and in one shared folder one can fail to set up its own.
	session, err := os.MkdirTemp("", "ompi-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(session)
	// A job whose ranks wait for each other forever is a failure, not a
	// test timeout: after 5 minutes mpirun gets SIGTERM, which stops its
	// ranks too.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, requireMPIRun(t), "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np),
		"--mca", "btl", "self,vader,tcp", "--mca", "orte_tmpdir_base", session, os.Args[0], "-test.run=^TestDistWorker$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpirun -np %d did not end within 5 minutes (ranks waiting for each other?):\n%s", np, out)
	}
	return string(out), err
}

// TestDistWorker is one rank of the tests below; it runs only under mpirun.
func TestDistWorker(t *testing.T) {
	out := os.Getenv(envDistWorker)
	if out == "" {
		t.Skip("run by TestDistTrainingMatchesSingleProcess under mpirun")
	}
	iters, _ := strconv.Atoi(os.Getenv(envDistIters))
	killAt, _ := strconv.Atoi(os.Getenv(envDistKillAt))
	failAt, _ := strconv.Atoi(os.Getenv(envDistFailAt))
	cfg := distConfig(out, os.Getenv(envDistEst), iters)
	if norm := os.Getenv(envDistNorm); norm != "" {
		cfg.Norm = norm
	}
	if os.Getenv(envDistNoCkpt) != "" {
		cfg.CheckpointEvery = 0
	}
	// As the command line does: mpirun's SIGTERM stops the run.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := serialCPU()
	hooks := Session{Log: os.Stderr, Splits: syntheticSplits(64, 16, 16, 4), Backend: b}
	hooks.StopAfter, _ = strconv.Atoi(os.Getenv(envDistStop))
	rank, _ := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_RANK"))
	hooks.OnStep = func(iter int, params, state tensor.Buffer) error {
		for path, buf := range map[string]tensor.Buffer{paramsFile(out, rank, iter): params, stateFile(out, rank, iter): state} {
			data := cpu.Data(buf)
			raw := make([]byte, 4*len(data))
			for i, v := range data {
				binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
			}
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				return err
			}
		}
		if killAt > 0 && iter == killAt && rank == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if failAt > 0 && iter == failAt && rank == 1 {
			return errors.New("a failure of rank 1 alone")
		}
		return nil
	}
	var err error
	if os.Getenv(envDistResume) != "" {
		_, err = Resume(ctx, out, nil, hooks)
	} else {
		_, err = Train(ctx, cfg, hooks)
	}
	if errors.Is(err, ErrInterrupted) && hooks.StopAfter > 0 {
		fmt.Printf("worker rank %d interrupted as asked: %v\n", rank, err)
		return
	}
	if err != nil {
		// Printed at once: mpirun kills a stopped job's ranks a second
		// after SIGTERM.
		fmt.Fprintf(os.Stderr, "worker error: %v\n", err)
		os.Exit(3)
	}
	fmt.Printf("worker rank %d done\n", rank)
}

func readParams(t *testing.T, path string) []float32 {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(buf)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return out
}

// TestDistTrainingMatchesSingleProcess trains on 2 ranks under mpirun,
// stopped after 3 iterations and resumed for the 4th, and checks, after
// every step, that the ranks hold exactly the same parameters and that they
// match a single process that makes the same draws (rank r's seeds) and
// averages them, within float tolerance. The resume at a VR correction
// also checks that the ranks kept one VR state m_t: the checkpoint holds
// rank 0's, and a rank whose m_t had drifted would continue differently.
// With group norm the ranks must also agree on the head's running
// statistics, which each rank's passes move by its own images (the
// single-process comparison is left to the batch-norm cases).
//
// SogCLR runs 20 iterations, stopped after 10: each rank's stream of 64
// images gives 4 a step, so images come back from iteration 17 on, and
// their steps then use the u that the split draws kept (gathered, the
// same on every rank) and the checkpoint carried.
func TestDistTrainingMatchesSingleProcess(t *testing.T) {
	const ranks = 2
	for _, tc := range []struct {
		est, norm   string
		iters, stop int
	}{{"lsgd", "batch", 4, 3}, {"vr-rtmlmc", "batch", 4, 3}, {"vr-rtmlmc", "group", 4, 3}, {"lsgd:dcl", "batch", 4, 3}, {"dcl", "batch", 4, 3}, {"sogclr", "batch", 20, 10}} {
		t.Run(tc.est+"/"+tc.norm, func(t *testing.T) {
			est, iters := tc.est, tc.iters
			// L-SGD with any loss; dcl and sogclr are the estimator names
			// of earlier runs, L-SGD with that loss.
			split := strings.HasPrefix(est, "lsgd") || est == "dcl" || est == "sogclr"
			out := filepath.Join(t.TempDir(), "run")
			log, err := mpirunWorkers(t, ranks, envDistWorker+"="+out, envDistEst+"="+est, envDistNorm+"="+tc.norm,
				envDistIters+"="+strconv.Itoa(iters), envDistStop+"="+strconv.Itoa(tc.stop))
			if err != nil || strings.Count(log, "interrupted as asked") != ranks {
				t.Fatalf("mpirun, stopping after %d iterations: %v\n%s", tc.stop, err, log)
			}
			log, err = mpirunWorkers(t, ranks, envDistWorker+"="+out, envDistResume+"=1")
			if err != nil {
				t.Fatalf("mpirun --resume: %v\n%s", err, log)
			}
			// Batch norm's running statistics are each rank's own until a
			// checkpoint averages them (they only serve evaluation); the
			// group-norm head's are part of the function trained.
			files := []func(string, int, int) string{paramsFile}
			if tc.norm == "group" {
				files = append(files, stateFile)
			}
			for it := 1; it <= iters; it++ {
				for _, file := range files {
					p0 := readParams(t, file(out, 0, it))
					for r := 1; r < ranks; r++ {
						pr := readParams(t, file(out, r, it))
						for i := range p0 {
							if math.Float32bits(p0[i]) != math.Float32bits(pr[i]) {
								t.Fatalf("iteration %d: rank %d's value %d of %s is %g, rank 0's %g: the ranks drifted apart",
									it, r, i, filepath.Base(file(out, r, it)), pr[i], p0[i])
							}
						}
					}
				}
			}
			if tc.norm == "group" {
				return
			}
			ref := referenceRun(t, distConfig(out, est, iters), ranks)
			for it := 1; it <= iters; it++ {
				p0 := readParams(t, paramsFile(out, 0, it))
				var maxDiff, maxAbs float64
				for i := range p0 {
					maxDiff = max(maxDiff, math.Abs(float64(p0[i]-ref[it-1][i])))
					maxAbs = max(maxAbs, math.Abs(float64(ref[it-1][i])))
				}
				// The same arithmetic (one worker each side), but the mean
				// is an all-reduce on one side and a sum of Axpys on the
				// other: 1e-5 of the largest parameter allows float32
				// rounding, while a step that used other draws, or one
				// rank's estimate alone, moves parameters by far more.
				t.Logf("iteration %d: largest difference from the single-process run %g (largest parameter %g)", it, maxDiff, maxAbs)
				if maxDiff > 1e-5*maxAbs {
					t.Errorf("iteration %d: parameters differ from the single-process run by up to %g (largest parameter %g)", it, maxDiff, maxAbs)
				}
			}
			// Rank 0 alone wrote the run folder, and it counts both ranks' draws.
			var last runfolder.Metrics
			lines, err := os.ReadFile(filepath.Join(out, runfolder.MetricsFile))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(lines), "\n"); n != iters {
				t.Errorf("metrics.jsonl has %d lines, want %d (one writer)", n, iters)
			}
			ls := strings.Split(strings.TrimSpace(string(lines)), "\n")
			if err := json.Unmarshal([]byte(ls[len(ls)-1]), &last); err != nil {
				t.Fatal(err)
			}
			if split && last.SamplesDrawn != int64(iters*8) {
				t.Errorf("%s on 2 ranks drew %d images in %d iterations, want %d (8 per draw, split)", est, last.SamplesDrawn, iters, iters*8)
			}
			if split && last.Evaluations != int64(iters) {
				t.Errorf("%s on 2 ranks counted %d evaluations in %d iterations, want one per split draw", est, last.Evaluations, iters)
			}
			if !split && last.Evaluations < int64(ranks*iters) {
				t.Errorf("%s counted %d evaluations in %d iterations on %d ranks: costs not summed over ranks", est, last.Evaluations, iters, ranks)
			}
		})
	}
}

// referenceRun trains cfg in this process as P ranks would, the draws of
// rank r made from rank r's seeds, and returns the parameters after each
// step. MLMC: P estimators over one network, their estimates averaged (VR
// states set to the mean). L-SGD: rank r's share of each draw is
// normalised on its own, the projections of all shares make one loss,
// and the gradient is that of the whole loss.
func referenceRun(t *testing.T, cfg Settings, ranks int) [][]float32 {
	t.Helper()
	if err := cfg.mapOldEstimatorNames(); err != nil {
		t.Fatal(err)
	}
	loss, err := contrastive.ParseLoss(cfg.Loss)
	if err != nil {
		t.Fatal(err)
	}
	b := serialCPU()
	splits := syntheticSplits(64, 16, 16, 4)
	netCfg, err := ModelConfig(cfg, splits)
	if err != nil {
		t.Fatal(err)
	}
	maxServable, err := maxServableLevel(cfg, splits.Train)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(cfg, Facts{TrainImages: splits.Train.Len(), ServableLevel: maxServable, Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	sched := optim.Schedule{BaseLR: float32(plan.LR), WarmupSteps: plan.WarmupIters, TotalSteps: plan.TotalIters}
	model := resnet18.New(b, netCfg, cfg.Seed)
	params := model.Params()
	opt, err := optim.New(b, params, optim.Config{Kind: plan.Optimizer, Momentum: float32(cfg.Momentum), WeightDecay: float32(cfg.WeightDecay)})
	if err != nil {
		t.Fatal(err)
	}
	prev := b.Alloc(params.Len())
	b.Copy(prev, params.Flat())
	streams := make([]*loader.Stream, ranks)
	oracles := make([]*contrastive.Oracle, ranks)
	ests := make([]*mlmc.Estimator[tensor.Buffer], ranks)
	grads := make([]tensor.Buffer, ranks)
	for r := range ranks {
		streams[r], err = loader.Open(splits.Train, splits.Mean, splits.Std, augment.SimCLR(), rankSeed(cfg.Seed, r), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer streams[r].Close()
		oracles[r] = contrastive.NewOracle(b, model, streams[r], cfg.Temperature, maxServable, prev)
		mc := plan.MLMC
		mc.Seed = rankSeed(mc.Seed, r)
		if ests[r], err = mlmc.New[tensor.Buffer](plan.Estimator, mc, contrastive.NewBufferOps(b, params.Len()), oracles[r]); err != nil {
			t.Fatal(err)
		}
		grads[r] = b.Alloc(params.Len())
	}
	grad := b.Alloc(params.Len())
	var sogU []float32 // SogCLR's u, one table for the whole run
	if loss == contrastive.SogCLR {
		sogU = make([]float32, splits.Train.Len())
	}
	var out [][]float32
	for it := 0; it < cfg.Iterations; it++ {
		if plan.Estimator.Method == mlmc.LSGD {
			lsgdSplitGradient(b, model, streams, cfg, loss, grad, sogU, cfg.gammaSchedule().At(it, plan.TotalIters))
		} else {
			b.Zero(grad)
			for r := range ranks {
				if _, err := ests[r].Estimate(it, grads[r]); err != nil {
					t.Fatal(err)
				}
				b.Axpy(grad, 1, grads[r])
			}
			b.Scale(grad, 1/float32(ranks))
			for r := range ranks {
				if m, ok := ests[r].VRState(); ok {
					b.Copy(m, grad)
				}
			}
		}
		b.Copy(prev, params.Flat())
		b.Copy(params.Grad(), grad)
		opt.Step(sched.LR(it))
		out = append(out, append([]float32(nil), cpu.Data(params.Flat())...))
	}
	return out
}

// lsgdSplitGradient writes into grad the gradient of the loss of one
// L-SGD draw of 2^L images made of the ranks' shares, each share
// normalised by batch norm on its own: NT-Xent's, or DCL's, or a SogCLR
// step that reads and updates u (one per training image) with gamma.
func lsgdSplitGradient(b tensor.Backend, model *resnet18.Model, streams []*loader.Stream, cfg Settings, loss contrastive.LossKind, grad tensor.Buffer, u []float32, gamma float64) {
	ranks := len(streams)
	n := 1 << cfg.MaxLevel
	share, pd := n/ranks, cfg.ProjDim
	views := make([][]float32, ranks)
	var indices []int
	all := b.Alloc(2 * n * pd)
	dzAll := b.Alloc(2 * n * pd)
	for r := range ranks {
		views[r] = make([]float32, 2*share*streams[r].ViewLen())
		indices = append(indices, streams[r].Next(share, views[r]).Indices...)
		x := b.Alloc(len(views[r]))
		b.Upload(x, views[r])
		z := model.Forward(x, 2*share, true, true)
		b.Copy(b.Slice(all, r*2*share*pd, 2*share*pd), z)
		b.Free(x)
	}
	switch loss {
	case contrastive.NTXent:
		b.NTXent(n, pd, float32(cfg.Temperature), false, all, dzAll)
	case contrastive.DCL:
		b.(tensor.DecoupledLoss).Decoupled(n, pd, float32(cfg.Temperature), 0, nil, all, dzAll)
	case contrastive.SogCLR:
		host := make([]float32, n)
		for k, idx := range indices {
			host[k] = u[idx]
		}
		ub := b.Alloc(n)
		b.Upload(ub, host)
		b.(tensor.DecoupledLoss).Decoupled(n, pd, float32(cfg.Temperature), float32(gamma), ub, all, dzAll)
		b.Download(host, ub)
		b.Free(ub)
		for k, idx := range indices {
			u[idx] = host[k]
		}
	}
	b.Zero(grad)
	for r := range ranks {
		x := b.Alloc(len(views[r]))
		b.Upload(x, views[r])
		model.Forward(x, 2*share, true, false)
		model.Backward(b.Slice(dzAll, r*2*share*pd, 2*share*pd))
		b.Axpy(grad, 1, model.Params().Grad())
		b.Free(x)
	}
	b.Free(all)
	b.Free(dzAll)
}

// TestDistKilledRankStopsTheOthers kills rank 1 after iteration 5 of a run
// that checkpoints every 2 iterations: mpirun then stops rank 0 (SIGTERM,
// then SIGKILL a second later), which must first say which checkpoint is
// intact (iteration 4) and how to resume it; the checkpoint then resumes
// on 2 ranks to the end, and refuses 1 rank clearly.
func TestDistKilledRankStopsTheOthers(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	const iters = 8
	log, err := mpirunWorkers(t, 2, envDistWorker+"="+out, envDistEst+"=vr-rtmlmc",
		envDistIters+"="+strconv.Itoa(iters), envDistKillAt+"=5")
	if err == nil {
		t.Fatalf("the job survived the death of rank 1:\n%s", log)
	}
	for _, want := range []string{"rank 0 of 2: told to stop while waiting for the other ranks", "the last checkpoint (iteration 4)", "--resume " + out} {
		if !strings.Contains(log, want) {
			t.Errorf("rank 0's output lacks %q:\n%s", want, log)
		}
	}
	f, err := checkpoint.Read(filepath.Join(out, runfolder.StateFile))
	if err != nil {
		t.Fatalf("checkpoint not usable: %v", err)
	}
	if f.Metadata["iteration"] != "4" || f.Metadata["ranks"] != "2" {
		t.Fatalf("checkpoint at iteration %s of %s ranks, want 4 of 2", f.Metadata["iteration"], f.Metadata["ranks"])
	}

	// One process cannot continue two ranks' draws.
	_, err = Resume(context.Background(), out, func(c *Settings) error { c.Dist = "none"; return nil }, tinyHooks(syntheticSplits(64, 16, 16, 4)))
	if !errors.Is(err, ErrRanksDiffer) || !strings.Contains(err.Error(), "mpirun -np 2") {
		t.Fatalf("resume on 1 rank: err = %v, want ErrRanksDiffer naming mpirun -np 2", err)
	}

	log, err = mpirunWorkers(t, 2, envDistWorker+"="+out, envDistResume+"=1", envDistIters+"="+strconv.Itoa(iters))
	if err != nil {
		t.Fatalf("resume on 2 ranks: %v\n%s", err, log)
	}
	if f, err = checkpoint.Read(filepath.Join(out, runfolder.StateFile)); err != nil || f.Metadata["iteration"] != strconv.Itoa(iters) {
		t.Fatalf("after resuming: checkpoint at iteration %v (%v), want %d", f.Metadata["iteration"], err, iters)
	}
}

// With group norm the head's running statistics are part of the function
// trained and already the same on every rank (averaged before each
// commit), so a checkpoint must leave them alone: averaging them once more
// over 3 ranks (a sum of three equal floats, then a third) changed about a
// third of them by an ulp, so a run that checkpointed (every iteration
// here) trained another function than one that did not, and a resumed run
// could not match an uninterrupted one.
func TestDistGroupNormCheckpointsChangeNothing(t *testing.T) {
	const ranks, iters = 3, 4
	root := t.TempDir()
	periodic, final := filepath.Join(root, "periodic"), filepath.Join(root, "final")
	for _, run := range []struct {
		out string
		env []string
	}{{periodic, nil}, {final, []string{envDistNoCkpt + "=1"}}} {
		env := append([]string{envDistWorker + "=" + run.out, envDistEst + "=rtmlmc", envDistNorm + "=group",
			envDistIters + "=" + strconv.Itoa(iters)}, run.env...)
		if log, err := mpirunWorkers(t, ranks, env...); err != nil {
			t.Fatalf("mpirun -np %d (%s): %v\n%s", ranks, filepath.Base(run.out), err, log)
		}
	}
	for it := 1; it <= iters; it++ {
		for _, file := range []func(string, int, int) string{paramsFile, stateFile} {
			a, b := readParams(t, file(periodic, 0, it)), readParams(t, file(final, 0, it))
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("iteration %d: value %d of %s is %g with a checkpoint every iteration and %g without", it, i, filepath.Base(file(final, 0, it)), a[i], b[i])
				}
			}
		}
	}
}

// threeRanks is a world of 3 ranks as far as setup's checks look.
type threeRanks struct{ collective.Single }

func (threeRanks) Size() int { return 3 }

func TestLSGDNeedsRanksThatDivideItsBatch(t *testing.T) {
	cfg := tinyConfig(t, "lsgd") // 2^3 = 8 images per draw
	hooks := tinyHooks(syntheticSplits(16, 8, 16, 2))
	hooks.Comm = threeRanks{}
	_, err := Train(context.Background(), cfg, hooks)
	if err == nil || !strings.Contains(err.Error(), "3 ranks cannot do evenly") {
		t.Fatalf("err = %v, want one saying 8 images do not split over 3 ranks", err)
	}
}

// --rank and --world-size without a launcher or rendezvous that makes them
// true are one clear error: the process would otherwise take itself for
// rank 1 (no run folder, no log) of a world of one.
func TestRankWithoutAWorldIsAnError(t *testing.T) {
	cfg := tinyConfig(t, "rtmlmc")
	sess := tinyHooks(syntheticSplits(16, 8, 16, 2))
	sess.Rank, sess.WorldSize = 1, 2
	_, err := Train(context.Background(), cfg, sess)
	if err == nil || !strings.Contains(err.Error(), "--rank 1 --world-size 2") || !strings.Contains(err.Error(), "rank 0 of 1") {
		t.Fatalf("err = %v, want one naming --rank 1 --world-size 2 and the world of one", err)
	}
}

// TestDistRankFailingAloneStopsTheJob makes rank 1 alone fail after
// iteration 3 (as a read error would): it must say so and stop the job
// (MPI_Abort) rather than leave rank 0 waiting for it forever.
func TestDistRankFailingAloneStopsTheJob(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	log, err := mpirunWorkers(t, 2, envDistWorker+"="+out, envDistEst+"=rtmlmc",
		envDistIters+"=1000", envDistFailAt+"=3")
	if err == nil {
		t.Fatalf("the job finished although rank 1 failed:\n%s", log)
	}
	if want := "rank 1 of 2: iteration 3: a failure of rank 1 alone\nstopping every rank"; !strings.Contains(log, want) {
		t.Errorf("output lacks %q:\n%s", want, log)
	}
	if strings.Contains(log, "worker rank 0 done") {
		t.Errorf("rank 0 trained on alone:\n%s", log)
	}
}
