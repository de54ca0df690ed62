package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/optim"
	"github.com/simclr-go/simclr/tensor"
	"github.com/simclr-go/simclr/train"
)

// benchOptions are the flags of `simclr bench`.
type benchOptions struct {
	device, precision string
	images, steps     int
	width             float64
	inputSize         int
	tau               float64
	multilevel        bool
	seed              uint64
	json              bool
	cpuProfile        string
	opTimes           bool
}

// benchResult is what `simclr bench --json` prints.
type benchResult struct {
	Device            string   `json:"device"`
	Backend           string   `json:"backend"`
	BLAS              string   `json:"blas"`
	Threads           int      `json:"threads"`
	CPUModel          string   `json:"cpu_model"` // /proc/cpuinfo's model name: these figures depend on the machine
	CPUCores          int      `json:"cpu_cores"` // logical CPUs the process may use
	BatchImages       int      `json:"batch_images"`
	Views             int      `json:"views"`
	Width             float64  `json:"width"`
	InputSize         int      `json:"input_size"`
	Multilevel        bool     `json:"multilevel"`
	Steps             int      `json:"steps"`
	StepSeconds       float64  `json:"step_seconds"`
	ViewsPerSec       float64  `json:"views_per_sec"`
	ModelGFLOPPerStep float64  `json:"model_gflop_per_step"`
	GFLOPSPerSec      float64  `json:"gflops_per_sec"`
	SgemmGFLOPSPerSec float64  `json:"sgemm_gflops_per_sec"`
	PeakRSSMB         *float64 `json:"peak_rss_mb"`
	// PeakGPUMB is the most device memory the step's buffers held at once
	// (warm-up and timed steps, not the SGEMM timing), as PyTorch's
	// torch.cuda.max_memory_allocated counts; ReservedGPUMB what the
	// backend took from the driver for them. Absent on the CPU.
	PeakGPUMB     *float64 `json:"peak_gpu_mb,omitempty"`
	ReservedGPUMB *float64 `json:"reserved_gpu_mb,omitempty"`
	// CPUSecondsPerStep is the process's CPU time (all threads) per timed
	// step: on a machine shared with other work it shows the step's own
	// cost, which the wall-clock step_seconds mixes with the share of the
	// cores the process got.
	CPUSecondsPerStep *float64 `json:"cpu_seconds_per_step"`
	Loss              float64  `json:"loss"`
	// GraphSteps says that every timed step was a replayed CUDA graph, as
	// the trainer's queries of up to contrastive.DefaultGraphImages images
	// on a GPU are (never with --op-times, which times each call).
	GraphSteps bool `json:"graph_steps"`
	// OpTimes is the step's time per operation (--op-times).
	OpTimes []opTimeRow `json:"op_times,omitempty"`
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Time full training steps of the ResNet-18 on random inputs",
		Long: `bench times --steps full SimCLR training steps (forward in training mode,
NT-Xent loss, backward, SGD update) of the ResNet-18 with projection head on
--images random images (2 views each, so 2 x images views), after one
untimed warm-up step that plans the activations. On a GPU, a step of up to
32 images runs as the trainer runs it there: recorded once as a CUDA graph
(a second warm-up step) and replayed (graph_steps in --json says the timed
steps were replays). It also times one
1024 x 1024 x 1024 SGEMM on the same backend, and reports the peak resident
memory of the process.

gflops_per_sec counts the model's convolution and linear FLOPs (2 x
multiply-adds), three times the forward pass per step (forward, input
gradients, weight gradients), divided by the step time.`,
		Example: `  simclr bench --device cpu --images 64 --steps 3
  simclr bench --device cuda --images 256 --steps 10 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.device, "device", train.Defaults().Device, "compute device: auto (cuda when a GPU and its libraries are found, else cpu, as train), cpu or cuda")
	f.StringVar(&o.precision, "precision", "tf32", "CUDA matrix precision: tf32 (tensor cores), fp32, or bf16 (mixed precision: bf16 convolutions and matrix products with fp32 sums, everything else fp32; needs a GPU of compute capability 8.0 or newer); tf32 and fp32 are ignored on cpu, bf16 is refused there")
	f.IntVar(&o.images, "images", 64, "images per step (each gives 2 views, so the network sees 2 x images inputs); at least 1")
	f.IntVar(&o.steps, "steps", 5, "timed training steps, after one untimed warm-up step; at least 1")
	f.Float64Var(&o.width, "width", 1, "ResNet-18 width multiplier of the stage widths 64,128,256,512 (1 = standard; 0.25 = a quarter)")
	f.IntVar(&o.inputSize, "input-size", 32, "input height and width in pixels")
	f.Float64Var(&o.tau, "temperature", 0.5, "NT-Xent temperature tau (as train --temperature)")
	// --tau was this command's first spelling: kept, hidden.
	f.Float64Var(&o.tau, "tau", 0.5, "NT-Xent temperature")
	_ = f.MarkHidden("tau") // fails only for an undefined flag
	f.BoolVar(&o.multilevel, "multilevel", false, "time the multilevel loss L_B - (L_B1 + L_B2)/2 instead of L_B (needs an even --images)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the initial weights and the random inputs")
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of text")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the timed steps to this file (go tool pprof)")
	f.BoolVar(&o.opTimes, "op-times", false, "also print the wall and CPU time per step of each kind of operation (each convolution shape apart); the timing synchronises around every operation")
	return cmd
}

func (o benchOptions) validate() error {
	switch {
	case o.images < 1:
		return fmt.Errorf("--images %d: must be at least 1", o.images)
	case o.steps < 1:
		return fmt.Errorf("--steps %d: must be at least 1", o.steps)
	case o.multilevel && o.images%2 != 0:
		return fmt.Errorf("--multilevel needs an even --images, got %d", o.images)
	case !(o.tau > 0):
		return fmt.Errorf("--temperature %g: must be positive", o.tau)
	}
	return resnet18.Config{Width: o.width, InputSize: o.inputSize}.Validate()
}

func runBench(stdout, stderr io.Writer, o benchOptions) error {
	if err := o.validate(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b, logLine, err := openBackend(o.device, o.precision)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer backend.Close(b)
	fmt.Fprintln(stderr, logLine) // stderr, so --json output stays one object
	res := benchResult{
		Device: b.Name(), Backend: b.Describe(), BLAS: b.Describe(), Threads: runtime.GOMAXPROCS(0),
		CPUModel: cpuModel("/proc/cpuinfo"), CPUCores: runtime.NumCPU(),
		BatchImages: o.images, Views: 2 * o.images, Width: o.width, InputSize: o.inputSize,
		Multilevel: o.multilevel, Steps: o.steps,
	}
	if g, ok := b.(interface{ GemmName() string }); ok {
		res.BLAS = g.GemmName()
	}

	var timer *opTimer
	if o.opTimes {
		// The step runs on the timing wrapper; the SGEMM check below does not.
		timer = newOpTimer(b)
	}
	step, m, graphed, err := newBenchStep(b, timer, o)
	if err != nil {
		return err
	}
	// Warm-up: plans the activations; with graphs the second step is
	// the one recorded.
	warm := 1
	if graphed {
		warm = 2
	}
	for range warm {
		if _, err := step(); err != nil {
			return fmt.Errorf("bench: warm-up step on %s: %w", b.Name(), err)
		}
	}
	replays0 := graphReplays(b)
	if timer != nil {
		timer.reset()
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer stopProfile() // a failed step returns early; a second stop does nothing
	cpu0, cpuOK := processCPUTime()
	start := time.Now()
	for i := 0; i < o.steps; i++ {
		if res.Loss, err = step(); err != nil {
			return fmt.Errorf("bench: step %d on %s: %w", i+1, b.Name(), err)
		}
	}
	res.StepSeconds = time.Since(start).Seconds() / float64(o.steps)
	res.GraphSteps = graphed && graphReplays(b)-replays0 == o.steps
	if cpu1, ok := processCPUTime(); ok && cpuOK {
		perStep := (cpu1 - cpu0).Seconds() / float64(o.steps)
		res.CPUSecondsPerStep = &perStep
	}
	stopProfile()
	if timer != nil {
		res.OpTimes = timer.rows(o.steps)
	}
	if mem, ok := b.(deviceMemory); ok {
		_, peak, reserved := mem.MemoryInUse()
		peakMB, reservedMB := float64(peak)/(1<<20), float64(reserved)/(1<<20)
		res.PeakGPUMB, res.ReservedGPUMB = &peakMB, &reservedMB
	}
	views := 2 * o.images
	res.ViewsPerSec = float64(views) / res.StepSeconds
	res.ModelGFLOPPerStep = 3 * m.FLOPs(views) / 1e9
	res.GFLOPSPerSec = res.ModelGFLOPPerStep / res.StepSeconds
	if res.SgemmGFLOPSPerSec, err = timeSgemm(b); err != nil {
		return fmt.Errorf("bench: SGEMM on %s: %w", b.Name(), err)
	}
	res.PeakRSSMB = peakRSSMB()

	if o.json {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	rss := "unknown"
	if res.PeakRSSMB != nil {
		rss = fmt.Sprintf("%.0f MB", *res.PeakRSSMB)
	}
	if res.PeakGPUMB != nil {
		rss += fmt.Sprintf(" (resident); on the device %.0f MiB of buffers at most, %.0f MiB reserved", *res.PeakGPUMB, *res.ReservedGPUMB)
	} else {
		rss += " (resident)"
	}
	fmt.Fprintf(stdout, `device          %s (%s)
model           ResNet-18 width %g, %dx%d input, %d images = %d views per step
step time       %.3f s (mean of %d steps after a warm-up step)
throughput      %.1f views/s
model compute   %.1f GFLOP per step, %.1f GFLOP/s
SGEMM 1024^3    %.1f GFLOP/s
peak memory     %s
last loss       %.4f
`, res.Device, res.Backend, o.width, o.inputSize, o.inputSize, o.images, views,
		res.StepSeconds, o.steps, res.ViewsPerSec, res.ModelGFLOPPerStep, res.GFLOPSPerSec,
		res.SgemmGFLOPSPerSec, rss, res.Loss)
	if timer != nil {
		writeOpTimes(stdout, res.OpTimes, res.StepSeconds*1e3)
	}
	return nil
}

// graphReplays is the number of step-graph replays of b so far (0 on a
// backend without them).
func graphReplays(b tensor.Backend) int {
	if g, ok := b.(interface{ GraphStats() cuda.GraphStats }); ok {
		return g.GraphStats().Replays
	}
	return 0
}

// newBenchStep builds the network, random inputs and optimizer of a bench
// step on b (through timer when not nil) and returns the step and whether
// its pass runs as a step graph (tensor.StepGraphs, at the trainer's
// sizes).
func newBenchStep(b tensor.Backend, timer *opTimer, o benchOptions) (func() (float64, error), *resnet18.Model, bool, error) {
	if timer != nil {
		b = timer
	}
	graphs, graphed := b.(tensor.StepGraphs)
	graphed = graphed && o.images <= contrastive.DefaultGraphImages
	cfg := resnet18.Config{Width: o.width, InputSize: o.inputSize}
	m := resnet18.New(b, cfg, o.seed)
	proj := m.Config().ProjDim
	views := 2 * o.images
	x := b.Alloc(views * m.InputLen())
	host := make([]float32, x.Len())
	rng := rand.New(rand.NewPCG(o.seed, 0xbe4c))
	for i := range host {
		host[i] = float32(rng.NormFloat64())
	}
	b.Upload(x, host)
	dz := b.Alloc(views * proj)
	opt, err := optim.New(b, m.Params(), optim.Config{Kind: optim.SGD, Momentum: 0.9, WeightDecay: 5e-4})
	if err != nil {
		return nil, nil, false, fmt.Errorf("bench: %w", err)
	}
	step := func() (float64, error) {
		var r tensor.LossResult
		if graphed {
			err := graphs.GraphStep("bench", func() {
				z := m.Forward(x, views, true, true)
				graphs.QueueNTXent(o.images, proj, float32(o.tau), o.multilevel, z, dz)
				m.Backward(dz)
			})
			if err != nil {
				return math.NaN(), err
			}
			r = graphs.ReadNTXent(o.multilevel)
		} else {
			z := m.Forward(x, views, true, true)
			r = b.NTXent(o.images, proj, float32(o.tau), o.multilevel, z, dz)
			m.Backward(dz)
		}
		opt.Step(0.01)
		return r.Loss, b.Sync()
	}
	return step, m, graphed, nil
}

// timeSgemm times a 1024 x 1024 x 1024 matrix product on b (a bias-free
// LinearForward, which every backend runs as one SGEMM): the best of three
// after a warm-up, in GFLOP/s.
func timeSgemm(b tensor.Backend) (float64, error) {
	const n = 1024
	x, w, y := b.Alloc(n*n), b.Alloc(n*n), b.Alloc(n*n)
	defer func() { b.Free(x); b.Free(w); b.Free(y) }()
	host := make([]float32, n*n)
	for i := range host {
		host[i] = float32(i%7) - 3
	}
	b.Upload(x, host)
	b.Upload(w, host)
	b.LinearForward(n, n, n, x, w, nil, y)
	if err := b.Sync(); err != nil {
		return 0, err
	}
	best := 0.0
	for rep := 0; rep < 3; rep++ {
		start := time.Now()
		b.LinearForward(n, n, n, x, w, nil, y)
		if err := b.Sync(); err != nil {
			return 0, err
		}
		if g := 2 * n * n * n / time.Since(start).Seconds() / 1e9; g > best {
			best = g
		}
	}
	return best, nil
}

// deviceMemory is what a GPU backend says of its device memory: the
// buffers in use, their peak and the memory reserved from the driver.
type deviceMemory interface {
	MemoryInUse() (inUse, peak, reserved uint64)
}

// peakRSSMB reads the peak resident set size (VmHWM) from /proc/self/status,
// or returns nil where there is no /proc (it is then reported as unknown).
func peakRSSMB() *float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmHWM:") {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "VmHWM:"))
		if len(fields) == 0 {
			return nil
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil
		}
		mb := kb / 1024
		return &mb
	}
	return nil
}

// cpuModel returns the first "model name" of a /proc/cpuinfo file, or
// "unknown GOARCH CPU" where there is none (another OS, or an ARM kernel
// that names no model).
func cpuModel(cpuinfo string) string {
	raw, err := os.ReadFile(cpuinfo)
	if err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			key, val, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(key) == "model name" && strings.TrimSpace(val) != "" {
				return strings.TrimSpace(val)
			}
		}
	}
	return "unknown " + runtime.GOARCH + " CPU"
}
