// Command levelsplot draws the MLMC study's per-level diagnostics:
// from `simclr levels --json` files it plots log2 of the variance of H^l
// (h^l at the lowest level) and log2 of the seconds per query against the
// level l, one line per file, into two PNGs. Those two slopes are the rates
// b and c the estimators' level laws assume (b = c = 1, docs/definitions.md,
// section 1 "Oracles and levels").
//
//	go run ./scripts/study/levelsplot -out studies/small-batches/img NAME=FILE.json ...
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/simclr-go/simclr/mlmc"
)

func main() {
	out := flag.String("out", "docs/img", "folder for levels_variance.png and levels_seconds.png")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "levelsplot: give NAME=FILE.json arguments (simclr levels --json output)")
		os.Exit(2)
	}
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "levelsplot:", err)
		os.Exit(1)
	}
}

func run(out string, args []string) error {
	pv, ps := plot.New(), plot.New()
	pv.Title.Text = "Variance of H^l (h^l at the lowest level)"
	pv.X.Label.Text, pv.Y.Label.Text = "level l (2^l images)", "log2 Var"
	ps.Title.Text = "Cost of one query"
	ps.X.Label.Text, ps.Y.Label.Text = "level l (2^l images)", "log2 seconds"
	var vlines, slines []any
	for _, arg := range args {
		name, path, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("argument %q: want NAME=FILE.json", arg)
		}
		l, err := mlmc.ReadLevelsReport(path)
		if err != nil {
			return err
		}
		var v, s plotter.XYs
		for _, st := range l.Levels {
			v = append(v, plotter.XY{X: float64(st.Level), Y: math.Log2(st.Var)})
			s = append(s, plotter.XY{X: float64(st.Level), Y: math.Log2(st.Seconds)})
		}
		vlines = append(vlines, name, v)
		slines = append(slines, name, s)
	}
	if err := plotutil.AddLinePoints(pv, vlines...); err != nil {
		return err
	}
	if err := plotutil.AddLinePoints(ps, slines...); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := pv.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(out, "levels_variance.png")); err != nil {
		return err
	}
	return ps.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(out, "levels_seconds.png"))
}
