package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/simclr-go/simclr/experiment"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// fStarOf is the closed-form optimum of the linear problem on d.
func fStarOf(t *testing.T, d *Data) float64 {
	t.Helper()
	_, f, err := newExactLinear(d).minimise()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// loadUser loads --dataset spec as the command does.
func loadUser(t *testing.T, spec string) (dataset, *Data) {
	t.Helper()
	ds, err := findDataset(spec)
	if err != nil {
		t.Fatal(err)
	}
	d, err := loadData(ds, "unused")
	if err != nil {
		t.Fatal(err)
	}
	return ds, d
}

// A user's copy of a named set gives the named set's F*: housing_scale.txt
// through libsvm:PATH (already in [-1, 1]: the scaling leaves it), and the
// same rows as a CSV whose features were mapped by x -> a_j x + c_j (some
// a_j negative, some large), with the label in the middle, by name and by
// index: min-max scaling undoes the map up to the signs of the weights,
// which F does not see.
func TestUserDataMatchesNamedSet(t *testing.T) {
	named := housing(t)
	want := fStarOf(t, named)

	path := testenv.DataFile(t, "dro/housing_scale.txt")
	ds, d := loadUser(t, "libsvm:"+path)
	if got := fStarOf(t, d); !relClose(got, want, 1e-9) {
		t.Errorf("libsvm:%s: F* = %.12g, named housing %.12g", path, got, want)
	}
	if ds.Name != "housing_scale" || !ds.Convex || !strings.Contains(ds.About, scalingNote) {
		t.Errorf("data set %+v", ds)
	}

	var b bytes.Buffer
	dim := named.Dim()
	const targetAt = 5
	scale := func(j int) (float64, float64) { return float64(j%3-1)*7 + 0.5, 1e3 * float64(j) } // a_j in {-6.5, 0.5, 7.5}
	for j := 0; j <= dim; j++ {
		if j > 0 {
			b.WriteString(",")
		}
		if j == targetAt {
			b.WriteString("medv")
		} else {
			fmt.Fprintf(&b, " f%d", j)
		}
	}
	b.WriteString("\n")
	for i, x := range named.X {
		k := 0
		for j := 0; j <= dim; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			if j == targetAt {
				fmt.Fprintf(&b, "%.17g", named.Y[i])
				continue
			}
			a, c := scale(k)
			fmt.Fprintf(&b, "%.17g", a*x[k]+c)
			k++
		}
		b.WriteString("\n")
	}
	csvPath := writeFile(t, "housing.csv", b.String())
	for _, target := range []string{"medv", "5"} {
		ds, d := loadUser(t, "csv:"+csvPath+":"+target)
		if got := fStarOf(t, d); !relClose(got, want, 1e-9) {
			t.Errorf("csv target %s: F* = %.12g, named housing %.12g", target, got, want)
		}
		how := `target column "medv" (by name)`
		if target == "5" {
			how = `target column 5 (0-based index: "medv")`
		}
		if d.Dim() != dim || !strings.Contains(ds.About, how) || !strings.Contains(ds.About, scalingNote) {
			t.Errorf("target %s: %d features, about %q", target, d.Dim(), ds.About)
		}
		for _, x := range d.X {
			for _, v := range x {
				if v < -1 || v > 1 {
					t.Fatalf("feature %g outside [-1, 1] after scaling", v)
				}
			}
		}
	}
}

