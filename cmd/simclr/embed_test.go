package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/data/datasets"
	"github.com/simclr-go/simclr/data/folder"
	"github.com/simclr-go/simclr/eval"
	"github.com/simclr-go/simclr/internal/npy"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/runfolder"
)

// trainTinyRun trains a tiny network on data (an image folder) for two
// iterations and returns the run folder.
func trainTinyRun(t *testing.T, data string) string {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	_, stderr, err := execute("train", "--dataset", "folder:"+data, "--iterations", "2", "--max-level", "3",
		"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", run, "--probe=false")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	return run
}

// readNPY reads a .npy file written by embed.
func readNPY(t *testing.T, path string) ([]float32, []int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	values, shape, err := npy.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return values, shape
}

// embed writes, for every image of the split, exactly the features eval
// extracts from the same checkpoint (precise-BN statistics as saved, the
// same preprocessing), and a CSV index naming each image's file and label;
// with --projection, the head's outputs. --run and --checkpoint agree.
func TestEmbedMatchesEvalFeatures(t *testing.T) {
	// embed's backend and the test's own are both made by cpu.New, whose
	// start-up SGEMM race can decide each the other way under load; the
	// two kinds round differently and the features are compared bit for
	// bit, so both compute with the built-in kernel.
	t.Setenv(blas.EnvGemm, blas.KindBuiltin)
	data := imageFolder(t, 32, 20)
	run := trainTinyRun(t, data)
	dir := t.TempDir()

	// What eval extracts from the run's model.
	splits, err := datasets.Open("folder:"+data, "", eval.ImageSize)
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{Width: 0.0625, ProjDim: 16, InputSize: 32}, 99)
	if _, err := m.Load(filepath.Join(run, runfolder.ModelFile)); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		split string
		args  []string
	}{
		{"test", []string{"--run", run}},
		{"train", []string{"--run", run, "--split", "train"}},
		{"test", []string{"--checkpoint", filepath.Join(run, runfolder.ModelFile), "--data", "folder:" + data}},
	} {
		set := splits.Test
		if tc.split == "train" {
			set = splits.Train
		}
		want := eval.Extract(b, m, set, splits.Mean, splits.Std)
		out := filepath.Join(dir, tc.split+".npy")
		args := append([]string{"embed", "--device", "cpu", "--out", out}, tc.args...)
		stdout, stderr, err := execute(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		if !strings.Contains(stdout, "wrote "+out) {
			t.Errorf("%v: stdout %q", args, stdout)
		}
		got, shape := readNPY(t, out)
		if !slices.Equal(shape, []int{set.Len(), m.FeatureDim()}) {
			t.Fatalf("%v: shape %v, want [%d %d]", args, shape, set.Len(), m.FeatureDim())
		}
		if !slices.Equal(got, want.X) {
			t.Errorf("%v: the .npy rows differ from eval's features", args)
		}

		f, err := os.Open(strings.TrimSuffix(out, ".npy") + ".csv")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) != set.Len()+1 || !slices.Equal(rows[0], []string{"row", "file", "label", "class"}) {
			t.Fatalf("%v: index %v (%v)", args, rows, err)
		}
		for i, r := range rows[1:] {
			l := set.Labels[i]
			if r[0] != strconv.Itoa(i) || r[1] != set.Files[i] || r[2] != strconv.Itoa(int(l)) || r[3] != set.Classes[l] {
				t.Fatalf("%v: index row %d is %v, want %d, %s, %d, %s", args, i, r, i, set.Files[i], l, set.Classes[l])
			}
			if !strings.HasPrefix(r[1], filepath.Join(data, tc.split, r[3])+string(filepath.Separator)) {
				t.Fatalf("%v: row %d: file %s is not in the folder of class %s", args, i, r[1], r[3])
			}
		}
	}

	// --projection: the head's output of each image, as eval computes it.
	out := filepath.Join(dir, "z.npy")
	if _, stderr, err := execute("embed", "--run", run, "--device", "cpu", "--projection", "--out", out); err != nil {
		t.Fatalf("--projection: %v\n%s", err, stderr)
	}
	got, shape := readNPY(t, out)
	var want []float32
	eval.ExtractBatches(b, m, splits.Test, splits.Mean, splits.Std, eval.Projection, func(_ int, rows []float32) error {
		want = append(want, rows...)
		return nil
	})
	if !slices.Equal(shape, []int{splits.Test.Len(), 16}) || !slices.Equal(got, want) {
		t.Errorf("--projection: shape %v, want [%d 16], values equal: %v", shape, splits.Test.Len(), slices.Equal(got, want))
	}
}

