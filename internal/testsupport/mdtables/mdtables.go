// Package mdtables checks the generated tables of the studies' READMEs
// (studies/*/README.md): a table block sits between a begin marker naming the command and the results file
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

// Check reads every study README under root (studies/*/README.md) and
// compares every block of the example NAME with what render writes for its
// results file (a path under root). It fails the test when a block differs,
// has no end marker, or when no README has one at all.
func Check(t *testing.T, root, name string, render func(file string, w io.Writer) error) {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "studies", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	begin := regexp.MustCompile(fmt.Sprintf(`<!-- %s tables: go run ./examples/%s --markdown (\S+) -->`,
		regexp.QuoteMeta(name), regexp.QuoteMeta(name)))
	found := 0
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		found += checkDoc(t, root, doc, string(raw), name, begin, render)
	}
	if found == 0 {
		t.Fatalf("no README under %s has %s tables (no %q marker)", filepath.Join(root, "studies"), name, begin)
	}
}

// checkDoc checks the blocks of one README and returns how many it holds.
func checkDoc(t *testing.T, root, doc, text, name string, begin *regexp.Regexp, render func(file string, w io.Writer) error) int {
	t.Helper()
	end := fmt.Sprintf("<!-- end %s tables -->", name)
	blocks := begin.FindAllStringSubmatchIndex(text, -1)
	for _, b := range blocks {
		file := text[b[2]:b[3]]
		stop := strings.Index(text[b[1]:], end)
		if stop < 0 {
			t.Fatalf("%s: the tables of %s have no end marker %q", doc, file, end)
		}
		got := strings.TrimSpace(text[b[1] : b[1]+stop])
		var want strings.Builder
		if err := render(filepath.Join(root, filepath.FromSlash(file)), &want); err != nil {
			t.Fatal(err)
		}
		if got != strings.TrimSpace(want.String()) {
			t.Errorf("%s: the %s tables differ from %s: run\n\tgo run ./examples/%s --markdown %s\nand paste its output between the markers", doc, name, file, name, file)
		}
	}
	return len(blocks)
}
