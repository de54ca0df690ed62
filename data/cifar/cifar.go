// Package cifar reads CIFAR-10 and CIFAR-100 in their official binary
// formats (the contents of cifar-10-binary.tar.gz and cifar-100-binary.tar.gz)
// into data.Set. Records are stored as the files hold them: label byte(s)
// then 3,072 pixel bytes (red plane, green plane, blue plane, rows top to
// bottom), which is already the N x 3 x 32 x 32 layout of data.Set, so
// pixels are read straight into their final place.
package cifar

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/internal/fsutil"
)

// Side is the image height and width of both CIFAR data sets.
const Side = 32

// ImageBytes is the pixel byte count of one record (3 planes of 32x32).
const ImageBytes = 3 * Side * Side

// Kind says which binary record format a file holds and, for CIFAR-100,
// which of its two labels to keep.
type Kind int

const (
	// CIFAR10 records: 1 label byte (0-9) then 3,072 pixel bytes.
	CIFAR10 Kind = iota
	// CIFAR100Fine records: coarse label byte (0-19), fine label byte
	// (0-99), 3,072 pixel bytes; the fine label is kept.
	CIFAR100Fine
	// CIFAR100Coarse is the CIFAR-100 record format keeping the coarse label.
	CIFAR100Coarse
)

// String names the format for messages.
func (k Kind) String() string {
	switch k {
	case CIFAR10:
		return "CIFAR-10"
	case CIFAR100Fine, CIFAR100Coarse:
		return "CIFAR-100"
	}
	return fmt.Sprintf("cifar.Kind(%d)", int(k))
}

// RecordLen is the byte length of one record of this kind.
func (k Kind) RecordLen() int {
	if k == CIFAR10 {
		return 1 + ImageBytes
	}
	return 2 + ImageBytes
}

// MaxRecords is the largest record count one file of this kind may hold:
// a CIFAR-10 batch file has 10,000 records, CIFAR-100's train.bin 50,000.
func (k Kind) MaxRecords() int {
	if k == CIFAR10 {
		return 10000
	}
	return 50000
}

// NumClasses is the label count of the kept label.
func (k Kind) NumClasses() int {
	switch k {
	case CIFAR10:
		return 10
	case CIFAR100Coarse:
		return 20
	}
	return 100
}

func (k Kind) check() {
	if k != CIFAR10 && k != CIFAR100Fine && k != CIFAR100Coarse {
		panic(fmt.Sprintf("cifar: unknown Kind %d", int(k)))
	}
}

// Standard per-channel statistics (pixel values in [0,1]) of the training
// sets, as used throughout the SimCLR literature.
var (
	Mean10  = [3]float32{0.4914, 0.4822, 0.4465}
	Std10   = [3]float32{0.2470, 0.2435, 0.2616}
	Mean100 = [3]float32{0.5071, 0.4865, 0.4409}
	Std100  = [3]float32{0.2673, 0.2564, 0.2762}
)

// Official class names in label order, used when the archive's name files
// are absent.
var (
	classes10 = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

	fine100 = strings.Fields(`apple aquarium_fish baby bear beaver bed bee beetle bicycle bottle bowl boy bridge
		bus butterfly camel can castle caterpillar cattle chair chimpanzee clock cloud cockroach couch crab crocodile
		cup dinosaur dolphin elephant flatfish forest fox girl hamster house kangaroo keyboard lamp lawn_mower leopard
		lion lizard lobster man maple_tree motorcycle mountain mouse mushroom oak_tree orange orchid otter palm_tree
		pear pickup_truck pine_tree plain plate poppy porcupine possum rabbit raccoon ray road rocket rose sea seal
		shark shrew skunk skyscraper snail snake spider squirrel streetcar sunflower sweet_pepper table tank telephone
		television tiger tractor train trout tulip turtle wardrobe whale willow_tree wolf woman worm`)

	coarse100 = strings.Fields(`aquatic_mammals fish flowers food_containers fruit_and_vegetables
		household_electrical_devices household_furniture insects large_carnivores large_man-made_outdoor_things
		large_natural_outdoor_scenes large_omnivores_and_herbivores medium_mammals non-insect_invertebrates people
		reptiles small_mammals trees vehicles_1 vehicles_2`)
)

// Classes10 returns the official CIFAR-10 class names in label order.
func Classes10() []string { return append([]string(nil), classes10...) }

