// Package folder reads an image-folder data set: ROOT/train/CLASS/*.png|jpg|jpeg
// and ROOT/test/CLASS/*.png|jpg|jpeg, classes sorted by name, images decoded
// in parallel and resized to a common square size, into data.Set.
package folder

import (
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // register the JPEG decoder for image.Decode
	_ "image/png"  // register the PNG decoder for image.Decode
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/disintegration/imaging"

	"github.com/simclr-go/simclr/data"
)

// splitNames are the split folders under ROOT, training first.
var splitNames = [2]string{"train", "test"}

// IsImage reports whether a file name has an extension this package reads.
func IsImage(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png", ".jpg", ".jpeg":
		return true
	}
	return false
}

// Layout is the list of classes and image files found under ROOT, before
// decoding.
type Layout struct {
	Classes []string    // sorted class folder names (train's)
	Files   [2][]string // train and test image paths, class by class, names sorted
	Labels  [2][]int32  // label of each file
}

// Scan lists ROOT/train and ROOT/test without decoding anything. Both splits
// must exist and hold the same class folders, each with at least one image.
func Scan(root string) (*Layout, error) {
	var l Layout
	for s, split := range splitNames {
		dir := filepath.Join(root, split)
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s is missing: an image-folder data set needs %s/train/CLASS/*.jpg and %s/test/CLASS/*.jpg",
					dir, root, root)
			}
			return nil, err
		}
		var classes []string
		for _, e := range entries {
			if isDir(dir, e) && !strings.HasPrefix(e.Name(), ".") {
				classes = append(classes, e.Name())
			}
		}
		sort.Strings(classes)
		if len(classes) == 0 {
			return nil, fmt.Errorf("%s holds no class folders: an image-folder data set needs %s/CLASS/*.jpg", dir, dir)
		}
		if s == 0 {
			l.Classes = classes
		} else if !slices.Equal(classes, l.Classes) {
			return nil, fmt.Errorf("%s has classes %v but %s has %v: both splits need the same class folders",
				dir, classes, filepath.Join(root, splitNames[0]), l.Classes)
		}
		for c, class := range classes {
			cdir := filepath.Join(dir, class)
			files, err := os.ReadDir(cdir)
			if err != nil {
				return nil, err
			}
			found := 0
			for _, f := range files { // os.ReadDir returns names sorted
				if isFile(cdir, f) && IsImage(f.Name()) && !strings.HasPrefix(f.Name(), ".") {
					l.Files[s] = append(l.Files[s], filepath.Join(cdir, f.Name()))
					l.Labels[s] = append(l.Labels[s], int32(c))
					found++
				}
			}
			if found == 0 {
				return nil, fmt.Errorf("%s holds no .png, .jpg or .jpeg images: remove the folder or add images", cdir)
			}
		}
	}
	return &l, nil
}

// isDir follows symbolic links so that linked class folders work.
func isDir(parent string, e os.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&os.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(parent, e.Name()))
	return err == nil && st.IsDir()
}

// isFile follows symbolic links so that linked image files work.
func isFile(parent string, e os.DirEntry) bool {
	if e.Type().IsRegular() {
		return true
	}
	if e.Type()&os.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(parent, e.Name()))
	return err == nil && st.Mode().IsRegular()
}

// Load reads the data set at root. Every image is scaled and centre-cropped
// to size x size (imaging.Fill, Lanczos) when its size differs; size 0 keeps
// the images' own size, which must then be square and the same for all.
// Mean and Std are computed from the training set.
func Load(root string, size int) (*data.Splits, error) {
	return LoadWorkers(root, size, runtime.GOMAXPROCS(0))
}

// LoadWorkers is Load with an explicit number of decoding goroutines.
func LoadWorkers(root string, size, workers int) (*data.Splits, error) {
	if size < 0 || size > 4096 {
		return nil, fmt.Errorf("image size %d out of range: use 0 (keep the images' size) or 1..4096", size)
	}
	l, err := Scan(root)
	if err != nil {
		return nil, err
	}
	strict := size == 0
	if strict {
		if size, err = nativeSize(l.Files[0][0]); err != nil {
			return nil, err
		}
	}
	name := filepath.Base(filepath.Clean(root))
	var sets [2]*data.Set
	for s, split := range splitNames {
		set, err := decodeAll(l.Files[s], l.Labels[s], size, strict, workers)
		if err != nil {
			return nil, err
		}
		set.Name = name + " " + split
		set.Classes = append([]string(nil), l.Classes...)
		sets[s] = set
	}
	mean, std := Stats(sets[0])
	return &data.Splits{Train: sets[0], Test: sets[1], Mean: mean, Std: std}, nil
}

// nativeSize is the side of the first image, which must be square.
func nativeSize(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return 0, fmt.Errorf("decode %s: %w", path, err)
	}
	if cfg.Width != cfg.Height {
		return 0, fmt.Errorf("%s is %dx%d, not square: choose an image size (e.g. --size 32) to scale and crop every image to",
			path, cfg.Width, cfg.Height)
	}
	return cfg.Width, nil
}

// decodeAll decodes files into one set of size x size images, in parallel.
// With size taken from the first image (Load with size 0), an image of
// another size is an error rather than silently resized.
func decodeAll(files []string, labels []int32, size int, strict bool, workers int) (*data.Set, error) {
	if workers < 1 {
		workers = 1
	}
	plane := size * size
	set := &data.Set{H: size, W: size, Pix: make([]uint8, len(files)*3*plane), Labels: append([]int32(nil), labels...),
		Files: append([]string(nil), files...)}
	errs := make([]error, len(files))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed bool
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := failed
				mu.Unlock()
				if i >= len(files) || stop {
					return
				}
				if err := decodeInto(files[i], size, strict, set.Pix[i*3*plane:(i+1)*3*plane]); err != nil {
					errs[i] = err
					mu.Lock()
					failed = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs { // the first failing file in order, whatever the scheduling
		if err != nil {
			return nil, err
		}
	}
	return set, nil
}

// decodeInto decodes one image file into dst (3 x size x size, CHW); with
// strict, an image of another size is an error instead of being resized.
func decodeInto(path string, size int, strict bool, dst []uint8) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return fmt.Errorf("decode %s: %w (not a readable PNG or JPEG; remove or replace it)", path, err)
	}
	b := img.Bounds()
	var rgba *image.NRGBA
	if b.Dx() == size && b.Dy() == size {
		rgba = imaging.Clone(img)
	} else if strict {
		return fmt.Errorf("%s is %dx%d but the first image is %dx%d: choose an image size (e.g. --size %d) to scale every image to",
			path, b.Dx(), b.Dy(), size, size, size)
	} else {
		rgba = imaging.Fill(img, size, size, imaging.Center, imaging.Lanczos)
	}
	plane := size * size
	for y := 0; y < size; y++ {
		row := rgba.Pix[y*rgba.Stride : y*rgba.Stride+4*size]
		for x := 0; x < size; x++ {
			dst[y*size+x] = row[4*x]
			dst[plane+y*size+x] = row[4*x+1]
			dst[2*plane+y*size+x] = row[4*x+2]
		}
	}
	return nil
}

// Stats returns the per-channel mean and (population) standard deviation
// of a set's pixels in [0,1] units.
func Stats(set *data.Set) (mean, std [3]float32) {
	plane := set.H * set.W
	var sum, sumSq [3]float64
	for i := 0; i < set.Len(); i++ {
		img := set.Image(i)
		for c := 0; c < 3; c++ {
			var s, ss uint64 // exact integer sums per plane
			for _, v := range img[c*plane : (c+1)*plane] {
				s += uint64(v)
				ss += uint64(v) * uint64(v)
			}
			sum[c] += float64(s)
			sumSq[c] += float64(ss)
		}
	}
	count := float64(set.Len()) * float64(plane)
	if count == 0 {
		return mean, std
	}
	for c := 0; c < 3; c++ {
		m := sum[c] / count
		v := sumSq[c]/count - m*m
		if v < 0 {
			v = 0
		}
		mean[c] = float32(m / 255)
		std[c] = float32(math.Sqrt(v) / 255)
	}
	return mean, std
}

// Unlabelled is the label of an image of a flat folder, which has no class.
const Unlabelled = -1

// ScanFlat lists the images directly in root (names sorted), the layout of a
// flat folder of unlabelled pictures.
func ScanFlat(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries { // os.ReadDir returns names sorted
		if isFile(root, e) && IsImage(e.Name()) && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(root, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no .png, .jpg or .jpeg images (nor train/CLASS and test/CLASS folders)", root)
	}
	return files, nil
}

// LoadFlat reads a flat folder of unlabelled images, root/*.png|jpg|jpeg,
// as Load reads a split: scaled and centre-cropped to size x size (0: the
// images' own square size). The one set is both the training and the test
// split, with no classes and every label Unlabelled; Mean and Std are
// measured on it.
func LoadFlat(root string, size int) (*data.Splits, error) {
	if size < 0 || size > 4096 {
		return nil, fmt.Errorf("image size %d out of range: use 0 (keep the images' size) or 1..4096", size)
	}
	files, err := ScanFlat(root)
	if err != nil {
		return nil, err
	}
	strict := size == 0
	if strict {
		if size, err = nativeSize(files[0]); err != nil {
			return nil, err
		}
	}
	labels := make([]int32, len(files))
	for i := range labels {
		labels[i] = Unlabelled
	}
	set, err := decodeAll(files, labels, size, strict, runtime.GOMAXPROCS(0))
	if err != nil {
		return nil, err
	}
	set.Name = filepath.Base(filepath.Clean(root)) + " images"
	mean, std := Stats(set)
	return &data.Splits{Train: set, Test: set, Mean: mean, Std: std}, nil
}