// Bad paths, empty folders and bad flags get one clear line naming what
// is wrong, before any file is written; no partial output is left behind.
func TestEmbedErrors(t *testing.T) {
	data := imageFolder(t, 8, 4)
	run := trainTinyRun(t, data)
	dir := t.TempDir()
	out := filepath.Join(dir, "f.npy")

	emptyClass := t.TempDir()
	for _, d := range []string{"train/a", "test/a"} {
		os.MkdirAll(filepath.Join(emptyClass, d), 0o755)
	}
	noClasses := t.TempDir()
	os.MkdirAll(filepath.Join(noClasses, "train"), 0o755)
	os.MkdirAll(filepath.Join(noClasses, "test"), 0o755)
	notRun := t.TempDir()
	noModel := t.TempDir() // a run that has not checkpointed yet
	os.WriteFile(filepath.Join(noModel, runfolder.ConfigFile), []byte(`{"dataset": "folder:`+data+`"}`), 0o644)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no network", []string{"--out", out}, "give --run"},
		{"missing run", []string{"--run", filepath.Join(dir, "nope"), "--out", out}, filepath.Join(dir, "nope")},
		{"not a run", []string{"--run", notRun, "--out", out}, "not a run folder"},
		{"missing checkpoint", []string{"--checkpoint", filepath.Join(dir, "nope.safetensors"), "--out", out}, "--checkpoint: stat " + filepath.Join(dir, "nope.safetensors")},
		{"run without a model", []string{"--run", noModel, "--out", out}, "has no model.safetensors yet"},
		{"missing folder", []string{"--run", run, "--dataset", "folder:" + filepath.Join(dir, "nofolder"), "--out", out}, "nofolder"},
		{"empty class folder", []string{"--run", run, "--dataset", "folder:" + emptyClass, "--out", out}, filepath.Join(emptyClass, "train", "a") + " holds no .png"},
		{"no class folders", []string{"--run", run, "--dataset", "folder:" + noClasses, "--out", out}, filepath.Join(noClasses, "train") + " holds no class folders"},
		{"bad split", []string{"--run", run, "--split", "val", "--out", out}, `--split "val"`},
		{"no out", []string{"--run", run}, "--out: name the .npy file"},
		{"out not npy", []string{"--run", run, "--out", filepath.Join(dir, "f.csv")}, "name a .npy file"},
		{"out folder missing", []string{"--run", run, "--out", filepath.Join(dir, "no", "f.npy")}, "does not exist"},
		{"bad device", []string{"--run", run, "--device", "tpu", "--out", out}, `--device "tpu"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := execute(append([]string{"embed", "--device", "cpu"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("the failed embed left %v in %s", entries, dir)
			}
		})
	}
}

// A flat folder of pictures, without train/ and test/ class folders, is
// embedded whole: the rows are eval's features of folder.LoadFlat's
// images, normalised with their own statistics, and the CSV index has no
// label or class column. Training refuses such a folder with a line
// pointing at embed.
func TestEmbedFlatFolder(t *testing.T) {
	// embed's backend and the test's own are both made by cpu.New, whose
	// start-up SGEMM race can decide each the other way under load; the
	// two kinds round differently and the features are compared bit for
	// bit, so both compute with the built-in kernel.
	t.Setenv(blas.EnvGemm, blas.KindBuiltin)
	labelled := imageFolder(t, 8, 6)
	run := trainTinyRun(t, labelled)
	flat := t.TempDir()
	for _, class := range []string{"red", "blue"} {
		src := filepath.Join(labelled, "test", class)
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(flat, class+"-"+e.Name()), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	splits, err := folder.LoadFlat(flat, eval.ImageSize)
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{Width: 0.0625, ProjDim: 16, InputSize: 32}, 99)
	if _, err := m.Load(filepath.Join(run, runfolder.ModelFile)); err != nil {
		t.Fatal(err)
	}
	want := eval.Extract(b, m, splits.Train, splits.Mean, splits.Std)

	out := filepath.Join(t.TempDir(), "mine.npy")
	if _, stderr, err := execute("embed", "--device", "cpu", "--run", run, "--dataset", "folder:"+flat, "--out", out); err != nil {
		t.Fatalf("embed: %v\n%s", err, stderr)
	}
	got, shape := readNPY(t, out)
	if splits.Train.Len() != 6 || !slices.Equal(shape, []int{6, m.FeatureDim()}) || !slices.Equal(got, want.X) {
		t.Errorf("shape %v, want [6 %d]; rows equal to eval's: %v", shape, m.FeatureDim(), slices.Equal(got, want.X))
	}
	f, err := os.Open(strings.TrimSuffix(out, ".npy") + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 7 || !slices.Equal(rows[0], []string{"row", "file"}) {
		t.Fatalf("index %v (%v), want a header row, file and 6 rows", rows, err)
	}
	for i, r := range rows[1:] {
		if r[0] != strconv.Itoa(i) || r[1] != splits.Train.Files[i] || filepath.Dir(r[1]) != flat {
			t.Errorf("index row %d is %v, want %d, %s", i, r, i, splits.Train.Files[i])
		}
	}

	_, _, err = execute("train", "--dataset", "folder:"+flat, "--iterations", "1", "--max-level", "2",
		"--width", "0.0625", "--device", "cpu", "--out", filepath.Join(t.TempDir(), "r"), "--probe=false")
	if err == nil || !strings.Contains(err.Error(), "simclr embed reads such a folder") {
		t.Errorf("train on a flat folder: error %v, want one pointing at simclr embed", err)
	}
}
