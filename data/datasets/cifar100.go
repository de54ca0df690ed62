package datasets

import (
	"path/filepath"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/cifar"
)

// cifar100Set is CIFAR-100 in its binary form, with the 100 fine labels or
// (cifar100:coarse) the 20 superclasses.
func cifar100Set() Dataset {
	return Dataset{
		Name: "cifar100",
		Variants: []Variant{
			{Train: 50000, Test: 10000, Fetch: "cifar100"},
			{Option: "coarse", Train: 50000, Test: 10000, Fetch: "cifar100"},
		},
		Help:     "cifar100 (cifar100:coarse for the 20 superclasses)",
		Standard: true,
		Load: func(option, dataDir string, size int) (*data.Splits, error) {
			if err := need32("cifar100", size); err != nil {
				return nil, err
			}
			tried := []string{filepath.Join(dataDir, "cifar-100-binary", "train.bin"), filepath.Join(dataDir, "train.bin")}
			if !anyFile(tried) {
				return nil, missing("cifar100", dataDir)
			}
			return cifar.Load100(dataDir, option == "coarse")
		},
	}
}
