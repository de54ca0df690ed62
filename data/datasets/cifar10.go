package datasets

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/cifar"
	"github.com/simclr-go/simclr/data/folder"
	"github.com/simclr-go/simclr/data/internal/fsutil"
)

// cifar10Set is CIFAR-10, in its binary form or as the image folders of
// cifar10-jpeg.tar.gz.
func cifar10Set() Dataset {
	return Dataset{
		Name:     "cifar10",
		Variants: []Variant{{Train: 50000, Test: 10000, Fetch: "cifar10"}},
		Help:     "cifar10",
		Standard: true,
		Load: func(_, dataDir string, size int) (*data.Splits, error) {
			return openCIFAR10(dataDir, size)
		},
	}
}

// openCIFAR10 tries the binary layouts first (exact pixels), then the
// image-folder layouts.
func openCIFAR10(dataDir string, size int) (*data.Splits, error) {
	if err := need32("cifar10", size); err != nil {
		return nil, err
	}
	for _, dir := range []string{dataDir, filepath.Join(dataDir, "cifar10")} {
		for _, bin := range []string{filepath.Join(dir, "cifar-10-batches-bin"), dir} {
			if fsutil.IsFile(filepath.Join(bin, "data_batch_1.bin")) {
				return cifar.Load10(bin)
			}
		}
	}
	for _, root := range []string{filepath.Join(dataDir, "cifar10-jpeg"), dataDir, filepath.Join(dataDir, "cifar10")} {
		if fsutil.IsDir(filepath.Join(root, "train", "airplane")) {
			return loadCIFAR10Folder(root)
		}
	}
	return nil, missing("cifar10", dataDir)
}

// loadCIFAR10Folder reads the image-folder form of CIFAR-10 (the shared
// JPEG copy) with CIFAR-10's class order and standard statistics, so that
// a run behaves the same whichever form the data came in.
func loadCIFAR10Folder(root string) (*data.Splits, error) {
	s, err := folder.Load(root, 32)
	if err != nil {
		return nil, fmt.Errorf("cifar10 (image folders): %w", err)
	}
	want := cifar.Classes10()
	if strings.Join(s.Train.Classes, ",") != strings.Join(want, ",") {
		return nil, fmt.Errorf("cifar10 (image folders): %s has class folders %v, want the ten CIFAR-10 classes %v",
			filepath.Join(root, "train"), s.Train.Classes, want)
	}
	s.Train.Name, s.Test.Name = "cifar10 train", "cifar10 test"
	s.Mean, s.Std = cifar.Mean10, cifar.Std10
	return s, nil
}
