package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Data is a regression data set: row i has features X[i] and label Y[i].
type Data struct {
	Name     string
	X        [][]float64
	Y        []float64
	Features []string // column names, when the file has them
}

// Dim is the number of features.
func (d *Data) Dim() int { return len(d.X[0]) }

// The most a data file may hold, so that a bad or hostile file is an error
// rather than an allocation the machine cannot make: the largest LIBSVM
// index, and features times rows.
const (
	maxLIBSVMIndex = 1 << 20
	maxDataValues  = 1 << 24
)

// readLIBSVM reads a LIBSVM regression file: one row a line, "label
// idx:value ...", 1-based increasing indices; an index that is missing is 0.
// Rows have dim features (dim 0: the largest index seen).
func readLIBSVM(path string, dim int) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open data file: %w", err)
	}
	defer f.Close()
	d := &Data{Name: filepath.Base(path)}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	type entry struct {
		idx int
		val float64
	}
	var rows [][]entry
	maxIdx, line := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		y, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
			return nil, fmt.Errorf("%s:%d: label %q is not a finite number (LIBSVM rows are \"label idx:value ...\")", path, line, fields[0])
		}
		var row []entry
		last := 0
		for _, fv := range fields[1:] {
			is, vs, ok := strings.Cut(fv, ":")
			idx, err1 := strconv.Atoi(is)
			val, err2 := strconv.ParseFloat(vs, 64)
			switch {
			case !ok || err1 != nil || err2 != nil || math.IsNaN(val) || math.IsInf(val, 0):
				return nil, fmt.Errorf("%s:%d: entry %q is not idx:value with a positive integer index and a finite value", path, line, fv)
			case idx <= last:
				return nil, fmt.Errorf("%s:%d: index %d after index %d: LIBSVM indices start at 1 and increase", path, line, idx, last)
			case dim > 0 && idx > dim:
				return nil, fmt.Errorf("%s:%d: index %d is above the data set's %d features", path, line, idx, dim)
			case idx > maxLIBSVMIndex:
				return nil, fmt.Errorf("%s:%d: index %d: at most %d features are read", path, line, idx, maxLIBSVMIndex)
			}
			last = idx
			row = append(row, entry{idx, val})
		}
		maxIdx = max(maxIdx, last)
		rows = append(rows, row)
		d.Y = append(d.Y, y)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	if dim == 0 {
		dim = maxIdx
	}
	if dim == 0 {
		return nil, fmt.Errorf("%s: no features: every row holds a label only", path)
	}
	if len(rows)*dim > maxDataValues {
		return nil, fmt.Errorf("%s: %d rows of %d features: more than the %d values this program holds", path, len(rows), dim, maxDataValues)
	}
	for _, row := range rows {
		x := make([]float64, dim)
		for _, e := range row {
			x[e.idx-1] = e.val
		}
		d.X = append(d.X, x)
	}
	return d, nil
}

// readCSV reads a CSV file with a header. The target column becomes Y; the
// columns named in drop are left out; every other column is a feature and
// must hold numbers. Header names are trimmed (one UCI file has "AFDP ").
func readCSV(path, target string, drop []string) (*Data, error) {
	return readCSVBy(path, func(header []string) (int, error) {
		if i := slices.Index(header, target); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("no column %q in the header %q", target, strings.Join(header, ","))
	}, drop)
}

// readCSVBy is readCSV with the target column chosen by target from the
// trimmed header names.
func readCSVBy(path string, target func(header []string) (int, error), drop []string) (*Data, error) {
	f, r, header, err := openCSV(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ti, err := target(header)
	if err != nil {
		return nil, fmt.Errorf("%s:1: %w", path, err)
	}

	var cols []int
	d := &Data{Name: filepath.Base(path)}
	for i, h := range header {
		switch {
		case i == ti:
		case slices.Contains(drop, h):
		default:
			cols = append(cols, i)
			d.Features = append(d.Features, h)
		}
	}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		num := func(i int) (float64, error) {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("%s:%d: column %q holds %q, not a finite number", path, line, strings.TrimSpace(header[i]), rec[i])
			}
			return v, nil
		}
		y, err := num(ti)
		if err != nil {
			return nil, err
		}
		x := make([]float64, len(cols))
		for k, c := range cols {
			if x[k], err = num(c); err != nil {
				return nil, err
			}
		}
		if (len(d.X)+1)*max(len(cols), 1) > maxDataValues {
			return nil, fmt.Errorf("%s:%d: more than the %d values this program holds", path, line, maxDataValues)
		}
		d.X = append(d.X, x)
		d.Y = append(d.Y, y)
	}
	if len(d.X) == 0 {
		return nil, fmt.Errorf("%s: no rows after the header", path)
	}
	return d, nil
}

// openCSV opens a CSV file and reads its header, the names trimmed of
// spaces and a byte-order mark; the caller closes f.
func openCSV(path string) (f *os.File, r *csv.Reader, header []string, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open data file: %w", err)
	}
	r = csv.NewReader(f)
	r.ReuseRecord = true
	header, err = r.Read()
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("%s:1: read header: %w", path, err)
	}
	header = slices.Clone(header) // the reader reuses its record
	for i, h := range header {
		header[i] = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
	}
	return f, r, header, nil
}

