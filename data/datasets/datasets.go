// Package datasets resolves a data set name and a data folder to the reader
// that can load it, so that every command accepts the same --dataset and
// --data-dir and reports missing data the same way: naming the paths looked
// at and the command that fetches the data.
package datasets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/cifar"
	"github.com/simclr-go/simclr/data/internal/fsutil"
)

// DefaultDir is the data folder used when none is given; scripts/fetch_data.sh
// writes there by default and .gitignore keeps it out of the repository.
const DefaultDir = "data-cache"

// ErrNotFound is wrapped by Open's error when the data is not on disk.
var ErrNotFound = errors.New("data set not found")

// A Dataset is one data set Open can load: its name, the options it takes
// after a colon, a line of help and its reader. Each lives in a file of its
// own (cifar10.go, cifar100.go, svhn.go, folder.go) and is listed once in
// Builtin; another program adds its own with Registry.Register.
type Dataset struct {
	// Name is what --dataset names it by, before any ":OPTION".
	Name string
	// Variants are the accepted options: "" for the plain name (absent
	// when an option is required), each with the official image counts
	// Inspect checks against (zero: none) and the fetch_data.sh words that
	// fetch it.
	Variants []Variant
	// Arg, when set, names the free argument the set requires after the
	// colon (folder:PATH) instead of Variants.
	Arg string
	// Help is the set's entry in the help text ("cifar100 (cifar100:coarse
	// for the 20 superclasses)").
	Help string
	// Standard says Mean and Std are the set's published statistics, which
	// Inspect compares with the measured ones; false for statistics
	// measured on the images themselves (folders).
	Standard bool
	// Load reads the set with option (the part after the colon) from
	// dataDir at image side size (0: the set's own).
	Load func(option, dataDir string, size int) (*data.Splits, error)
	// LoadUnlabelled, when set, is Load for a command that needs no labels
	// (simclr embed): it also reads the set's unlabelled form (a flat
	// folder of pictures), whose images have label -1 and no classes.
	LoadUnlabelled func(option, dataDir string, size int) (*data.Splits, error)
}

// Variant is one accepted option of a Dataset.
type Variant struct {
	Option      string
	Train, Test int    // the official release's image counts (0: unknown)
	Fetch       string // scripts/fetch_data.sh's words for it
}

// Registry is the data sets Open knows. The zero value knows none; Builtin
// is the project's.
type Registry struct{ sets []Dataset }

// Builtin is the registry of the data sets this program reads: adding one
// is a file with its Dataset and a line here.
func Builtin() *Registry {
	return &Registry{sets: []Dataset{
		cifar10Set(),
		cifar100Set(),
		svhnSet(),
		folderSet(),
	}}
}

// Register adds d; its name must be new.
func (r *Registry) Register(d Dataset) error {
	if d.Name == "" || strings.ContainsAny(d.Name, ": \t") || d.Load == nil {
		return fmt.Errorf("register data set %q: a data set needs a name without colons or spaces and a Load", d.Name)
	}
	if _, ok := r.find(d.Name); ok {
		return fmt.Errorf("register data set %q: the name is taken", d.Name)
	}
	r.sets = append(r.sets, d)
	return nil
}

func (r *Registry) find(base string) (Dataset, bool) {
	for _, d := range r.sets {
		if d.Name == base {
			return d, true
		}
	}
	return Dataset{}, false
}

// Names lists every accepted name, for messages: "cifar10, cifar100,
// cifar100:coarse, ..., folder:PATH".
func (r *Registry) Names() string {
	var names []string
	for _, d := range r.sets {
		if d.Arg != "" {
			names = append(names, d.Name+":"+d.Arg)
		}
		for _, v := range d.Variants {
			names = append(names, d.fullName(v.Option))
		}
	}
	return strings.Join(names, ", ")
}

