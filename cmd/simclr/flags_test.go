package main

import (
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
