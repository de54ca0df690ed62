package runfolder

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTruncateAfterKeepsCheckpointedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsFile)
	a, err := OpenAppender(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		a.Append(Metrics{Iteration: i, Loss: float64(i)})
	}
	a.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"iteration": 6, "lo`) // a line a crash cut short
	f.Close()
	if err := TruncateAfter(path, 3); err != nil {
		t.Fatal(err)
	}
	lines, err := ReadLines[Metrics](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || lines[2].Iteration != 3 || lines[2].Loss != 3 {
		t.Fatalf("kept %+v, want iterations 1..3", lines)
	}
	// Appending after the truncation continues the file.
	a, _ = OpenAppender(path)
	a.Append(Metrics{Iteration: 4})
	a.Close()
	if lines, _ := ReadLines[Metrics](path); len(lines) != 4 || lines[3].Iteration != 4 {
		t.Fatalf("after append: %+v", lines)
	}
	if err := TruncateAfter(filepath.Join(t.TempDir(), "missing.jsonl"), 1); err != nil {
		t.Errorf("a missing file has nothing to truncate: %v", err)
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), ProbeFile)
	base := 24.5
	if err := WriteJSON(path, Probe{Top1: 38.8, BaselineTop1: &base, Grid: []GridPoint{{L2: 0.01, HoldOutTop1: 38.2}}}); err != nil {
		t.Fatal(err)
	}
	var p Probe
	if err := ReadJSON(path, &p); err != nil {
		t.Fatal(err)
	}
	if p.Top1 != 38.8 || p.BaselineTop1 == nil || *p.BaselineTop1 != 24.5 || len(p.Grid) != 1 {
		t.Fatalf("read back %+v", p)
	}
	os.WriteFile(path, []byte("{not json"), 0o644)
	if err := ReadJSON(path, &p); err == nil {
		t.Fatal("damaged JSON accepted")
	}
}
