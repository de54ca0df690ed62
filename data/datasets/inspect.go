package datasets

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/folder"
)

// Official returns the training and test image counts of a named data set's
// official release (false for folder data sets), so that a partial
// download or a fragment is reported rather than silently trained on.
func Official(name string) (train, test int, ok bool) {
	_, v, err := Builtin().variant(name)
	return v.Train, v.Test, err == nil && v.Train > 0
}

// SplitReport describes one split of a loaded data set.
type SplitReport struct {
	Images   int   `json:"images"`
	PerClass []int `json:"per_class"` // in the order of Report.Classes
}

// Report is what `simclr data inspect` shows: enough to tell whether data
// is usable, and if not, the first problem found.
type Report struct {
	Dataset   string      `json:"dataset"`
	DataDir   string      `json:"data_dir"`
	Classes   []string    `json:"classes,omitempty"`
	Channels  int         `json:"channels,omitempty"`
	Height    int         `json:"height,omitempty"`
	Width     int         `json:"width,omitempty"`
	Train     SplitReport `json:"train"`
	Test      SplitReport `json:"test"`
	Mean      [3]float32  `json:"mean"`       // normalisation used for training
	Std       [3]float32  `json:"std"`        // normalisation used for training
	TrainMean [3]float32  `json:"train_mean"` // measured on the training set
	TrainStd  [3]float32  `json:"train_std"`  // measured on the training set
	Problem   string      `json:"problem"`    // "ok" or the first problem found
	OK        bool        `json:"ok"`
}

// statsTolerance is how far (in [0,1] pixel units) the measured training
// statistics may be from the normalisation constants before it is reported:
// the JPEG rebuild of CIFAR-10 is within 0.002, a wrong set or a corrupt
// file is far beyond.
const statsTolerance = 0.02

// Inspect loads a data set as Open does and checks it; a loading error is
// reported as the problem.
func Inspect(name, dataDir string, size int) *Report {
	if dataDir == "" {
		dataDir = DefaultDir
	}
	r := &Report{Dataset: name, DataDir: dataDir}
	s, err := Open(name, dataDir, size)
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	r.Classes = s.Train.Classes
	r.Channels, r.Height, r.Width = 3, s.Train.H, s.Train.W
	r.Mean, r.Std = s.Mean, s.Std
	r.TrainMean, r.TrainStd = folder.Stats(s.Train)
	r.Problem = check(name, s, r)
	r.OK = r.Problem == ""
	if r.OK {
		r.Problem = "ok"
	}
	return r
}

// check fills the split reports and returns the first problem, or "".
func check(name string, s *data.Splits, r *Report) string {
	var problems []string
	note := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, sp := range []struct {
		split string
		set   *data.Set
		out   *SplitReport
	}{{"train", s.Train, &r.Train}, {"test", s.Test, &r.Test}} {
		sp.out.Images = sp.set.Len()
		sp.out.PerClass = make([]int, len(r.Classes))
		if sp.set.H != r.Height || sp.set.W != r.Width {
			note("%s images are %dx%d but train images %dx%d", sp.split, sp.set.H, sp.set.W, r.Height, r.Width)
		}
		if len(sp.set.Pix) != sp.set.Len()*3*sp.set.H*sp.set.W {
			note("%s holds %d pixel bytes for %d images of 3x%dx%d", sp.split, len(sp.set.Pix), sp.set.Len(), sp.set.H, sp.set.W)
			continue
		}
		for i, l := range sp.set.Labels {
			if l < 0 || int(l) >= len(r.Classes) {
				note("%s image %d has label %d, outside 0..%d", sp.split, i, l, len(r.Classes)-1)
				break
			}
			sp.out.PerClass[l]++
		}
		for c, n := range sp.out.PerClass {
			if n == 0 {
				note("%s split has no images of class %s", sp.split, r.Classes[c])
				break
			}
		}
	}
	d, v, err := Builtin().variant(name)
	if train, test := v.Train, v.Test; train > 0 && (r.Train.Images != train || r.Test.Images != test) {
		note("%d training and %d test images, the official %s has %d and %d: incomplete or partial data (fetch again: scripts/fetch_data.sh %s --dir %s)",
			r.Train.Images, r.Test.Images, name, train, test, v.Fetch, r.DataDir)
	}
	// A data set whose statistics are measured on its own images (a
	// folder) has nothing to compare them with.
	if err != nil || d.Standard {
		for c := 0; c < 3; c++ {
			if math.Abs(float64(r.TrainMean[c]-r.Mean[c])) > statsTolerance || math.Abs(float64(r.TrainStd[c]-r.Std[c])) > statsTolerance {
				note("measured training mean %v / std %v differ from the standard %s statistics %v / %v by more than %.2f: wrong or corrupt images",
					r.TrainMean, r.TrainStd, name, r.Mean, r.Std, statsTolerance)
				break
			}
		}
	}
	if len(problems) == 0 {
		return ""
	}
	return problems[0]
}
