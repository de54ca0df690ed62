package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/data/datasets"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// sharedSample returns the test data's svhn/sample_32x32.mat (see
// internal/testsupport/testenv.DataDir).
func sharedSample(t *testing.T) string {
	t.Helper()
	return testenv.DataFile(t, "svhn/sample_32x32.mat")
}

func TestDataInspect(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"train_32x32.mat", "test_32x32.mat"} {
		if err := os.Symlink(sharedSample(t), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"table", nil, []string{"dataset: svhn", "3x32x32", "total   1083  1083", "status: 1083 training and 1083 test images"}},
		{"json", []string{"--json"}, []string{`"problem": "1083 training`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newDataCmd()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append([]string{"inspect", "--dataset", "svhn", "--data-dir", dir}, tc.args...))
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), "not usable") {
				t.Errorf("error %v, want the data reported not usable", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if tc.name == "json" {
				var r datasets.Report
				if err := json.Unmarshal(out.Bytes()[:bytes.LastIndexByte(out.Bytes(), '}')+1], &r); err != nil {
					t.Fatalf("output is not a JSON report: %v", err)
				}
				if r.Train.Images != 1083 || r.Train.PerClass[1] != 109 || r.OK {
					t.Errorf("report %+v", r)
				}
			}
		})
	}
}

func TestDataInspectFlagsDocumented(t *testing.T) {
	cmd := newDataInspectCmd()
	for _, name := range []string{"dataset", "data-dir", "size", "json"} {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			t.Fatalf("no --%s flag", name)
		}
		if len(f.Usage) < 20 {
			t.Errorf("--%s help %q says too little", name, f.Usage)
		}
	}
}
