// Package svhn reads the Street View House Numbers data set (cropped-digit
// format: train_32x32.mat, test_32x32.mat, extra_32x32.mat) from its MATLAB
// 5.0 MAT-files into data.Set. The MAT-file reader (mat.go) streams the
// zlib-compressed variables and checks every declared length before it
// allocates, so corrupt or truncated downloads fail with one clear error.
package svhn

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/simclr-go/simclr/data"
)

// Standard per-channel statistics of the SVHN training set (pixels in [0,1]).
var (
	Mean = [3]float32{0.4377, 0.4438, 0.4728}
	Std  = [3]float32{0.1980, 0.2010, 0.1970}
)

// Classes returns the class names in label order: the digits "0" to "9".
func Classes() []string { return []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"} }

// ReadFile reads one SVHN MAT-file; errors name the file.
func ReadFile(path string) (*Digits, error) { return readFile(path, nil) }

func readFile(path string, alloc func(n int64) []uint8) (*Digits, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	d, err := readMAT(f, st.Size(), alloc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Load reads dir/train_32x32.mat and dir/test_32x32.mat; with extra,
// dir/extra_32x32.mat is appended to the training set.
func Load(dir string, extra bool) (*data.Splits, error) {
	train, err := ReadFile(filepath.Join(dir, "train_32x32.mat"))
	if err != nil {
		return nil, fmt.Errorf("svhn: %w", err)
	}
	name := "svhn"
	if extra {
		// Decode extra straight into an array holding train then extra, so
		// the 1.6 GB of extra pixels exist once.
		var combined []uint8
		more, err := readFile(filepath.Join(dir, "extra_32x32.mat"), func(n int64) []uint8 {
			combined = make([]uint8, int64(len(train.Pix))+n)
			copy(combined, train.Pix)
			return combined[len(train.Pix):]
		})
		if err != nil {
			return nil, fmt.Errorf("svhn: %w", err)
		}
		train.Pix = combined
		train.Labels = append(train.Labels, more.Labels...)
		name = "svhn:extra"
	}
	test, err := ReadFile(filepath.Join(dir, "test_32x32.mat"))
	if err != nil {
		return nil, fmt.Errorf("svhn: %w", err)
	}
	return &data.Splits{
		Train: toSet(name+" train", train),
		Test:  toSet(name+" test", test),
		Mean:  Mean,
		Std:   Std,
	}, nil
}

func toSet(name string, d *Digits) *data.Set {
	return &data.Set{Name: name, Classes: Classes(), H: 32, W: 32, Pix: d.Pix, Labels: d.Labels}
}
