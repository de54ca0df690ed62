// Command complexity measures the paper's Table 1 (docs/definitions.md,
// "The complexity table, measured"): the total cost, in samples as
// the oracle counts them, that L-SGD, V-MLMC, RT-MLMC, RU-MLMC and RR-MLMC
// (and their VR versions on the nonconvex rows) need to reach an
// eps-optimal point (F - F* <= eps: strongly convex, convex) or an
// eps-stationary point (|grad F|^2 <= eps^2: nonconvex), on oracles with
// known rates a, b, c, for eps over a grid; it fits the exponent of cost
// against 1/eps with a 95% interval and prints it next to the table's.
//
//	go run ./examples/complexity [--quick] [--out DIR] [--workers N] [--rows LIST] [--regimes LIST] [--no-tune] [--max-eps-work N] [--max-iter N]
//
// With no flags it measures every cell and writes studies/complexity/results: the
// files committed there come from exactly that command.
//
// Every cell is measured twice: with the parameters the paper's theorems
// prescribe for each eps (level L, n_l, q_l, step sizes, VR batch sizes),
// and with the step factor and level offset tuned per eps on tuning seeds
// (reported on other seeds). The criterion is the mean over the trials
// (20 by default) of F - F* or |grad F|^2, which must stay at or below
// the target. Each grid spans two decades of eps; a cell goes down it
// while the work of its next eps, predicted from the two before, stays
// under --max-eps-work oracle evaluations. A bootstrap over the trials
// gives every cost a 95% interval and every exponent a second one, the
// spread the trials' noise leaves. The table's N.A. cells (RU/RR-MLMC when c >= b) get a
// truncation study instead: the oracle capped at level K, the cost and
// variance of one estimate against K.
//
// --quick measures the strongly convex row in regime (1, 2, 1) with the
// prescribed parameters over one decade of eps: a few seconds of one
// core. The full run writes DIR/cells.jsonl (one line per cell),
// DIR/points.jsonl (one line per cell and eps), DIR/truncation.jsonl,
// DIR/table.md and one log-log figure per row of the table,
// DIR/row-*.png.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/runfolder"
)

// The regimes: b > c, b = c, b < c, and a >= max(b, c), where the paper
// says V-MLMC matches RT-MLMC.
var regimes = []Regime{{1, 2, 1}, {1, 1, 1}, {2, 1, 1.5}, {2, 1.5, 1}}

var rows = []Row{{StronglyConvex, false}, {Convex, false}, {Nonconvex, false}, {Nonconvex, true}}

// epsGrid is a row's grid of eps in regime r: the targets 4 2^(-k) (eps,
// or eps^2 on the nonconvex rows) from the largest below top to the first
// at least decades decades further down. With a = 1 the theorems' level
// L = ceil(log2(4/target)/a) is then exact at every point, so that
// rounding L up adds no staircase to the fit; with a = 2 at every other.
func epsGrid(row Row, r Regime, quick bool) []float64 {
	top, decades := rowRange(row, quick)
	var g []float64
	lo := int(math.Ceil(math.Log2(4/target(row, top)) - 1e-9))
	hi := int(math.Ceil(math.Log2(4/target(row, top/math.Pow(10, decades))) - 1e-9))
	for k := lo; k <= hi; k++ {
		t := 4 * math.Exp2(-float64(k))
		if row.Class == Nonconvex {
			g = append(g, math.Sqrt(t))
		} else {
			g = append(g, t)
		}
	}
	return g
}

// rowRange is the largest eps and the decades of eps a row's grid spans:
// two everywhere (the nonconvex rows' largest eps must leave the start's
// |grad F|^2 = 27 behind). A cell goes down its grid only while the work
// of the next eps, predicted from the two before, stays within the limit
// (limits.MaxEpsWork): the convex and nonconvex cells, whose cost grows
// as eps^-2 to eps^-7, stop short of two decades, and cells.jsonl says
// how far each got.
func rowRange(row Row, quick bool) (top, decades float64) {
	switch {
	case quick:
		return 0.02, 1
	case row.Class == StronglyConvex:
		return 0.02, 2
	case row.Class == Convex:
		return 0.25, 2
	default:
		return 1.5, 2
	}
}

