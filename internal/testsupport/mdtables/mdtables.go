// Package mdtables checks the generated tables of BENCHMARKS.md: a table
// block sits between a begin marker naming the command and the results file
// it is printed from,
//
//	<!-- NAME tables: go run ./examples/NAME --markdown FILE -->
//
// and an end marker, <!-- end NAME tables -->, and must be exactly what that
// command prints from the committed file. Tests only.
package mdtables

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Check reads BENCHMARKS.md from the repository root and compares every
// block of the example NAME with what render writes for its results file
// (a path under root). It fails the test when a block differs, has no end
// marker, or when there is none at all.
func Check(t *testing.T, root, name string, render func(file string, w io.Writer) error) {
	t.Helper()
	bench, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(bench)
	begin := regexp.MustCompile(fmt.Sprintf(`<!-- %s tables: go run ./examples/%s --markdown (\S+) -->`,
		regexp.QuoteMeta(name), regexp.QuoteMeta(name)))
	end := fmt.Sprintf("<!-- end %s tables -->", name)
	blocks := begin.FindAllStringSubmatchIndex(text, -1)
	if len(blocks) == 0 {
		t.Fatalf("BENCHMARKS.md has no %s tables (no %q marker)", name, begin)
	}
	for _, b := range blocks {
		file := text[b[2]:b[3]]
		stop := strings.Index(text[b[1]:], end)
		if stop < 0 {
			t.Fatalf("BENCHMARKS.md: the tables of %s have no end marker %q", file, end)
		}
		got := strings.TrimSpace(text[b[1] : b[1]+stop])
		var want strings.Builder
		if err := render(filepath.Join(root, filepath.FromSlash(file)), &want); err != nil {
			t.Fatal(err)
		}
		if got != strings.TrimSpace(want.String()) {
			t.Errorf("BENCHMARKS.md's %s tables differ from %s: run\n\tgo run ./examples/%s --markdown %s\nand paste its output between the markers", name, file, name, file)
		}
	}
}