// Classes100 returns the official CIFAR-100 fine (or coarse) class names in
// label order.
func Classes100(coarse bool) []string {
	if coarse {
		return append([]string(nil), coarse100...)
	}
	return append([]string(nil), fine100...)
}

// ReadRecords reads the size bytes of r as records of the given kind and
// returns their pixels (N x 3,072 bytes) and kept labels. size must be a
// positive multiple of the record length and hold at most k.MaxRecords()
// records; every label byte must be in range. Errors do not name a file:
// callers reading files add it (ReadFile does).
func ReadRecords(r io.Reader, size int64, k Kind) (pix []uint8, labels []int32, err error) {
	n, err := countRecords(size, k)
	if err != nil {
		return nil, nil, err
	}
	pix = make([]uint8, n*ImageBytes)
	labels = make([]int32, n)
	if err := readInto(r, k, pix, labels); err != nil {
		return nil, nil, err
	}
	return pix, labels, nil
}

// ReadFile reads one binary batch file; errors name the file.
func ReadFile(path string, k Kind) (pix []uint8, labels []int32, err error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	pix, labels, err = ReadRecords(f, size, k)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return pix, labels, nil
}

// countRecords validates a file size for kind k and returns its record count.
func countRecords(size int64, k Kind) (int, error) {
	k.check()
	rec := int64(k.RecordLen())
	switch {
	case size <= 0:
		return 0, fmt.Errorf("empty file: not a %v binary file (records of %d bytes); download it again", k, rec)
	case size%rec != 0:
		return 0, fmt.Errorf("%d bytes is not a multiple of the %d-byte %v record: truncated or not a %v binary file; download it again",
			size, rec, k, k)
	case size/rec > int64(k.MaxRecords()):
		return 0, fmt.Errorf("%d records (%d bytes) but a %v file holds at most %d: oversized, not an official %v binary file",
			size/rec, size, k, k.MaxRecords(), k)
	}
	return int(size / rec), nil
}

// readInto fills pix (len(labels) records' pixels) and labels from r.
func readInto(r io.Reader, k Kind, pix []uint8, labels []int32) error {
	br := bufio.NewReaderSize(r, 1<<16)
	var head [2]byte
	headLen := k.RecordLen() - ImageBytes
	for i := range labels {
		if _, err := io.ReadFull(br, head[:headLen]); err != nil {
			return shortRead(i, err)
		}
		label := int(head[0])
		switch k {
		case CIFAR10:
			if label >= 10 {
				return fmt.Errorf("record %d (0-based) has label %d, CIFAR-10 labels are 0-9: corrupt or not a CIFAR-10 batch file", i, label)
			}
		default:
			coarse, fine := int(head[0]), int(head[1])
			if coarse >= 20 || fine >= 100 {
				return fmt.Errorf("record %d (0-based) has coarse label %d and fine label %d, CIFAR-100 labels are 0-19 and 0-99: corrupt or not a CIFAR-100 binary file",
					i, coarse, fine)
			}
			label = fine
			if k == CIFAR100Coarse {
				label = coarse
			}
		}
		labels[i] = int32(label)
		if _, err := io.ReadFull(br, pix[i*ImageBytes:(i+1)*ImageBytes]); err != nil {
			return shortRead(i, err)
		}
	}
	return nil
}

func shortRead(record int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("file ends inside record %d (0-based), before its stated size: truncated; download it again", record)
	}
	return fmt.Errorf("record %d (0-based): %w", record, err)
}

// openSized opens a regular file and returns its size.
func openSized(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file", path)
	}
	return f, st.Size(), nil
}

// readSplit reads files (in order) into one data.Set; maxPerFile bounds each
// file's records below k.MaxRecords() (CIFAR-100 test.bin holds 10,000).
func readSplit(name string, classes []string, k Kind, paths []string, maxPerFile int) (*data.Set, error) {
	type part struct {
		f *os.File
		n int
	}
	parts := make([]part, 0, len(paths))
	defer func() {
		for _, p := range parts {
			p.f.Close()
		}
	}()
	total := 0
	for _, p := range paths {
		f, size, err := openSized(p)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{f, 0})
		n, err := countRecords(size, k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if n > maxPerFile {
			return nil, fmt.Errorf("%s: %d records but this file holds at most %d: oversized, not an official %v file", p, n, maxPerFile, k)
		}
		parts[len(parts)-1].n = n
		total += n
	}
	set := &data.Set{
		Name:    name,
		Classes: classes,
		H:       Side,
		W:       Side,
		Pix:     make([]uint8, total*ImageBytes),
		Labels:  make([]int32, total),
	}
	at := 0
	for i, p := range parts {
		if err := readInto(p.f, k, set.Pix[at*ImageBytes:(at+p.n)*ImageBytes], set.Labels[at:at+p.n]); err != nil {
			return nil, fmt.Errorf("%s: %w", paths[i], err)
		}
		at += p.n
	}
	return set, nil
}