// Bad --dataset values and bad files: one error naming the flag or the file
// (and the line) and what to do.
func TestUserDataErrors(t *testing.T) {
	good := writeFile(t, "ok.csv", "a,b,y\n1,2,3\n4,5,6\n")
	oneRow := writeFile(t, "one.txt", "1 1:2\n")
	labelOnly := writeFile(t, "labels.txt", "1\n2\n")
	huge := writeFile(t, "huge.txt", "1e200 1:1\n2 1:2\n")
	badCell := writeFile(t, "cell.csv", "a,y\n1,2\n1,x\n")
	noFeature := writeFile(t, "nofeature.csv", "y\n1\n2\n")
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"libsvm:", []string{"name the file"}},
		{"csv:" + good, []string{"csv:PATH:TARGET"}},
		{"csv:" + good + ":", []string{"csv:PATH:TARGET"}},
		{"csv:" + good + ":z", []string{good + ":1", `no column "z"`, "0-based column index"}},
		{"csv:" + good + ":3", []string{good + ":1", "column index 3", "0 to 2"}},
		{"csv:" + good + ":-1", []string{"column index -1"}},
		{"csv:/nonexistent/x.csv:y", []string{"/nonexistent/x.csv"}},
		{"libsvm:/nonexistent/x.txt", []string{"--dataset", "/nonexistent/x.txt", "no such file"}},
		{"libsvm:" + oneRow, []string{oneRow, "at least 2"}},
		{"libsvm:" + labelOnly, []string{labelOnly, "no features"}},
		{"libsvm:" + huge, []string{huge, "overflow"}},
		{"csv:" + badCell + ":y", []string{badCell + ":3", `column "y" holds "x"`}},
		{"csv:" + noFeature + ":y", []string{noFeature, "no feature columns"}},
	} {
		var out, errOut strings.Builder
		err := mainErr([]string{"--dataset", c.spec, "--methods", "L-SGD", "--trials", "1", "--budget", "100"}, &out, &errOut)
		if err == nil {
			t.Errorf("--dataset %s: no error", c.spec)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("--dataset %s: error %q lacks %q", c.spec, err, w)
			}
		}
	}
}

// The whole command on a user's CSV: the first line says the scaling, the
// JSON names the data set by its file, F* is the closed form's, the plot is
// written under that name, and --tuned finds the settings again.
func TestUserDataRun(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	var b strings.Builder
	b.WriteString("price,rooms,age\n")
	d := &Data{}
	for range 60 {
		rooms, age := 1+9*r.Float64(), 100*r.Float64()
		y := 0.4*rooms - 0.01*age + 0.2*r.NormFloat64()
		fmt.Fprintf(&b, "%g,%g,%g\n", y, rooms, age)
		d.X = append(d.X, []float64{rooms, age})
		d.Y = append(d.Y, y)
	}
	path := writeFile(t, "homes.csv", b.String())
	d.scaleFeatures()
	want := fStarOf(t, d)

	png := t.TempDir()
	args := []string{"--dataset", "csv:" + path + ":0", "--methods", "L-SGD", "--trials", "2", "--budget", "2000", "--json", "--png", png}
	var out, errOut strings.Builder
	if err := mainErr(args, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), `target column 0 (0-based index: "price")`) || !strings.Contains(errOut.String(), scalingNote) {
		t.Errorf("the first line does not say the target and the scaling:\n%s", errOut.String())
	}
	var s experiment.Summary
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
		t.Fatal(err)
	}
	if s.Problem != "homes" || !relClose(s.FStar, want, 1e-12) {
		t.Errorf("summary names %q with F* %.12g; want homes, %.12g", s.Problem, s.FStar, want)
	}
	if _, err := os.Stat(filepath.Join(png, "dro-homes.png")); err != nil {
		t.Errorf("plot: %v", err)
	}
	tuned := writeFile(t, "tuned.jsonl", out.String())
	var again strings.Builder
	if err := mainErr(append(args[:len(args)-2], "--tuned", tuned), &again, io.Discard); err != nil {
		t.Fatalf("--tuned: %v", err)
	}
	// The rerun repeats the reported trials; only the tuning record
	// differs (it names the earlier summary instead of listing the grid).
	var s2 experiment.Summary
	if err := json.Unmarshal([]byte(again.String()), &s2); err != nil {
		t.Fatal(err)
	}
	first, _ := json.Marshal(s.Methods)
	second, _ := json.Marshal(s2.Methods)
	if string(first) != string(second) {
		t.Errorf("--tuned rerun differs:\n%s\n%s", first, second)
	}
}

// scaleFeatures keeps every value finite and in [-1, 1], even where a
// feature's span overflows.
func TestScaleFeaturesExtremes(t *testing.T) {
	d := &Data{X: [][]float64{{-math.MaxFloat64, 3, 5}, {math.MaxFloat64, 3, 7}, {0, 3, 6}}}
	d.scaleFeatures()
	want := [][]float64{{-1, 0, -1}, {1, 0, 1}, {0, 0, 0}}
	for i := range want {
		for j := range want[i] {
			if math.Abs(d.X[i][j]-want[i][j]) > 1e-15 {
				t.Fatalf("scaled %v, want %v", d.X, want)
			}
		}
	}
}