// Help is the --dataset flag's list: each set's help, joined.
func (r *Registry) Help() string {
	var parts []string
	for _, d := range r.sets {
		parts = append(parts, d.Help)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + ", or " + parts[len(parts)-1]
}

func (d Dataset) fullName(option string) string {
	if option == "" {
		return d.Name
	}
	return d.Name + ":" + option
}

// variant is name's entry: the data set and its option, or an error that
// lists what is accepted.
func (r *Registry) variant(name string) (Dataset, Variant, error) {
	base, option, _ := strings.Cut(name, ":")
	d, ok := r.find(base)
	if !ok {
		return d, Variant{}, fmt.Errorf("unknown dataset %q: use one of %s", name, r.Names())
	}
	if d.Arg != "" {
		if option == "" {
			return d, Variant{}, fmt.Errorf("dataset %q: say which %s: %s", name, d.Name, d.Help)
		}
		return d, Variant{Option: option}, nil
	}
	var options []string
	for _, v := range d.Variants {
		if v.Option == option {
			return d, v, nil
		}
		if v.Option != "" {
			options = append(options, ":"+v.Option)
		}
	}
	if len(options) == 0 {
		return d, Variant{}, fmt.Errorf("dataset %q: %s takes no option; use one of %s", name, d.Name, r.Names())
	}
	return d, Variant{}, fmt.Errorf("dataset %q: the only %s option is %s; use %s", name, d.Name, strings.Join(options, ", "), d.Help)
}

// CheckName reports whether name is one Open accepts, without touching the
// disk, so that a command can refuse a bad --dataset before loading
// anything.
func (r *Registry) CheckName(name string) error {
	_, _, err := r.variant(name)
	return err
}

// Open loads data set name from dataDir ("" means DefaultDir). size is the
// image side the caller wants: 0 accepts the data set's own size; the CIFAR
// and SVHN sets are 32x32 and only folder data sets are resized.
func (r *Registry) Open(name, dataDir string, size int) (*data.Splits, error) {
	if dataDir == "" {
		dataDir = DefaultDir
	}
	d, v, err := r.variant(name)
	if err != nil {
		return nil, err
	}
	return d.Load(v.Option, dataDir, size)
}

// OpenUnlabelled is Open for a command that needs no labels: a data set
// with an unlabelled form (folder:PATH of a flat folder of pictures) may
// load it, its one set of images both splits.
func (r *Registry) OpenUnlabelled(name, dataDir string, size int) (*data.Splits, error) {
	if dataDir == "" {
		dataDir = DefaultDir
	}
	d, v, err := r.variant(name)
	if err != nil {
		return nil, err
	}
	if d.LoadUnlabelled != nil {
		return d.LoadUnlabelled(v.Option, dataDir, size)
	}
	return d.Load(v.Option, dataDir, size)
}

// OpenUnlabelled is Builtin().OpenUnlabelled.
func OpenUnlabelled(name, dataDir string, size int) (*data.Splits, error) {
	return Builtin().OpenUnlabelled(name, dataDir, size)
}

// Names lists the accepted names of the built-in data sets for messages.
func Names() string { return Builtin().Names() }

// Help is the built-in data sets' list for a --dataset flag.
func Help() string { return Builtin().Help() }

// CheckName is Builtin().CheckName.
func CheckName(name string) error { return Builtin().CheckName(name) }

// Open is Builtin().Open:
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
	return Builtin().Open(name, dataDir, size)
}

func need32(name string, size int) error {
	if size != 0 && size != cifar.Side {
		return fmt.Errorf("dataset %s has 32x32 images; image size %d is not supported for it (use 32)", name, size)
	}
	return nil
}

// EnvMirror names the environment variable that names a local folder
// holding cifar10-jpeg.tar.gz (as scripts/fetch_data.sh --from takes it, and
// scripts/quickstart.sh reads the same variable): the missing-data error
// then fetches from it rather than the internet.
const EnvMirror = "SIMCLR_DATA_MIRROR"

// missing is the error for data not on disk: one short line with the
// command that fetches the data into dataDir, from the local mirror when
// $SIMCLR_DATA_MIRROR names one that holds it (the paths looked at would
// only lengthen it: the command puts the data where Open looks first).
func missing(fetch, dataDir string) error {
	command := fmt.Sprintf("scripts/fetch_data.sh %s --dir %s", fetch, dataDir)
	if mirror := os.Getenv(EnvMirror); fetch == "cifar10" && mirror != "" && fsutil.IsFile(filepath.Join(mirror, "cifar10-jpeg.tar.gz")) {
		command += " --from " + mirror
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
