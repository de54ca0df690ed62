package runfolder

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// A run file kept compressed (NAME.gz) reads as the plain one does, the
// plain file wins where both exist, and a damaged archive is an error that
// names it.
func TestReadLinesCompressed(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain", MetricsFile)
	os.MkdirAll(filepath.Dir(plain), 0o755)
	a, err := OpenAppender(plain)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		a.Append(Metrics{Iteration: i, Loss: float64(i) / 2})
	}
	a.Close()
	raw, _ := os.ReadFile(plain)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(raw)
	zw.Close()
	packed := filepath.Join(dir, "packed", MetricsFile)
	os.MkdirAll(filepath.Dir(packed), 0o755)
	os.WriteFile(packed+CompressedSuffix, zipped.Bytes(), 0o644)

	want, _ := ReadLines[Metrics](plain)
	got, err := ReadLines[Metrics](packed)
	if err != nil || len(got) != 4 || !reflect.DeepEqual(got, want) {
		t.Fatalf("compressed file read as %+v (%v), want %+v", got, err, want)
	}
	// Both present: the plain file is read (a resumed run appends to it).
	os.WriteFile(packed, []byte(`{"iteration": 9}`+"\n"), 0o644)
	if got, _ := ReadLines[Metrics](packed); len(got) != 1 || got[0].Iteration != 9 {
		t.Errorf("with both files read %+v, want the plain file's one line", got)
	}
	os.Remove(packed)
	os.WriteFile(packed+CompressedSuffix, []byte("not gzip"), 0o644)
	if _, err := ReadLines[Metrics](packed); err == nil || !strings.Contains(err.Error(), packed+CompressedSuffix) {
		t.Errorf("damaged archive: error %v, want one naming %s", err, packed+CompressedSuffix)
	}
	if _, err := ReadFile(filepath.Join(dir, "none.log")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "none.log") {
		t.Errorf("missing file: error %v, want os.ErrNotExist naming none.log", err)
	}
}