func target(row Row, eps float64) float64 {
	if row.Class == Nonconvex {
		return eps * eps
	}
	return eps
}

type options struct {
	quick, noTune, onlyTuned bool
	replot, factors, merge   string
	truncOnly                bool
	methods                  []mlmc.Method
	out                      string
	workers                  int
	rows                     []Row
	regimes                  []Regime
	exp                      experiment
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "complexity:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	if o.merge != "" {
		if o.replot == "" {
			return fmt.Errorf("--merge %s needs --replot OUT, the folder whose cells it replaces", o.merge)
		}
		if err := mergePoints(o.replot, o.merge); err != nil {
			return err
		}
	}
	if o.replot != "" {
		return replot(o.replot, stdout)
	}
	if o.factors != "" {
		return factors(o.factors, stdout)
	}
	// The prescribed cells first, the tuned after: an interrupted run
	// has the table's primary measurements (and --replot draws them).
	var cells []cellSpec
	for _, tuned := range []bool{false, true} {
		if o.truncOnly || (tuned && o.noTune) || (!tuned && o.onlyTuned) {
			continue
		}
		for _, row := range o.rows {
			for _, r := range o.regimes {
				for _, m := range o.methods {
					if applicable(m, r) {
						cells = append(cells, cellSpec{Row: row, Regime: r, Method: m, Tuned: tuned})
					}
				}
			}
		}
	}
	// The N.A. cells' truncation studies take seconds: first.
	var trunc []truncation
	var naCells []cellResult
	if !o.quick && !o.onlyTuned {
		for _, row := range o.rows {
			for _, r := range o.regimes {
				for _, m := range methods {
					switch {
					case !applicable(m, r):
						t := truncationStudy(row, r, m)
						trunc = append(trunc, t...)
						naCells = append(naCells, naCell(row, r, m, t))
					case (m == mlmc.RUMLMC || m == mlmc.RRMLMC) && secondMomentGrows(row, r):
						trunc = append(trunc, truncationStudy(row, r, m)...)
					}
				}
			}
		}
	}
	// Each cell's lines are written as it finishes, so that a run cut
	// short keeps what it measured; the files are rewritten in the
	// cells' order at the end.
	var partial *partialWriter
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("create the output folder: %w (choose another with --out)", err)
		}
		if len(trunc) > 0 {
			if err := writeJSONLines(filepath.Join(o.out, "truncation.jsonl"), trunc); err != nil {
				return err
			}
		}
		if partial, err = newPartialWriter(o.out); err != nil {
			return err
		}
		defer partial.close()
		for _, c := range naCells {
			if err := partial.add(c, nil); err != nil {
				return err
			}
		}
	}
	results := make([][]point, len(cells))
	summaries := make([]cellResult, len(cells))
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var werr error
	done := 0
	for range o.workers {
		wg.Go(func() {
			for i := range jobs {
				t0 := time.Now()
				results[i] = o.exp.measureCell(cells[i], epsGrid(cells[i].Row, cells[i].Regime, o.quick))
				summaries[i] = summarize(cells[i], results[i])
				mu.Lock()
				done++
				if partial != nil && werr == nil {
					werr = partial.add(summaries[i], results[i])
				}
				fmt.Fprintf(stderr, "[%d/%d %s] %s %s %s %v: %.1fs\n", done, len(cells), time.Since(start).Round(time.Second),
					cells[i].Row, cells[i].Regime, cells[i].Method.DisplayName(), paramsName(cells[i].Tuned), time.Since(t0).Seconds())
				mu.Unlock()
			}
		})
	}
	for i := range cells {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if werr != nil {
		return werr
	}

	out := append(summaries, naCells...)
	var allPoints []point
	for i := range cells {
		allPoints = append(allPoints, results[i]...)
	}
	table := markdownTable(out)
	fmt.Fprint(stdout, table)
	if o.out == "" {
		return nil
	}
	if err := partial.close(); err != nil {
		return err
	}
	if err := writeJSONLines(filepath.Join(o.out, "cells.jsonl"), out); err != nil {
		return err
	}
	if err := writeJSONLines(filepath.Join(o.out, "points.jsonl"), allPoints); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "table.md"), []byte(table), 0o644); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	figs, err := plotRows(allPoints, trunc, o.out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (cells.jsonl, points.jsonl, table.md, %d figures) in %s\n",
		o.out, len(figs), time.Since(start).Round(time.Second))
	return nil
}

