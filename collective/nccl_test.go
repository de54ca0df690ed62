//go:build linux

package collective

import (
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/backend/cuda"
)

// The CUDA backend is one NCCL can run on (checked here: the package
// itself imports no backend).
var _ streamBackend = (*cuda.Backend)(nil)

// TestNCCLSingleRank runs every collective on an NCCL communicator of one
// rank on the GPU. It skips, saying why, without a GPU or NCCL: it then
// did not run, under CI as anywhere.
func TestNCCLSingleRank(t *testing.T) {
	b, err := cuda.Open(cuda.Options{})
	if err != nil {
		t.Skipf("NOT RUN: no usable GPU (%v)", err)
	}
	defer b.Close()
	n, err := OpenNCCL(b, 0, 1, nil)
	if err != nil {
		if strings.Contains(err.Error(), "NCCL not found") {
			t.Skipf("NOT RUN: %v", err)
		}
		t.Fatal(err)
	}
	t.Log(n.Describe())
	checkCollectives(t, n, b)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenChoosesAndRefuses(t *testing.T) {
	noEnv := func(string) string { return "" }
	twoRanks := func(k string) string {
		return map[string]string{envMPISize: "2", envMPIRank: "1"}[k]
	}
	b := cpu.New()
	for _, tc := range []struct {
		name    string
		kind    Kind
		opts    Options
		wantErr string // "" for success
		want    string // Describe of the result
	}{
		{"auto without launcher is single", KindAuto, Options{Getenv: noEnv}, "", Single{}.Describe()},
		{"none", KindNone, Options{Getenv: noEnv}, "", Single{}.Describe()},
		{"none under mpirun -np 2", KindNone, Options{Getenv: twoRanks}, "each would train alone", ""},
		{"nccl on the CPU", KindNCCL, Options{Getenv: noEnv, Addr: "127.0.0.1:1", Size: 2, Rank: 1}, "needs the CUDA backend", ""},
		{"nccl without rendezvous", KindNCCL, Options{Getenv: noEnv}, "--dist-addr", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := Open(tc.kind, b, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Describe() != tc.want {
				t.Errorf("got %s, want %s", c.Describe(), tc.want)
			}
		})
	}
}
