package cuda

import (
	"os"
	"testing"

	"github.com/simclr-go/simclr/backend/cuda/cudaemu"
)

// TestMain removes the CUDA emulator built for the tests afterwards.
func TestMain(m *testing.M) { os.Exit(cudaemu.Main(m)) }
