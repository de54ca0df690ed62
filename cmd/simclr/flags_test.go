package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/train"
)

// One spelling per concept: eval knn takes train's --knn-k, and its first
// spelling --k still sets the same value (hidden, with a deprecation
// notice); a bad value is refused before any data or model is opened.
func TestKNNFlagSpelling(t *testing.T) {
	missingRun := t.TempDir() + "/no-such-run"
	tests := []struct {
		args       []string
		wantErr    string
		wantStderr string
	}{
		{[]string{"eval", "knn", "--knn-k", "0", "--run", missingRun}, "--knn-k 0", ""},
		{[]string{"eval", "knn", "--k", "-3", "--run", missingRun}, "--knn-k -3", "deprecated"},
	}
	for _, tc := range tests {
		_, stderr, err := execute(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.wantErr)
		}
		if !strings.Contains(stderr, tc.wantStderr) {
			t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, tc.wantStderr)
		}
	}
	knn, _, err := newRootCmd().Find([]string{"eval", "knn"})
	if err != nil {
		t.Fatal(err)
	}
	if f := knn.Flags().Lookup("k"); f == nil || !f.Hidden {
		t.Error("eval knn --k is not a hidden alias")
	}
	if !strings.Contains(knn.UsageString(), "--knn-k") || strings.Contains(knn.UsageString(), "  -k,") {
		t.Errorf("eval knn help:\n%s", knn.UsageString())
	}
}

// bench spells the temperature as train does (--tau kept, hidden).
func TestBenchTemperatureSpelling(t *testing.T) {
	for _, flag := range []string{"--temperature", "--tau"} {
		_, _, err := execute("bench", flag, "0", "--device", "cpu")
		if err == nil || !strings.Contains(err.Error(), "--temperature 0") {
			t.Errorf("bench %s 0: error %v, want one naming --temperature", flag, err)
		}
	}
}

// bench picks its device as train does.
func TestBenchDeviceDefaultsLikeTrain(t *testing.T) {
	bench, _, err := newRootCmd().Find([]string{"bench"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bench.Flags().Lookup("device").DefValue, train.Defaults().Device; got != want {
		t.Errorf("bench --device defaults to %q, train to %q", got, want)
	}
}

// train: every flag is checked before the data (whose folder here is
// empty), each error names its flag, and the failed start creates no run
// folder; --checkpoint-every takes a wall-clock duration.
func TestTrainChecksFlagsBeforeData(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--b", "0"}, "--b 0"},
		{[]string{"--c", "-2"}, "--c -2"},
		{[]string{"--lsgd-draws", "-1"}, "--lsgd-draws -1"},
		{[]string{"--max-level", "20"}, "--max-level 20"},
		{[]string{"--min-level", "4", "--max-level", "3"}, "--max-level 3 is below --min-level 4"},
		{[]string{"--checkpoint-every", "100"}, "--checkpoint-every"},
		{[]string{"--dataset", "mnist"}, "--dataset"},
		{[]string{"--checkpoint-every", "5m"}, "fetch_data.sh"}, // all good: the data is what is missing
	}
	for i, tc := range tests {
		out := filepath.Join(dir, fmt.Sprintf("run%d", i))
		args := append([]string{"train", "--iterations", "2", "--device", "cpu", "--data-dir", dir, "--out", out}, tc.args...)
		_, _, err := execute(args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.want)
		}
		if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
			t.Errorf("%v: the failed start left %s", tc.args, out)
		}
	}
	tr, _, err := newRootCmd().Find([]string{"train"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Flags().Lookup("checkpoint-every").DefValue; got != "10m0s" {
		t.Errorf("--checkpoint-every defaults to %q, want 10m0s", got)
	}
}

// The flags that may accompany --resume: session settings and a new length.
func TestResumeFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--epochs", "200", "--device", "cpu"}, ""},
		{[]string{"--iterations", "10", "--checkpoint-every", "1m"}, ""},
		{[]string{"--lr", "0.1"}, "--lr cannot change"},
		{[]string{"--max-level", "5", "--epochs", "3"}, "--max-level cannot change"},
	}
	for _, tc := range tests {
		cmd := newTrainCmd()
		if err := cmd.Flags().Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := checkResumeFlags(cmd.Flags(), "runs/x")
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.wantErr)
		}
	}
}

// eval checks its flags before reading any data (the data folder here is
// empty, so a data error would mean a flag went unchecked).
func TestEvalChecksFlagsBeforeData(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--device", "tpu"}, `--device "tpu"`},
		{[]string{"--precision", "fp16"}, `--precision "fp16"`},
		{[]string{"--dataset", "mnist"}, "--dataset"},
		{[]string{"--width", "-1"}, "--width -1"},
	}
	for _, tc := range tests {
		args := append([]string{"eval", "linear-probe", "--random-init", "--data-dir", dir}, tc.args...)
		if _, _, err := execute(args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.want)
		}
	}
}
