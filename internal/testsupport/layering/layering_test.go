package layering

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

const module = "github.com/simclr-go/simclr/"

// layers gives every package of the module its layer (CONTRIBUTING.md, "Layout"). A
// package may import only packages of a strictly lower layer. The backends
// are placed above the model and the optimizer so that those reach the
// hardware only through tensor.Backend; only backend (the chooser), the
// trainer and the command line pick one.
var layers = map[string]int{
	// 0: leaves.
	"tensor": 0, "blas": 0, "checkpoint": 0, "data": 0, "mlmc": 0, "runfolder": 0,
	"internal/parallel": 0, "data/internal/fsutil": 0, "eval/features": 0,
	"internal/npy": 0, "internal/cudainstall": 0,
	// Test-only helpers (internal/testsupport): no runtime package imports them.
	"internal/testsupport/layering": 0, "internal/testsupport/testenv": 0, "internal/testsupport/citations": 0, "internal/testsupport/mdtables": 0,
	// 1: the CSO and UBSR oracles, the stochastic-gradient driver, the host reference maths, data readers, augmentations.
	"cso": 1, "ubsr": 1, "mlmc/sgd": 1, "internal/testsupport/synthdata": 1, "internal/ref": 1, "backend/cuda/cudaemu": 1, "internal/testsupport/shared": 1, "data/cifar": 1, "data/svhn": 1, "data/folder": 1, "augment": 1,
	// 2: data sets by name, the loader, layers.
	"data/datasets": 2, "loader": 2, "nn": 2,
	// 2: the auto method, on the driver.
	"mlmc/auto": 2,
	// 3: the optimizer, the network, the classifiers on features.
	"optim": 3, "model/resnet18": 3, "eval/knn": 3, "eval/linear": 3,
	// 3: the experiment harness over mlmc oracles, its auto method included.
	"experiment": 3,
	// 4: the figures of the harness's results (every plotting dependency).
	"experiment/plots": 4,
	// 4: the two implementations of tensor.Backend.
	"backend/cpu": 4, "backend/cuda": 4,
	// 5: choosing a backend; evaluating a network; the SimCLR oracle;
	// communicating between ranks (it reaches the backends' memory).
	"backend": 5, "eval": 5, "contrastive": 5, "collective": 5,
	// 6: the trainer, its settings and plan, and the one way to open a run.
	"train": 6,
	// 7: reports on run folders (they open runs as the trainer recorded them).
	"report": 7,
	// 8: programs.
	"cmd/simclr": 8, "examples/pricing": 8, "examples/dro": 8, "examples/ubsr": 8, "examples/complexity": 8, "examples/ownoracle": 8, "studies/small-batches/levelsplot": 8, "studies/small-batches/innermean": 8, "studies/simclr-paper/tables": 8,
}

// testSupport holds the test-only helpers; a runtime package imports them
// only from its tests.
const testSupport = "internal/testsupport/"

// testOnly are the packages outside internal/testsupport that only tests
// use, and which may therefore import its helpers.
var testOnly = map[string]bool{"backend/cuda/cudaemu": true}

func TestImportsGoDownTheLayers(t *testing.T) {
	root := testenv.ModuleRoot(t)
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "data-cache" || name == "runs") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil // no Go files here
		}
		if err != nil {
			// Any other error (two package names, a bad build line) would
			// leave the package's imports unchecked.
			t.Errorf("read package %s: %v", path, err)
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		layer, ok := layers[rel]
		if !ok {
			t.Errorf("package %s has no layer: add it to layers here and to CONTRIBUTING.md's Layout", rel)
			return nil
		}
		seen[rel] = true
		for _, imp := range pkg.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if strings.HasPrefix(dep, testSupport) && !strings.HasPrefix(rel, testSupport) && !testOnly[rel] {
				t.Errorf("%s imports the test-only helper %s outside its tests: runtime code may not depend on %s", rel, dep, testSupport)
			}
			if l, known := layers[dep]; !known || l >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package may import only lower layers (CONTRIBUTING.md, Layout)", rel, layer, dep, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range layers {
		if !seen[pkg] {
			t.Errorf("layers names %s, which is not a package of the module: remove it", pkg)
		}
	}
}

// CONTRIBUTING.md's Layout table lists every package of layers in the row
// of its layer, so that the table a reader trusts is the one this test
// enforces.
func TestLayoutTableListsEveryPackage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		t.Fatal("CONTRIBUTING.md has no Layout section")
	}
	rows := map[int]string{} // layer -> its row
	for _, line := range strings.Split(layout, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		var layer int
		if _, err := fmt.Sscanf(strings.TrimSpace(cells[1]), "%d", &layer); err == nil {
			rows[layer] = cells[2]
		}
	}
	for pkg, layer := range layers {
		if !strings.Contains(rows[layer], "`"+pkg+"`") {
			t.Errorf("CONTRIBUTING.md's Layout table does not list `%s` in layer %d", pkg, layer)
		}
	}
}