func paramsName(tuned bool) string {
	if tuned {
		return "tuned"
	}
	return "prescribed"
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("complexity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "the strongly convex row in regime (1,2,1), prescribed parameters, one decade of eps (a few seconds)")
	out := fs.String("out", "studies/complexity/results", "write cells.jsonl, points.jsonl, table.md and the figures here (empty: print the table only)")
	workers := fs.Int("workers", min(2, runtime.NumCPU()), "cells measured at once")
	rowList := fs.String("rows", "", "comma-separated rows to measure (strongly-convex, convex, nonconvex, vr-nonconvex; default all)")
	regimeList := fs.String("regimes", "", "comma-separated regimes a:b:c to measure (default 1:2:1,1:1:1,2:1:1.5,2:1.5:1)")
	noTune := fs.Bool("no-tune", false, "measure the prescribed parameters only")
	estList := fs.String("estimators", "", "comma-separated estimators to measure (L-SGD, V-MLMC, RT-MLMC, RU-MLMC, RR-MLMC; default all)")
	truncOnly := fs.Bool("truncation-only", false, "run the truncation studies only (N.A. cells, and RU/RR where the second moment of H^l grows)")
	onlyTuned := fs.Bool("only-tuned", false, "measure the tuned parameters only (N.A. cells and their truncation study are written by the prescribed runs)")
	verbose := fs.Bool("v", false, "print a line per measured eps")
	replotDir := fs.String("replot", "", "fit the cells of an earlier run's folder again from its points.jsonl and redraw its cells.jsonl, table.md and figures, measuring nothing")
	mergeDir := fs.String("merge", "", "with --replot OUT: the cells measured in this folder (its points.jsonl) replace the same cells of OUT, every eps of them, before OUT is refitted (a cell rerun over a longer grid of eps)")
	factorsDir := fs.String("factors", "", "measure the terms of the cost T C_iter (iterations, cost per iteration, the estimator's variance against its bound) of the prescribed RT-MLMC cells of the convex and nonconvex rows of an earlier run's folder, from its points.jsonl, into its factors.jsonl and factors.md")
	trials := fs.Int("trials", 20, "trials per eps (the report seeds 1..N)")
	maxEpsWork := fs.Float64("max-eps-work", defaultLimits.MaxEpsWork, "stop a cell's grid of eps before the eps predicted to take more oracle evaluations than this (report runs and tuning; one run is bounded by it too)")
	tuneTrials := fs.Int("tune-trials", 6, "trials per tuning candidate (seeds 1001..)")
	maxIter := fs.Int("max-iter", defaultLimits.MaxIter, "iterations of one run at most (the prescribed horizon T grows as eps^-4 on the nonconvex rows, past the default below eps 0.25 at a = 2)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q: every setting is a flag (see --help)", fs.Arg(0))
	}
	if *workers < 1 || *trials < 2 || *tuneTrials < 2 {
		return options{}, fmt.Errorf("--workers must be at least 1, --trials and --tune-trials at least 2")
	}
	if *maxIter < 1 {
		return options{}, fmt.Errorf("--max-iter must be at least 1 (iterations of one run, e.g. 67108864)")
	}
	if !(*maxEpsWork > 0) {
		return options{}, fmt.Errorf("--max-eps-work must be positive (evaluations, e.g. 2e8)")
	}
	if *noTune && *onlyTuned {
		return options{}, fmt.Errorf("--no-tune and --only-tuned exclude each other: give one")
	}
	o := options{methods: methods, truncOnly: *truncOnly, replot: *replotDir, factors: *factorsDir, merge: *mergeDir, quick: *quick, noTune: *noTune || *quick, onlyTuned: *onlyTuned && !*quick, out: *out, workers: *workers, rows: rows, regimes: regimes,
		exp: experiment{Trials: *trials, TuneTrials: *tuneTrials, Lim: limits{MaxIter: *maxIter, MaxWork: *maxEpsWork, MaxEpsWork: *maxEpsWork}}}
	if *verbose {
		o.exp.Log = stderr
	}
	if *quick {
		o.rows, o.regimes = []Row{{StronglyConvex, false}}, []Regime{{1, 2, 1}}
	}
	if *rowList != "" {
		o.rows = nil
		for _, name := range strings.Split(*rowList, ",") {
			i := slices.IndexFunc(rows, func(r Row) bool { return r.String() == strings.TrimSpace(name) })
			if i < 0 {
				return options{}, fmt.Errorf("--rows: unknown row %q: use strongly-convex, convex, nonconvex or vr-nonconvex", name)
			}
			o.rows = append(o.rows, rows[i])
		}
	}
	if *estList != "" {
		o.methods = nil
		for _, name := range strings.Split(*estList, ",") {
			found := false
			for _, m := range methods {
				if strings.EqualFold(m.DisplayName(), strings.TrimSpace(name)) {
					o.methods, found = append(o.methods, m), true
				}
			}
			if !found {
				return options{}, fmt.Errorf("--estimators: unknown estimator %q: use L-SGD, V-MLMC, RT-MLMC, RU-MLMC or RR-MLMC", name)
			}
		}
	}
	if *regimeList != "" {
		o.regimes = nil
		for _, s := range strings.Split(*regimeList, ",") {
			var r Regime
			if _, err := fmt.Sscanf(strings.TrimSpace(s), "%g:%g:%g", &r.A, &r.B, &r.C); err != nil || r.A <= 0 || r.B <= 0 || r.C <= 0 {
				return options{}, fmt.Errorf("--regimes: %q is not a:b:c with positive rates (e.g. 1:2:1)", s)
			}
			o.regimes = append(o.regimes, r)
		}
	}
	return o, nil
}