// checkParsed asserts what a parser promises on success: rows of one
// width, finite values, as many labels as rows; and after the user's
// scaling every feature in [-1, 1].
func checkParsed(t *testing.T, d *Data) {
	t.Helper()
	if len(d.X) == 0 || len(d.X) != len(d.Y) {
		t.Fatalf("%d rows, %d labels", len(d.X), len(d.Y))
	}
	for i, x := range d.X {
		if len(x) != d.Dim() {
			t.Fatalf("row %d has %d features, row 0 %d", i, len(x), d.Dim())
		}
		for _, v := range append(x[:len(x):len(x)], d.Y[i]) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("row %d holds %g", i, v)
			}
		}
	}
	d.scaleFeatures()
	for _, x := range d.X {
		for _, v := range x {
			if !(v >= -1 && v <= 1) {
				t.Fatalf("scaled feature %g", v)
			}
		}
	}
}

// checkFailed asserts that a parser's error names the file.
func checkFailed(t *testing.T, err error, path string) {
	t.Helper()
	if !strings.HasPrefix(err.Error(), path) {
		t.Fatalf("error %q does not start with the file %s", err, path)
	}
}

// FuzzReadLIBSVM feeds arbitrary text to the LIBSVM reader, with the
// features counted from the file and fixed at 3: rows of one width and
// finite values, or one error naming the file; never a panic or an
// allocation beyond the limits (an index of 10^9 is an error, not a
// gigabyte row). Seeds: the named sets' first rows and the malformed rows
// TestReadLIBSVM lists.
func FuzzReadLIBSVM(f *testing.F) {
	for _, s := range []string{
		"24 1:-0.5 3:2.22045e-16\n\n21.6 2:1 3:-1\n",
		"# comment\n1 1:1\n2 2:2\n",
		"x 1:1\n", "1 1:1\n2 1=3\n", "1 2:1 1:1\n", "1 4:1\n", "1 1:NaN\n", "\n",
		"1 1000000000:1\n", "1 -1:2\n", "1 1:-1e308 2:1e308\n2 1:1e308 2:-1e308\n", "1\n2\n",
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join(testenv.DataDir(f), "dro", "mpg_scale.txt")); err == nil {
		f.Add(b[:min(len(b), 2048)])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text []byte) {
		path := filepath.Join(dir, "fuzz.txt")
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, dim := range []int{0, 3} {
			d, err := readLIBSVM(path, dim)
			if err != nil {
				checkFailed(t, err, path)
				continue
			}
			if dim > 0 && d.Dim() != dim {
				t.Fatalf("%d features, want %d", d.Dim(), dim)
			}
			checkParsed(t, d)
		}
	})
}

// FuzzReadCSV feeds arbitrary text to the CSV reader, with the target by
// name ("y") and by index (0): rows of one width and finite values, or one
// error naming the file; never a panic. Seeds: good files, the malformed
// ones of TestReadCSV, quoting, and the bike set's first lines.
func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{
		"a,b,y\n1,2,3\n4,5,6\n", "y,a\n1,2\n", "\ufeffa , y\n1,2\n", "a,b\n1,2\n", "a,y\n1,2\nx,3\n",
		"a,y\n1,2\n3\n", "a,y\n", "", "\"a\",\"y\"\n\"1\",\"2\"\n", "a,y\n\"1\n2\",3\n", "y\n1\n2\n",
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join(testenv.DataDir(f), "dro", "bike_hour.csv")); err == nil {
		f.Add(b[:min(len(b), 2048)])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text []byte) {
		path := filepath.Join(dir, "fuzz.csv")
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{"y", "0"} {
			f, _, header, err := openCSV(path)
			if err != nil {
				checkFailed(t, err, path)
				continue
			}
			f.Close()
			col, _, err := csvTarget(header, target)
			if err != nil {
				continue // a flag error, named by userDataset
			}
			d, err := readCSVBy(path, func([]string) (int, error) { return col, nil }, nil)
			if err != nil {
				checkFailed(t, err, path)
				continue
			}
			if len(d.Features) != d.Dim() {
				t.Fatalf("%d feature names for %d features", len(d.Features), d.Dim())
			}
			if d.Dim() > 0 {
				checkParsed(t, d)
			}
		}
	})
}
