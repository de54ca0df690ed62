package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cuda/cudaemu"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
	"github.com/simclr-go/simclr/runfolder"
)

// TestPaperTableScriptOnCUDAEmulator runs scripts/gpu/paper_table.sh, the
// one command that makes the paper's table on a GPU machine, in its --tiny
// dry run on the emulated CUDA stack, against a simclr built here, so that
// the script and the flags it passes cannot drift apart unnoticed. Two
// seeds of both arms: each arm is timed on the first iterations of its
// first run, which then resumes from its checkpoint; every run ends with
// the kNN monitor and the probe on the test set; the table has a row per
// run and each arm's mean over seeds; the archive copied back
// holds no checkpoint. Run again, the command keeps the finished runs and
// trains nothing; with a third seed and no time left, the plan names the
// runs it skips.
func TestPaperTableScriptOnCUDAEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four tiny runs on the emulator")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		testenv.Missing(t, "no bash for scripts/gpu/paper_table.sh: %v", err)
	}
	for _, tool := range []string{"awk", "tar", "timeout", "tee"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "no %s for scripts/gpu/paper_table.sh: %v", tool, err)
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "no go command to build simclr for the script: %v", err)
	}
	root := testenv.ModuleRoot(t)
	work := t.TempDir()
	bin := filepath.Join(work, "simclr")
	// Built with the test's own settings and before cudaemu.Use moves
	// XDG_CACHE_HOME (where the go command's cache lives by default), so
	// that the packages come from the build cache the test binary filled
	// and only the link costs.
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/simclr: %v\n%s", err, out)
	}
	cudaemu.Use(t)
	data := imageFolder(t, 16, 8)
	table := filepath.Join(work, "table")
	outDir := filepath.Join(work, "out")
	script := filepath.Join(root, "scripts", "gpu", "paper_table.sh")
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(bash, append([]string{script, "--tiny", "--dataset", "folder:" + data, "--out", table}, args...)...)
		cmd.Env = append(os.Environ(), "SIMCLR="+bin, "GPU_WORK="+filepath.Join(work, "gpu"), "OUT="+outDir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("--seeds", "1 2", "--budget", "400")
	if err != nil {
		t.Fatalf("paper_table.sh --tiny: %v\n%s", err, out)
	}
	for _, want := range []string{"timing lsgd on the first 2 iterations of lsgd-s1", "timing vrrt on the first 2 iterations of vrrt-s1",
		"simclr CUDA emulator", "ms per iteration", "runs (done by"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SKIPPED") {
		t.Errorf("a run was skipped with 400 s for four tiny runs:\n%s", out)
	}
	for _, r := range []string{"lsgd-s1", "vrrt-s1", "lsgd-s2", "vrrt-s2"} {
		dir := filepath.Join(table, "runs", r)
		ms, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(dir, runfolder.MetricsFile))
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		// 16 training images in batches of 2^3: 2 iterations an epoch, 2 epochs.
		if len(ms) != 4 {
			t.Errorf("%s: %d metrics lines, want 4", r, len(ms))
		}
		for i, m := range ms {
			if m.Iteration != i+1 {
				t.Errorf("%s: metrics line %d is iteration %d (a resume repeated or lost one)", r, i+1, m.Iteration)
				break
			}
		}
		evals, err := runfolder.ReadLines[runfolder.Eval](filepath.Join(dir, runfolder.EvalFile))
		if err != nil || len(evals) == 0 || evals[len(evals)-1].Iteration != 4 || evals[len(evals)-1].TestImages != 8 {
			t.Errorf("%s: eval.jsonl %+v (%v), want the kNN of the test set at iteration 4", r, evals, err)
		}
		if _, err := os.Stat(filepath.Join(dir, runfolder.ProbeFile)); err != nil {
			t.Errorf("%s: no linear probe: %v", r, err)
		}
	}
	tableMD, err := os.ReadFile(filepath.Join(table, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	rowRe := regexp.MustCompile(`(?m)^\| (lsgd|vrrt)-s[12] \| [^|]+ \| [12] \| 4 \| [0-9]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$`)
	if n := len(rowRe.FindAllString(string(tableMD), -1)); n != 4 {
		t.Errorf("table.md has %d complete run rows, want 4:\n%s", n, tableMD)
	}
	armRe := regexp.MustCompile(`(?m)^\| (L-SGD|VR RT-MLMC)[^|]* \| 2 \| [0-9.]+ ± [0-9.]+ \[[0-9.-]+, [0-9.-]+\] \|`)
	if n := len(armRe.FindAllString(string(tableMD), -1)); n != 2 {
		t.Errorf("table.md has %d arm rows over 2 seeds, want 2:\n%s", n, tableMD)
	}
	files := archived(t, filepath.Join(outDir, "paper_table.tar.gz"))
	for _, want := range []string{"table/table.md", "table/plan.txt", "table/paper_table.log", "table/runs/vrrt-s2/linear_probe.json", "table/logs/lsgd-s1.log"} {
		if !files[want] {
			t.Errorf("paper_table.tar.gz lacks %s", want)
		}
	}
	for f := range files {
		if strings.HasSuffix(f, ".safetensors") {
			t.Errorf("paper_table.tar.gz holds the checkpoint %s", f)
		}
	}
	timesBefore, err := os.ReadFile(filepath.Join(table, "times.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	// Two timing processes and four that finished a run.
	if n := strings.Count(string(timesBefore), "\n"); n != 1+6 {
		t.Errorf("times.tsv has %d lines, want a header and 6 processes:\n%s", n, timesBefore)
	}

	// Again: everything is done, nothing trains.
	out, err = run("--seeds", "1 2", "--budget", "400")
	if err != nil {
		t.Fatalf("paper_table.sh --tiny, again: %v\n%s", err, out)
	}
	if strings.Count(out, " kept") != 4 || strings.Contains(out, "timing ") {
		t.Errorf("run again, the command did not keep the four finished runs:\n%s", out)
	}
	if after, _ := os.ReadFile(filepath.Join(table, "times.tsv")); string(after) != string(timesBefore) {
		t.Errorf("run again, the command started processes:\n%s", after)
	}

	// A third seed with no time left: skipped, saying so.
	out, err = run("--seeds", "1 2 3", "--budget", "1", "--plan-only")
	if err != nil {
		t.Fatalf("paper_table.sh --plan-only: %v\n%s", err, out)
	}
	for _, r := range []string{"lsgd-s3", "vrrt-s3"} {
		if !regexp.MustCompile(`(?m)^  ` + r + ` .*SKIPPED: does not fit`).MatchString(out) {
			t.Errorf("the plan does not skip %s for want of time:\n%s", r, out)
		}
	}

	// Bad input: one clear error naming the flag.
	if out, err := run("--precision", "fp16"); err == nil || !strings.Contains(out, "--precision fp16: use tf32, fp32 or bf16") {
		t.Errorf("--precision fp16: err %v, output:\n%s", err, out)
	}
}

// archived lists the files of a .tar.gz.
func archived(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(h.Name, "./")] = true
	}
	return files
}
