package datasets

import (
	"path/filepath"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/internal/fsutil"
	"github.com/simclr-go/simclr/data/svhn"
)

// svhnSet is SVHN's cropped digits (the .mat files), with svhn:extra's
// 531,131 extra training images or without.
func svhnSet() Dataset {
	return Dataset{
		Name: "svhn",
		Variants: []Variant{
			{Train: 73257, Test: 26032, Fetch: "svhn"},
			{Option: "extra", Train: 73257 + 531131, Test: 26032, Fetch: "svhn svhn-extra"},
		},
		Help:     "svhn (svhn:extra adds extra_32x32.mat to training)",
		Standard: true,
		Load: func(option, dataDir string, size int) (*data.Splits, error) {
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
		},
	}
}
