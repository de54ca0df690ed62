// Package datasets resolves a data set name and a data folder to the reader
// that can load it, so that every command accepts the same --dataset and
// --data-dir and reports missing data the same way: naming the paths looked
// at and the command that fetches the data.
package datasets

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/cifar"
	"github.com/simclr-go/simclr/data/folder"
	"github.com/simclr-go/simclr/data/internal/fsutil"
	"github.com/simclr-go/simclr/data/svhn"
)

// DefaultDir is the data folder used when none is given; scripts/fetch_data.sh
// writes there by default and .gitignore keeps it out of the repository.
const DefaultDir = "data-cache"

// Names lists the accepted data set names for help texts.
const Names = "cifar10, cifar100, cifar100:coarse, svhn, svhn:extra, folder:PATH"

// ErrNotFound is wrapped by Open's error when the data is not on disk.
var ErrNotFound = errors.New("data set not found")

// CheckName reports whether name is one Open accepts, without touching the
// disk, so that a command can refuse a bad --dataset before loading
// anything.
func CheckName(name string) error {
	base, option, _ := strings.Cut(name, ":")
	switch {
	case base == "cifar10" && option != "":
		return fmt.Errorf("dataset %q: cifar10 takes no option; use one of %s", name, Names)
	case base == "cifar100" && option != "" && option != "coarse":
		return fmt.Errorf("dataset %q: the only cifar100 option is :coarse (20 superclasses)", name)
	case base == "svhn" && option != "" && option != "extra":
		return fmt.Errorf("dataset %q: the only svhn option is :extra (adds extra_32x32.mat to training)", name)
	case base == "folder" && option == "":
		return fmt.Errorf("dataset %q: say which folder, e.g. folder:/path/to/images (holding train/CLASS/*.jpg and test/CLASS/*.jpg)", name)
	case base == "cifar10", base == "cifar100", base == "svhn", base == "folder":
		return nil
	}
	return fmt.Errorf("unknown dataset %q: use one of %s", name, Names)
}

// Open loads data set name from dataDir ("" means DefaultDir). size is the
// image side the caller wants: 0 accepts the data set's own size; the CIFAR
// and SVHN sets are 32x32 and only folder data sets are resized.
//
//   - "cifar10": DIR/cifar-10-batches-bin/, DIR itself holding
//     data_batch_1.bin, or an image-folder tree (DIR/cifar10-jpeg/train/airplane/...,
//     DIR/train/airplane/..., DIR/cifar10/...), which is what
//     cifar10-jpeg.tar.gz unpacks to; binary form is preferred.
//   - "cifar100", "cifar100:coarse": DIR/cifar-100-binary/ or DIR holding train.bin.
//   - "svhn", "svhn:extra": DIR/svhn/*.mat or DIR holding train_32x32.mat;
//     with extra, extra_32x32.mat joins the training set.
//   - "folder:PATH": an image-folder tree at PATH (or DIR/PATH when PATH is
//     relative and not found as given).
func Open(name, dataDir string, size int) (*data.Splits, error) {
	if dataDir == "" {
		dataDir = DefaultDir
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	base, option, _ := strings.Cut(name, ":")
	switch base {
	case "cifar10":
		return openCIFAR10(dataDir, size)
	case "cifar100":
		if err := need32("cifar100", size); err != nil {
			return nil, err
		}
		tried := []string{filepath.Join(dataDir, "cifar-100-binary", "train.bin"), filepath.Join(dataDir, "train.bin")}
		if !anyFile(tried) {
			return nil, missing("cifar100", dataDir)
		}
		return cifar.Load100(dataDir, option == "coarse")
	case "svhn":
		if err := need32("svhn", size); err != nil {
			return nil, err
		}
		fetch := "svhn"
		if option == "extra" {
			fetch = "svhn svhn-extra"
		}
		for _, dir := range []string{filepath.Join(dataDir, "svhn"), dataDir} {
			if fsutil.IsFile(filepath.Join(dir, "train_32x32.mat")) {
				return svhn.Load(dir, option == "extra")
			}
		}
		return nil, missing(fetch, dataDir)
	case "folder":
		root := option
		if !filepath.IsAbs(root) && !fsutil.IsDir(root) && fsutil.IsDir(filepath.Join(dataDir, root)) {
			root = filepath.Join(dataDir, root)
		}
		if !fsutil.IsDir(root) {
			return nil, fmt.Errorf("dataset %q: %w: no folder %s (nor %s); it must hold train/CLASS/*.jpg and test/CLASS/*.jpg",
				name, ErrNotFound, option, filepath.Join(dataDir, option))
		}
		return folder.Load(root, size)
	}
	return nil, fmt.Errorf("unknown dataset %q: use one of %s", name, Names)
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

func need32(name string, size int) error {
	if size != 0 && size != cifar.Side {
		return fmt.Errorf("dataset %s has 32x32 images; image size %d is not supported for it (use 32)", name, size)
	}
	return nil
}

// LocalMirror is where the project's shared machines keep a copy of
// CIFAR-10 (the JPEG q75 rebuild) for scripts/fetch_data.sh --from, relative
// to the working directory (a checkout next to the shared folder).
const LocalMirror = "../shared/data/cifar10"

// missing is the error for data not on disk: one short line with the
// command that fetches the data into dataDir, from the local mirror when
// there is one (the paths looked at would only lengthen it: the command
// puts the data where Open looks first).
func missing(fetch, dataDir string) error {
	command := fmt.Sprintf("scripts/fetch_data.sh %s --dir %s", fetch, dataDir)
	if fetch == "cifar10" && fsutil.IsFile(filepath.Join(LocalMirror, "cifar10-jpeg.tar.gz")) {
		command += " --from " + LocalMirror
	}
	return fmt.Errorf("%s: %w in %s; fetch it with: %s", strings.Fields(fetch)[0], ErrNotFound, dataDir, command)
}

func anyFile(paths []string) bool {
	for _, p := range paths {
		if fsutil.IsFile(p) {
			return true
		}
	}
	return false
}
