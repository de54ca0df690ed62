package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/mdtables"
)

// The pricing tables of studies/pricing/README.md must be exactly what --markdown
// prints from the committed results files they name.
func TestBenchmarksTablesMatchResults(t *testing.T) {
	mdtables.Check(t, filepath.Join("..", ".."), "pricing", func(file string, w io.Writer) error {
		return runMain([]string{"--markdown", file}, w, os.Stderr)
	})
}
