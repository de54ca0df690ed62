package experiment

import (
	"flag"
	"fmt"
	"io"

	"github.com/simclr-go/simclr/mlmc/auto"
)

// AutoMethod is the auto method (package mlmc/auto) planned for the target
// relative gap (or error) gap.
func AutoMethod(gap float64) Method {
	return Method{Auto: &auto.Settings{Target: auto.Target{Gap: gap}}}
}

// AutoFixed is the auto method planned for gap, run as it is (Fixed) on a
// trial's whole budget, with the note that says how it works; log, when
// set, receives each trial's line per stage and its warnings.
func AutoFixed(gap float64, log io.Writer) *Tuning {
	m := AutoMethod(gap)
	m.Auto.Log = log
	return Fixed(fmt.Sprintf("auto for gap %g: stages with targets falling by sqrt(10) to the gap, each measuring the levels with a pilot sized to the stage (counted in the cost) and choosing the estimator, L, the level law and the step; it stops when its own gap estimate reaches the gap (docs/definitions.md, section 11)", gap),
		m)
}

// AutoFlags are the command-line options of the auto method that the
// examples share: --method auto and --gap.
type AutoFlags struct {
	fs     *flag.FlagSet
	method string
	gap    float64
}

// AddAutoFlags registers --method and --gap on fs, with the usage each
// command words for its problem.
func AddAutoFlags(fs *flag.FlagSet, methodUsage, gapUsage string) *AutoFlags {
	f := &AutoFlags{fs: fs}
	fs.StringVar(&f.method, "method", "", methodUsage)
	fs.Float64Var(&f.gap, "gap", 0, gapUsage)
	return f
}

// Gaps reads the parsed flags: nil without --method auto, else the gaps to
// plan for, --gap's or the defaults. A gap outside (0, 1), a gap without
// --method auto and a method other than auto are errors naming the flag.
func (f *AutoFlags) Gaps(defaults []float64) ([]float64, error) {
	switch f.method {
	case "":
		if f.gap != 0 {
			return nil, fmt.Errorf("--gap %g: only --method auto plans for a gap; without it every target is reported", f.gap)
		}
		return nil, nil
	case "auto":
		if f.gap == 0 {
			return defaults, nil
		}
		if !(f.gap > 0 && f.gap < 1) {
			return nil, fmt.Errorf("--gap %g: give a relative gap in (0, 1), e.g. %g", f.gap, defaults[len(defaults)-1])
		}
		return []float64{f.gap}, nil
	}
	if f.fs.Lookup("methods") != nil {
		return nil, fmt.Errorf("--method %q: the only method is auto (the grid's methods are chosen with --methods)", f.method)
	}
	return nil, fmt.Errorf("--method %q: the only method is auto", f.method)
}
