package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The pricing tables of BENCHMARKS.md sit between a begin marker naming the
// results file they come from and an end marker, and must be exactly what
// --markdown prints from that committed file.
var tablesBegin = regexp.MustCompile(`<!-- pricing tables: go run ./examples/pricing --markdown (\S+) -->`)

const tablesEnd = "<!-- end pricing tables -->"

func TestBenchmarksTablesMatchResults(t *testing.T) {
	root := filepath.Join("..", "..")
	bench, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(bench)
	blocks := tablesBegin.FindAllStringSubmatchIndex(text, -1)
	if len(blocks) == 0 {
		t.Fatalf("BENCHMARKS.md has no pricing tables (no %q marker)", tablesBegin)
	}
	for _, b := range blocks {
		file := text[b[2]:b[3]]
		end := strings.Index(text[b[1]:], tablesEnd)
		if end < 0 {
			t.Fatalf("BENCHMARKS.md: the tables of %s have no end marker %q", file, tablesEnd)
		}
		got := strings.TrimSpace(text[b[1] : b[1]+end])
		var want strings.Builder
		if err := runMain([]string{"--markdown", filepath.Join(root, filepath.FromSlash(file))}, &want, os.Stderr); err != nil {
			t.Fatal(err)
		}
		if got != strings.TrimSpace(want.String()) {
			t.Errorf("BENCHMARKS.md's pricing tables differ from %s: run\n\tgo run ./examples/pricing --markdown %s\nand paste its output between the markers", file, file)
		}
	}
}
