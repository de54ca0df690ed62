package datasets_test

import (
	"strings"
	"testing"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/datasets"
)

// toy is a data set written outside the package, as a user would add one:
// n 2x2 images of two classes, image i all of grey level i, in two splits.
func toy(n int) datasets.Dataset {
	return datasets.Dataset{
		Name:     "toy",
		Variants: []datasets.Variant{{}, {Option: "big"}},
		Help:     "toy (toy:big for twice the images)",
		Load: func(option, _ string, size int) (*data.Splits, error) {
			images := n
			if option == "big" {
				images *= 2
			}
			set := func(name string) *data.Set {
				s := &data.Set{Name: name, Classes: []string{"even", "odd"}, H: 2, W: 2}
				for i := range images {
					s.Labels = append(s.Labels, int32(i%2))
					for range 3 * 2 * 2 {
						s.Pix = append(s.Pix, uint8(i))
					}
				}
				return s
			}
			return &data.Splits{Train: set("toy train"), Test: set("toy test")}, nil
		},
	}
}

// A data set added with one registration is opened by name, with its
// options, and appears in the name list and the help text, which derive
// from the registry; its unknown options are refused as the built-ins' are.
func TestRegisteredDataset(t *testing.T) {
	r := datasets.Builtin()
	if err := r.Register(toy(3)); err != nil { // the registration line
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		images int
	}{{"toy", 3}, {"toy:big", 6}} {
		s, err := r.Open(tc.name, t.TempDir(), 0)
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.name, err)
		}
		if s.Train.Len() != tc.images || s.Train.Image(tc.images - 1)[0] != uint8(tc.images-1) {
			t.Errorf("Open(%q): %d images, last of level %d; want %d, of level %d", tc.name, s.Train.Len(), s.Train.Image(s.Train.Len() - 1)[0], tc.images, tc.images-1)
		}
	}
	if names := r.Names(); !strings.Contains(names, "toy, toy:big") || !strings.Contains(names, "cifar10") {
		t.Errorf("Names() = %q, want the built-ins and toy, toy:big", names)
	}
	if help := r.Help(); !strings.HasSuffix(help, "or toy (toy:big for twice the images)") {
		t.Errorf("Help() = %q, want it to end with the toy's help", help)
	}
	if err := r.CheckName("toy:small"); err == nil || !strings.Contains(err.Error(), "only toy option is :big") {
		t.Errorf("CheckName(toy:small) = %v, want the options named", err)
	}
	if err := r.Register(toy(1)); err == nil {
		t.Error("a second data set named toy was registered")
	}
	// The package's own registry is untouched.
	if err := datasets.CheckName("toy"); err == nil {
		t.Error("the built-in registry knows toy")
	}
}
