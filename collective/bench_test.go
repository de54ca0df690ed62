package collective

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/simclr-go/simclr/backend/cpu"
)

// envBenchFloats asks TestMPIAllReduceTimingWorker for the length of the
// buffer it all-reduces.
const envBenchFloats = "SIMCLR_COLLECTIVE_BENCH_FLOATS"

// resnet18Params is the parameter count of the full-width ResNet-18 with its
// projection head (512-512-128), 46.0 MB in float32: the gradient the
// trainer all-reduces every iteration.
const resnet18Params = 11_498_176

// BenchmarkMPIAllReduceResNet18 all-reduces a gradient the size of the
// full-width network's (about 46 MB of float32) between 2 ranks of this
// machine started by mpirun, and reports the time per all-reduce. The ranks
// cannot run a testing.B loop (its iteration count is chosen by timing,
// which would differ between them), so each rank times a fixed number of
// calls and rank 0 prints the mean.
//
//	go test -run '^$' -bench MPIAllReduce -benchtime 1x ./collective/
func BenchmarkMPIAllReduceResNet18(b *testing.B) {
	for range b.N {
		cmd := mpiRun(nil, 2, "TestMPIAllReduceTimingWorker", fmt.Sprintf("%s=%d", envBenchFloats, resnet18Params))
		if cmd == nil {
			b.Skip("mpirun not found")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("mpirun: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`all-reduce of (\d+) floats: ([0-9.]+) ms`).FindSubmatch(out)
		if m == nil {
			b.Fatalf("no timing in:\n%s", out)
		}
		ms, _ := strconv.ParseFloat(string(m[2]), 64)
		b.ReportMetric(ms, "ms/allreduce")
		b.ReportMetric(float64(resnet18Params*4)/1e6, "MB")
		// Algorithm bandwidth, bytes reduced per second; for 2 ranks a ring
		// moves as much per rank (bus bandwidth = 2(P-1)/P x this).
		b.ReportMetric(float64(resnet18Params*4)/(ms/1e3)/1e9, "GB/s")
	}
}

// TestMPIAllReduceTimingWorker is one rank of BenchmarkMPIAllReduceResNet18.
func TestMPIAllReduceTimingWorker(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envBenchFloats))
	if os.Getenv(envWorker) == "" || n == 0 {
		t.Skip("run by BenchmarkMPIAllReduceResNet18 under mpirun")
	}
	b := cpu.New()
	c, err := OpenMPI(b)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := b.Alloc(n)
	const warm, reps = 2, 10
	var start time.Time
	for i := range warm + reps {
		if i == warm {
			if err := c.Barrier(); err != nil {
				t.Fatal(err)
			}
			start = time.Now()
		}
		if err := c.AllReduceSum(buf); err != nil {
			t.Fatal(err)
		}
	}
	if c.Rank() == 0 {
		fmt.Printf("all-reduce of %d floats: %.2f ms (%s)\n", n, float64(time.Since(start).Microseconds())/1e3/reps, c.Describe())
	}
}