// readNames reads a label-name file (one name a line, blank lines ignored)
// and checks it has want names; a missing file yields fallback.
func readNames(path string, want int, fallback []string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return append([]string(nil), fallback...), nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		if s := strings.TrimSpace(line); s != "" {
			names = append(names, s)
		}
	}
	if len(names) != want {
		return nil, fmt.Errorf("%s: %d class names, want %d: corrupt; download the archive again", path, len(names), want)
	}
	return names, nil
}

// Dir10 returns the folder holding the CIFAR-10 batch files: dir itself if
// it holds data_batch_1.bin, else dir/cifar-10-batches-bin.
func Dir10(dir string) string {
	if fsutil.IsFile(filepath.Join(dir, "data_batch_1.bin")) {
		return dir
	}
	return filepath.Join(dir, "cifar-10-batches-bin")
}

// Dir100 returns the folder holding CIFAR-100's train.bin: dir itself if it
// holds train.bin, else dir/cifar-100-binary.
func Dir100(dir string) string {
	if fsutil.IsFile(filepath.Join(dir, "train.bin")) {
		return dir
	}
	return filepath.Join(dir, "cifar-100-binary")
}

// Load10 reads CIFAR-10 from dir, which holds cifar-10-batches-bin/ or is
// it: training set data_batch_1..5.bin, test set test_batch.bin, class names
// from batches.meta.txt (official names if absent).
func Load10(dir string) (*data.Splits, error) {
	bin := Dir10(dir)
	names, err := readNames(filepath.Join(bin, "batches.meta.txt"), 10, classes10)
	if err != nil {
		return nil, err
	}
	var trainPaths []string
	for b := 1; b <= 5; b++ {
		trainPaths = append(trainPaths, filepath.Join(bin, fmt.Sprintf("data_batch_%d.bin", b)))
	}
	train, err := readSplit("cifar10 train", names, CIFAR10, trainPaths, CIFAR10.MaxRecords())
	if err != nil {
		return nil, fmt.Errorf("cifar10: %w", err)
	}
	test, err := readSplit("cifar10 test", names, CIFAR10, []string{filepath.Join(bin, "test_batch.bin")}, CIFAR10.MaxRecords())
	if err != nil {
		return nil, fmt.Errorf("cifar10: %w", err)
	}
	return &data.Splits{Train: train, Test: test, Mean: Mean10, Std: Std10}, nil
}

// Load100 reads CIFAR-100 from dir, which holds cifar-100-binary/ or is it:
// train.bin and test.bin, with fine labels (or coarse ones if coarse) and
// their names from fine_label_names.txt / coarse_label_names.txt (official
// names if absent).
func Load100(dir string, coarse bool) (*data.Splits, error) {
	bin := Dir100(dir)
	k, nameFile, want, fallback, tag := CIFAR100Fine, "fine_label_names.txt", 100, fine100, "cifar100"
	if coarse {
		k, nameFile, want, fallback, tag = CIFAR100Coarse, "coarse_label_names.txt", 20, coarse100, "cifar100:coarse"
	}
	names, err := readNames(filepath.Join(bin, nameFile), want, fallback)
	if err != nil {
		return nil, err
	}
	train, err := readSplit(tag+" train", names, k, []string{filepath.Join(bin, "train.bin")}, 50000)
	if err != nil {
		return nil, fmt.Errorf("cifar100: %w", err)
	}
	test, err := readSplit(tag+" test", names, k, []string{filepath.Join(bin, "test.bin")}, 10000)
	if err != nil {
		return nil, fmt.Errorf("cifar100: %w", err)
	}
	return &data.Splits{Train: train, Test: test, Mean: Mean100, Std: Std100}, nil
}
