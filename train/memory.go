package train

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// memoryHeadroom is the share of the available memory a query may plan
// for: the rest covers what the estimate leaves out (cuDNN's convolution
// workspace, allocator rounding, the loader's prefetched views).
const memoryHeadroom = 0.85

// freeMemoryReporter is a backend that knows how much memory new buffers
// can still get (the CUDA backend: the device's free memory).
type freeMemoryReporter interface{ FreeMemory() (uint64, error) }

// availableMemory is the memory the oracle's queries may use: what the
// device reports, or on the CPU MemAvailable of meminfo (/proc/meminfo).
// It is read after the network and the optimizer state are allocated.
func availableMemory(b tensor.Backend, meminfo string) (bytes uint64, source string, err error) {
	if r, ok := b.(freeMemoryReporter); ok {
		free, err := r.FreeMemory()
		if err != nil {
			return 0, "", fmt.Errorf("device free memory: %w", err)
		}
		return free, "free on the device", nil
	}
	avail, err := memAvailable(meminfo)
	if err != nil {
		return 0, "", err
	}
	return avail, "available RAM (MemAvailable of " + meminfo + ")", nil
}

// memAvailable reads MemAvailable (in kB) from a /proc/meminfo file.
func memAvailable(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("available memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("available memory: %s: MemAvailable %q: %w", path, fields[1], err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("available memory: %s: %w", path, err)
	}
	return 0, fmt.Errorf("available memory: %s has no MemAvailable line", path)
}

// queryBytes estimates the memory of one query at level l beyond what is
// already allocated: the network's training plan for its 2^(l+1) views
// (activations and gradients, from the model's own layout), the input and
// loss-gradient buffers, the views held on the host for VR replays, and on
// a GPU the loss's two (2N)^2 matrices (similarities and their gradient).
func queryBytes(m *resnet18.Model, b tensor.Backend, level int) uint64 {
	views := 2 << level
	floats := uint64(m.ActivationPlanFloats(views, true))
	floats += uint64(views * m.InputLen())       // device input
	floats += uint64(views * m.Config().ProjDim) // dz
	floats += uint64(views * m.InputLen())       // the draw's views on the host
	if b.Name() == "cuda" {
		floats += 2 * uint64(views) * uint64(views) // the loss matrices
	}
	return 4 * floats
}

// capByMemory lowers the largest servable level to the largest whose query
// fits in the available memory, and says so in the log; a --max-level
// that does not fit is an error naming the flag. When the memory cannot
// be read the levels stay as they are.
func (t *trainer) capByMemory(minLevel, maxLevel, maxServable int, meminfo string) (int, error) {
	avail, source, err := availableMemory(t.b, meminfo)
	if err != nil {
		t.logf("memory: %v; levels are not capped by memory", err)
		return maxServable, nil
	}
	budget := uint64(float64(avail) * memoryHeadroom)
	fits := minLevel - 1
	for l := minLevel; l <= maxServable && queryBytes(t.model, t.b, l) <= budget; l++ {
		fits = l
	}
	if fits < maxLevel {
		return 0, fmt.Errorf("--max-level %d: a level-%d query (%d images, %d views) needs about %s, but only %s is %s "+
			"(%.0f%% of it usable): use --max-level %d or less, a smaller --width, or a device with more memory",
			maxLevel, maxLevel, 1<<maxLevel, 2<<maxLevel, humanBytes(queryBytes(t.model, t.b, maxLevel)),
			humanBytes(avail), source, 100*memoryHeadroom, max(fits, 0))
	}
	if fits < maxServable {
		t.logf("memory: largest servable level capped at %d by memory, below %d: a level-%d query needs about %s, a level-%d one %s, and %s is %s",
			fits, maxServable, fits, humanBytes(queryBytes(t.model, t.b, fits)), fits+1, humanBytes(queryBytes(t.model, t.b, fits+1)),
			humanBytes(avail), source)
		return fits, nil
	}
	t.logf("memory: largest servable level %d (a query there needs about %s; %s is %s)",
		maxServable, humanBytes(queryBytes(t.model, t.b, maxServable)), humanBytes(avail), source)
	return maxServable, nil
}

// humanBytes writes a byte count in binary units.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
