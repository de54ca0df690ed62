package layering

import (
	"errors"
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testenv"
)

const module = "github.com/simclr-go/simclr/"

// layers gives every package of the module its layer (README "Layout"). A
// package may import only packages of a strictly lower layer. The backends
// are placed above the model and the optimizer so that those reach the
// hardware only through tensor.Backend; only backend (the chooser), the
// trainer and the command line pick one.
var layers = map[string]int{
	// 0: leaves.
	"tensor": 0, "blas": 0, "checkpoint": 0, "data": 0, "mlmc": 0, "runfolder": 0,
	"internal/parallel": 0, "data/internal/fsutil": 0, "eval/features": 0,
	"internal/layering": 0, "internal/testenv": 0, "internal/citations": 0,
	"internal/npy": 0,
	// 1: the CSO oracle, the host reference maths, data readers, augmentations.
	"cso": 1, "internal/synthdata": 1, "internal/ref": 1, "backend/cuda/cudaemu": 1, "data/internal/shared": 1, "data/cifar": 1, "data/svhn": 1, "data/folder": 1, "augment": 1,
	// 2: data sets by name, the loader, layers.
	"data/datasets": 2, "loader": 2, "nn": 2,
	// 3: the optimizer, the network, the classifiers on features.
	"optim": 3, "model/resnet18": 3, "eval/knn": 3, "eval/linear": 3,
	// 4: the two implementations of tensor.Backend.
	"backend/cpu": 4, "backend/cuda": 4,
	// 5: choosing a backend; evaluating a network; the SimCLR oracle;
	// communicating between ranks (it reaches the backends' memory).
	"backend": 5, "eval": 5, "contrastive": 5, "collective": 5,
	// 6: the trainer; reports on run folders.
	"train": 6, "report": 6,
	// 7: programs.
	"cmd/simclr": 7, "examples/pricing": 7, "examples/dro": 7, "examples/complexity": 7, "scripts/study/levelsplot": 7, "scripts/paper/tables": 7,
}

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
			t.Errorf("package %s has no layer: add it to layers here and to README.md's Layout", rel)
			return nil
		}
		seen[rel] = true
		for _, imp := range pkg.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if l, known := layers[dep]; !known || l >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package may import only lower layers (README.md, Layout)", rel, layer, dep, l)
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