// concat appends the rows of more to d (same columns).
func (d *Data) concat(more *Data) error {
	if !slices.Equal(d.Features, more.Features) {
		return fmt.Errorf("%s and %s have different columns", d.Name, more.Name)
	}
	d.X = append(d.X, more.X...)
	d.Y = append(d.Y, more.Y...)
	d.Name += "+" + more.Name
	return nil
}

// scaleFeatures maps every feature to [-1, 1] by its minimum and maximum
// over the rows (LIBSVM's svm-scale default); a constant feature becomes 0.
func (d *Data) scaleFeatures() {
	for j := range d.Dim() {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range d.X {
			lo, hi = math.Min(lo, x[j]), math.Max(hi, x[j])
		}
		halve := math.IsInf(2*(hi-lo), 1) // twice the span overflows: scale by halves
		for _, x := range d.X {
			switch {
			case hi <= lo:
				x[j] = 0
			case halve:
				x[j] = 2*((x[j]/2-lo/2)/(hi/2-lo/2)) - 1
			default:
				x[j] = 2*(x[j]-lo)/(hi-lo) - 1
			}
		}
	}
}

// scaleLabels maps the labels to [-1, 1] by their minimum and maximum
// (all to 0 where they are equal) and returns that minimum and maximum.
func (d *Data) scaleLabels() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, y := range d.Y {
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	for i, y := range d.Y {
		switch {
		case hi <= lo:
			d.Y[i] = 0
		case math.IsInf(hi-lo, 1):
			d.Y[i] = 2*((y/2-lo/2)/(hi/2-lo/2)) - 1
		default:
			d.Y[i] = 2*(y-lo)/(hi-lo) - 1
		}
	}
	return lo, hi
}

// standardiseLabels maps the labels to mean 0 and standard deviation 1.
func (d *Data) standardiseLabels() {
	n := float64(len(d.Y))
	mean, ss := 0.0, 0.0
	for _, y := range d.Y {
		mean += y / n
	}
	for _, y := range d.Y {
		ss += (y - mean) * (y - mean)
	}
	sd := math.Sqrt(ss / n)
	for i := range d.Y {
		d.Y[i] = (d.Y[i] - mean) / sd
	}
}

// dataset is one of the data sets of the paper's experiment.
type dataset struct {
	Name   string
	Convex bool // linear predictor (LIBSVM sets) or MLP (UCI sets)
	Load   func(dir string) (*Data, error)
	About  string
	// user says the data set is a file of the user's (--dataset
	// libsvm:PATH or csv:PATH:TARGET).
	user bool
}

var datasets = []dataset{
	{Name: "housing", Convex: true, About: "LIBSVM housing_scale: 506 rows, 13 features in [-1, 1], label 5..50",
		Load: func(dir string) (*Data, error) { return readLIBSVM(filepath.Join(dir, "housing_scale.txt"), 13) }},
	{Name: "mg", Convex: true, About: "LIBSVM mg_scale: 1,385 rows, 6 features in [-1, 1], label 0.42..1.32",
		Load: func(dir string) (*Data, error) { return readLIBSVM(filepath.Join(dir, "mg_scale.txt"), 6) }},
	{Name: "mpg", Convex: true, About: "LIBSVM mpg_scale: 392 rows, 7 features in [-1, 1] (a missing index is 0), label 9..46.6",
		Load: func(dir string) (*Data, error) { return readLIBSVM(filepath.Join(dir, "mpg_scale.txt"), 7) }},
	{Name: "bike", Convex: false,
		About: "UCI Bike Sharing, hourly: 17,379 rows, 12 features scaled to [-1, 1], target cnt standardised",
		Load: func(dir string) (*Data, error) {
			d, err := readCSV(filepath.Join(dir, "bike_hour.csv"), "cnt", []string{"instant", "dteday", "casual", "registered"})
			if err != nil {
				return nil, err
			}
			d.scaleFeatures()
			d.standardiseLabels()
			return d, nil
		}},
	{Name: "gas", Convex: false,
		About: "UCI Gas Turbine CO and NOx, years 2011-2013 (UCI's training years): 22,191 rows, 9 features scaled to [-1, 1], target NOX standardised",
		Load: func(dir string) (*Data, error) {
			var all *Data
			for _, year := range []string{"2011", "2012", "2013"} {
				d, err := readCSV(filepath.Join(dir, "gas_turbine_gt_"+year+".csv"), "NOX", []string{"CO"})
				if err != nil {
					return nil, err
				}
				if all == nil {
					all = d
				} else if err := all.concat(d); err != nil {
					return nil, err
				}
			}
			all.scaleFeatures()
			all.standardiseLabels()
			return all, nil
		}},
}

// findDataset is the named data set, or a user's file (userDataset:
// libsvm:PATH, csv:PATH:TARGET).
func findDataset(name string) (dataset, error) {
	if ds, ok, err := userDataset(name); ok {
		return ds, err
	}
	var names []string
	for _, d := range datasets {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return dataset{}, fmt.Errorf("unknown --dataset %q: use one of %s, or a file of your own: libsvm:PATH or csv:PATH:TARGET", name, strings.Join(names, ", "))
}
