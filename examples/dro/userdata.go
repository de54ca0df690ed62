package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A user's own data set, given as --dataset libsvm:PATH or
// --dataset csv:PATH:TARGET. It is solved with the linear predictor, whose
// objective has a closed form (exact.go), so F* is exact, as for the named
// LIBSVM sets. Its features are scaled as the named sets' are: each to
// [-1, 1] by its minimum and maximum over the rows (LIBSVM's svm-scale
// default, which made housing_scale, mg_scale and mpg_scale; the loader
// applies the same map to the UCI sets), a constant feature to 0. A file
// already scaled so comes through unchanged. The labels are used as given,
// as the named linear sets' are (housing's run from 5 to 50), unless
// --scale-targets asks otherwise: scaling them changes the objective.

// The most features a user's data set may have: the closed form's Newton
// solver builds a (dim+1)^2 Hessian by dim+1 gradient differences, each
// O(dim^2).
const maxUserFeatures = 1000

// scalingNote says how a user's data set is transformed; it ends the data
// set's description, which the command prints and the JSON records.
const scalingNote = "features scaled to [-1, 1] by each one's minimum and maximum over the rows (as LIBSVM's svm-scale scaled the named sets; a constant feature becomes 0); linear predictor, F* from the closed form"

// targetsNote says how the targets enter the objective; the description of
// a user's data set ends with it.
const targetsNote = "the targets enter the objective as given, unscaled, through the residual w.z + w0 - y inside exp(residual^2 / Lambda) (--scale-targets maps them to [-1, 1] instead: another objective, with its own F*)"

// scaledTargetsNote replaces targetsNote under --scale-targets.
const scaledTargetsNote = "--scale-targets: the targets mapped from [%g, %g] to [-1, 1] by their minimum and maximum (svm-scale's -y -1 1) before they enter the objective through the residual w.z + w0 - y inside exp(residual^2 / Lambda); this is another Sinkhorn DRO objective than the one of the targets as given, and F(x0), F* and the gaps are its own, F* from its closed form"

// userDataset parses a --dataset value naming a user's file. ok is false
// when spec names none (a named set, or a mistake findDataset reports).
// A CSV file's header is read here, so that a missing target column is an
// error of the flag, before any work.
func userDataset(spec string) (ds dataset, ok bool, err error) {
	kind, rest, found := strings.Cut(spec, ":")
	if !found || (kind != "libsvm" && kind != "csv") {
		return dataset{}, false, nil
	}
	switch kind {
	case "libsvm":
		if rest == "" {
			return dataset{}, true, fmt.Errorf("--dataset %q: name the file, libsvm:PATH", spec)
		}
		path := rest
		if _, err := os.Stat(path); err != nil {
			return dataset{}, true, fmt.Errorf("--dataset %q: %w", spec, err)
		}
		return dataset{
			Name:   userName(path),
			Convex: true,
			user:   true,
			About:  fmt.Sprintf("LIBSVM file %s (rows \"label idx:value ...\", a missing index is 0); %s", path, scalingNote),
			Load:   func(string) (*Data, error) { return loadUserLIBSVM(path) },
		}, true, nil
	}
	i := strings.LastIndex(rest, ":")
	if i <= 0 || i == len(rest)-1 {
		return dataset{}, true, fmt.Errorf("--dataset %q: name the file and the target column, csv:PATH:TARGET (TARGET a column name, or a 0-based column index)", spec)
	}
	path, target := rest[:i], rest[i+1:]
	f, _, header, err := openCSV(path)
	if err != nil {
		return dataset{}, true, fmt.Errorf("--dataset %q: %w", spec, err)
	}
	f.Close()
	col, how, err := csvTarget(header, target)
	if err != nil {
		return dataset{}, true, fmt.Errorf("--dataset %q: %s:1: %w", spec, path, err)
	}
	return dataset{
		Name:   userName(path),
		Convex: true,
		user:   true,
		About:  fmt.Sprintf("CSV file %s, target %s, every other column a feature; %s", path, how, scalingNote),
		Load: func(string) (*Data, error) {
			d, err := readCSVBy(path, func(h []string) (int, error) {
				if col >= len(h) {
					return 0, fmt.Errorf("the header has %d columns, no column %d", len(h), col)
				}
				return col, nil
			}, nil)
			if err != nil {
				return nil, err
			}
			return prepareUser(d, path)
		},
	}, true, nil
}

// userName is the data set's name in reports and file names: the file's
// base name without its extension.
func userName(path string) string {
	base := filepath.Base(path)
	if n := strings.TrimSuffix(base, filepath.Ext(base)); n != "" {
		return n
	}
	return base
}

// csvTarget resolves TARGET against the trimmed header: a column of that
// name, else a 0-based index. how says which, for the description.
func csvTarget(header []string, target string) (col int, how string, err error) {
	if i := slices.Index(header, target); i >= 0 {
		return i, fmt.Sprintf("column %q (by name)", target), nil
	}
	i, convErr := strconv.Atoi(target)
	switch {
	case convErr != nil:
		return 0, "", fmt.Errorf("no column %q in the header %q (TARGET is a column name, or a 0-based column index)", target, strings.Join(header, ","))
	case i < 0 || i >= len(header):
		return 0, "", fmt.Errorf("column index %d: the header has %d columns, 0 to %d (TARGET is 0-based)", i, len(header), len(header)-1)
	}
	return i, fmt.Sprintf("column %d (0-based index: %q)", i, header[i]), nil
}

func loadUserLIBSVM(path string) (*Data, error) {
	d, err := readLIBSVM(path, 0)
	if err != nil {
		return nil, err
	}
	return prepareUser(d, path)
}

// prepareUser checks that d suits the linear closed form and scales its
// features as the named sets' are.
func prepareUser(d *Data, path string) (*Data, error) {
	switch {
	case len(d.Y) < 2:
		return nil, fmt.Errorf("%s: %d row: the problem needs at least 2", path, len(d.Y))
	case d.Dim() == 0:
		return nil, fmt.Errorf("%s: no feature columns beside the target", path)
	case d.Dim() > maxUserFeatures:
		return nil, fmt.Errorf("%s: %d features: the closed form's solver takes at most %d", path, d.Dim(), maxUserFeatures)
	}
	// The objective at x0 = 0 is the mean squared label (plus a constant):
	// it must be finite for the gap (F - F*)/(F(x0) - F*) to mean anything.
	ms, largest := 0.0, 0.0
	for _, y := range d.Y {
		ms += y / float64(len(d.Y)) * y
		largest = math.Max(largest, math.Abs(y))
	}
	if math.IsInf(ms, 0) {
		return nil, fmt.Errorf("%s: the labels' squares overflow (|label| up to %g): divide the labels by a power of ten", path, largest)
	}
	d.scaleFeatures()
	return d, nil
}
