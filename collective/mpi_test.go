package collective

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// envWorker marks a test binary started by mpirun from TestMPI.
const envWorker = "SIMCLR_COLLECTIVE_MPI_WORKER"

// requireMPIRun returns mpirun's path. Without it the MPI tests skip on a
// developer's machine and fail under CI (which installs Open MPI), so that
// CI never reports them as passed when they did not run. With t nil it
// returns "" instead (for benchmarks).
func requireMPIRun(t *testing.T) string {
	path, err := exec.LookPath("mpirun")
	if t == nil {
		return path
	}
	t.Helper()
	if err != nil {
		testenv.Missing(t, "mpirun not found: install openmpi-bin and libopenmpi3 to run the MPI tests (.ci/run does)")
	}
	return path
}

// mpiRun is the command that runs this test binary's test named run on np
// ranks of localhost (nil when t is nil and mpirun is missing).
func mpiRun(t *testing.T, np int, run string, env ...string) *exec.Cmd {
	mpirun := requireMPIRun(t)
	if mpirun == "" {
		return nil
	}
	// A session folder of its own: mpiruns of tests of several packages run
	// at once, and in one shared folder one can fail to set up its own.
	session, err := os.MkdirTemp("", "ompi-")
	if err != nil {
		panic(err)
	}
	if t != nil {
		t.Cleanup(func() { os.RemoveAll(session) })
	}
	cmd := exec.Command(mpirun, "--allow-run-as-root", "--oversubscribe", "-np", fmt.Sprint(np),
		"--mca", "btl", "self,vader,tcp", "--mca", "orte_tmpdir_base", session, os.Args[0], "-test.run=^"+run+"$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), envWorker+"=1", "OMPI_MCA_rmaps_base_oversubscribe=1"), env...)
	return cmd
}

func TestMPI(t *testing.T) {
	for _, np := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			out, err := mpiRun(t, np, "TestMPIWorker").CombinedOutput()
			if err != nil {
				t.Fatalf("mpirun -np %d: %v\n%s", np, err, out)
			}
			for r := 0; r < np; r++ {
				if want := fmt.Sprintf("worker rank %d of %d ok", r, np); !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestMPIWorker is one rank of TestMPI; it runs only under mpirun.
func TestMPIWorker(t *testing.T) {
	if os.Getenv(envWorker) == "" {
		t.Skip("run by TestMPI under mpirun")
	}
	b := cpu.New()
	c, err := OpenMPI(b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	p, r := c.Size(), c.Rank()
	if want := os.Getenv(envMPISize); fmt.Sprint(p) != want {
		t.Fatalf("size %d, launcher says %s", p, want)
	}
	t.Log(c.Describe())
	checkCollectives(t, c, b)
	fmt.Printf("worker rank %d of %d ok\n", r, p)
}
