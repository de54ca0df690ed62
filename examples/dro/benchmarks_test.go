package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The DRO tables of BENCHMARKS.md sit between these markers and must be
// exactly what --markdown prints from the committed results.
const (
	tablesBegin = "<!-- dro tables: go run ./examples/dro --markdown results/dro/summary.jsonl -->"
	tablesEnd   = "<!-- end dro tables -->"
)

func TestBenchmarksTablesMatchResults(t *testing.T) {
	root := filepath.Join("..", "..")
	sums, err := readSummaries(filepath.Join(root, "results", "dro", "summary.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	writeMarkdown(&want, sums)
	bench, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(bench)
	i, j := strings.Index(text, tablesBegin), strings.Index(text, tablesEnd)
	if i < 0 || j < i {
		t.Fatalf("BENCHMARKS.md has no DRO tables between %q and %q", tablesBegin, tablesEnd)
	}
	got := strings.TrimSpace(text[i+len(tablesBegin) : j])
	if got != strings.TrimSpace(want.String()) {
		t.Errorf("BENCHMARKS.md's DRO tables differ from results/dro/summary.jsonl: run\n\tgo run ./examples/dro --markdown results/dro/summary.jsonl\nand paste its output between the markers")
	}
}