// defaultLimits bound one eps of a cell: 4e7 oracle evaluations
// predicted, over its trials, runs and tuning (--max-eps-work; about ten
// seconds of one core), and one run: 2^24 iterations or as many
// evaluations.
var defaultLimits = limits{MaxIter: 1 << 24, MaxWork: 4e7, MaxEpsWork: 4e7}

// partialWriter appends each finished cell's lines to cells.jsonl and
// points.jsonl of a folder.
type partialWriter struct {
	cells, points *os.File
}

func newPartialWriter(dir string) (*partialWriter, error) {
	w := &partialWriter{}
	var err error
	if w.cells, err = os.Create(filepath.Join(dir, "cells.jsonl")); err != nil {
		return nil, fmt.Errorf("create %s: %w (choose another folder with --out)", dir, err)
	}
	if w.points, err = os.Create(filepath.Join(dir, "points.jsonl")); err != nil {
		w.cells.Close()
		return nil, fmt.Errorf("create %s: %w (choose another folder with --out)", dir, err)
	}
	return w, nil
}

func (w *partialWriter) add(c cellResult, pts []point) error {
	if err := encodeLines(w.cells, []cellResult{c}); err != nil {
		return err
	}
	return encodeLines(w.points, pts)
}

// close closes the files once (later calls do nothing).
func (w *partialWriter) close() error {
	if w == nil || w.cells == nil {
		return nil
	}
	err := errors.Join(w.cells.Close(), w.points.Close())
	w.cells, w.points = nil, nil
	return err
}

func encodeLines[T any](f *os.File, rows []T) error {
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false) // the explanations say "c >= b"
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("write %s: %w", f.Name(), err)
		}
	}
	return nil
}

