package main

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/data/datasets"
	"github.com/simclr-go/simclr/eval"
	"github.com/simclr-go/simclr/internal/npy"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/runfolder"
)

// debianPython is the interpreter of Debian's python3-torch, which
// .ci/run installs.
const debianPython = "/usr/bin/python3"

// pythonWithTorch returns the Python that imports torch, torchvision and
// numpy, or skips the test (fails it under CI=true) naming the install.
func pythonWithTorch(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(debianPython, "-c", "import torch, torchvision, numpy").CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		testenv.Missing(t, "PyTorch for %s: %v (%s); install it with apt-get install python3-torch python3-torchvision",
			debianPython, err, lines[len(lines)-1])
	}
	return debianPython
}

// repoFile is the path of rel from the repository root (the tests run in
// cmd/simclr).
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeInputs writes the test images of the folder data set as eval
// prepares them (un-augmented, normalised with the set's statistics),
// N x 3 x 32 x 32, to an .npy file.
func writeInputs(t *testing.T, data, path string) int {
	t.Helper()
	splits, err := datasets.Open("folder:"+data, "", eval.ImageSize)
	if err != nil {
		t.Fatal(err)
	}
	set := splits.Test
	idx := make([]int, set.Len())
	for i := range idx {
		idx[i] = i
	}
	x := make([]float32, set.Len()*3*32*32)
	loader.EvalBatch(set, idx, splits.Mean, splits.Std, x)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := npy.NewWriter(f, set.Len(), 3, 32, 32)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(x); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return set.Len()
}

// fullWidthCheckpoint saves a width-1 network at initialisation with
// running statistics drawn away from their initial 0 and 1 (so that a
// loader that dropped them would fail) and returns its path.
func fullWidthCheckpoint(t *testing.T) string {
	t.Helper()
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{Width: 1, ProjDim: 128, InputSize: 32}, 3)
	r := rand.New(rand.NewPCG(7, 8))
	for _, nt := range m.Params().Tensors() {
		lo, hi := 0.0, 0.0
		switch {
		case strings.HasSuffix(nt.Name, "running_mean"):
			lo, hi = -0.2, 0.2
		case strings.HasSuffix(nt.Name, "running_var"):
			lo, hi = 0.5, 2
		default:
			continue
		}
		v := make([]float32, nt.Len)
		for i := range v {
			v[i] = float32(lo + (hi-lo)*r.Float64())
		}
		b.Upload(nt.Value, v)
	}
	path := filepath.Join(t.TempDir(), runfolder.ModelFile)
	if err := m.Save(path, map[string]string{"width": "1", "proj_dim": "128"}); err != nil {
		t.Fatal(err)
	}
	return path
}

// scripts/simclr_torch.py loads model.safetensors into torchvision's
// resnet18 (CIFAR stem) and the head and computes, from the inputs eval
// prepares, the features and projections `simclr embed` writes, to 1e-4
// (relative above 1): for the full-width network (torchvision's own
// resnet18) and for narrow trained ones with batch norm (precise-BN
// statistics) and group norm.
func TestPyTorchLoadsModelLikeEmbed(t *testing.T) {
	python := pythonWithTorch(t)
	script := repoFile(t, "scripts/simclr_torch.py")
	data := imageFolder(t, 32, 12)
	dir := t.TempDir()
	inputs := filepath.Join(dir, "x.npy")
	n := writeInputs(t, data, inputs)

	trained := func(norm string) []string {
		run := filepath.Join(t.TempDir(), "run")
		if _, stderr, err := execute("train", "--dataset", "folder:"+data, "--iterations", "2", "--max-level", "3",
			"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", run, "--probe=false", "--norm", norm); err != nil {
			t.Fatalf("train --norm %s: %v\n%s", norm, err, stderr)
		}
		return []string{"--run", run}
	}
	for _, tc := range []struct {
		name           string
		target         []string
		features, proj int
	}{
		{"width 1", []string{"--checkpoint", fullWidthCheckpoint(t), "--dataset", "folder:" + data}, 512, 128},
		{"width 1/16, batch norm", trained("batch"), 32, 16},
		{"width 1/16, group norm", trained("group"), 32, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := tc.target[1]
			if tc.target[0] == "--run" {
				model = filepath.Join(model, runfolder.ModelFile)
			}
			embedF, embedZ := filepath.Join(dir, "f.npy"), filepath.Join(dir, "z.npy")
			for _, extra := range [][]string{{"--out", embedF}, {"--out", embedZ, "--projection"}} {
				args := append(append([]string{"embed", "--device", "cpu"}, tc.target...), extra...)
				if _, stderr, err := execute(args...); err != nil {
					t.Fatalf("%v: %v\n%s", args, err, stderr)
				}
			}
			torchF, torchZ := filepath.Join(dir, "torch_f.npy"), filepath.Join(dir, "torch_z.npy")
			cmd := exec.Command(python, script, model, "--inputs", inputs, "--features", torchF, "--projections", torchZ)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
			}
			for _, pair := range []struct {
				ours, theirs string
				dim          int
			}{{embedF, torchF, tc.features}, {embedZ, torchZ, tc.proj}} {
				want, wantShape := readNPY(t, pair.ours)
				got, gotShape := readNPY(t, pair.theirs)
				if !slices.Equal(wantShape, []int{n, pair.dim}) || !slices.Equal(gotShape, wantShape) {
					t.Fatalf("shapes: embed %v, PyTorch %v, want [%d %d]", wantShape, gotShape, n, pair.dim)
				}
				worst, at := 0.0, 0
				for i := range want {
					d := math.Abs(float64(got[i]-want[i])) / math.Max(1, math.Abs(float64(want[i])))
					if d > worst {
						worst, at = d, i
					}
				}
				if worst > 1e-4 {
					t.Errorf("%s: PyTorch gives %v at row %d column %d where embed gives %v (difference %.2g > 1e-4)",
						filepath.Base(pair.ours), got[at], at/pair.dim, at%pair.dim, want[at], worst)
				}
				if slices.Max(want) == slices.Min(want) {
					t.Errorf("%s: every value is %v: nothing was compared", filepath.Base(pair.ours), want[0])
				}
				t.Logf("%s: %d x %d values agree within %.2g", filepath.Base(pair.ours), n, pair.dim, worst)
			}
		})
	}
}