func writeJSONLines[T any](path string, rows []T) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w (choose another folder with --out)", path, err)
	}
	if err := encodeLines(f, rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// replot redraws the figures and table.md of the folder dir from its JSON
// lines, so that runs of single rows can be merged (cat their files) and
// drawn again.
func replot(dir string, stdout io.Writer) error {
	cells, err := readJSONLines[cellResult](filepath.Join(dir, "cells.jsonl"))
	if err != nil {
		return err
	}
	pts, err := readJSONLines[point](filepath.Join(dir, "points.jsonl"))
	if err != nil {
		return err
	}
	trunc, err := readJSONLines[truncation](filepath.Join(dir, "truncation.jsonl"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The measured cells are fitted again from their points (the fit,
	// the bootstrap and the explanations); the N.A. cells are kept.
	refit, err := resummarize(pts)
	if err != nil {
		return err
	}
	for _, c := range cells {
		if c.Predicted == nil {
			refit = append(refit, c)
		}
	}
	if err := writeJSONLines(filepath.Join(dir, "cells.jsonl"), refit); err != nil {
		return err
	}
	table := markdownTable(refit)
	fmt.Fprint(stdout, table)
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(table), 0o644); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	_, err = plotRows(pts, trunc, dir)
	return err
}

// mergePoints replaces, in dir/points.jsonl, the points of every cell
// (cell and parameters) that src/points.jsonl holds by src's points of
// that cell, in the place of the first it replaces (cells new to dir go
// at the end).
func mergePoints(dir, src string) error {
	old, err := readJSONLines[point](filepath.Join(dir, "points.jsonl"))
	if err != nil {
		return err
	}
	repl, err := readJSONLines[point](filepath.Join(src, "points.jsonl"))
	if err != nil {
		return err
	}
	order, byCell := groupPoints(repl)
	var out []point
	done := map[pointCell]bool{}
	for _, p := range old {
		k := pointCell{p.cellID, p.Params}
		if _, ok := byCell[k]; !ok {
			out = append(out, p)
			continue
		}
		if !done[k] {
			out = append(out, byCell[k]...)
			done[k] = true
		}
	}
	for _, k := range order {
		if !done[k] {
			out = append(out, byCell[k]...)
		}
	}
	return writeJSONLines(filepath.Join(dir, "points.jsonl"), out)
}

// pointCell is a measured cell: the cell and its parameters (prescribed
// or tuned).
type pointCell struct {
	id     cellID
	params string
}

// groupPoints groups the points by cell, the cells in the order their
// first point comes.
func groupPoints(pts []point) ([]pointCell, map[pointCell][]point) {
	var keys []pointCell
	groups := map[pointCell][]point{}
	for _, p := range pts {
		k := pointCell{p.cellID, p.Params}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	return keys, groups
}

// resummarize groups the points by cell, in their order, and fits each
// cell again.
func resummarize(pts []point) ([]cellResult, error) {
	keys, groups := groupPoints(pts)
	var out []cellResult
	for _, k := range keys {
		ri := slices.IndexFunc(rows, func(r Row) bool { return r.Class.String() == k.id.Objective && r.VR == k.id.VR })
		m := slices.IndexFunc(methods, func(m mlmc.Method) bool { return m.DisplayName() == k.id.Estimator })
		if ri < 0 || m < 0 {
			return nil, fmt.Errorf("points.jsonl: unknown row %q or estimator %q", k.id.Objective, k.id.Estimator)
		}
		c := cellSpec{Row: rows[ri], Regime: Regime{k.id.A, k.id.B, k.id.C}, Method: methods[m], Tuned: k.params == "tuned"}
		out = append(out, summarize(c, groups[k]))
	}
	return out, nil
}

func readJSONLines[T any](path string) ([]T, error) {
	data, err := runfolder.ReadFile(path) // or path.gz, as the committed points.jsonl.gz
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (--replot needs a folder an earlier run wrote)", path, err)
	}
	var out []T
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		out = append(out, v)
	}
	return out, nil
}
