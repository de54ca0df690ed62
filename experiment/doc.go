// Package experiment runs the paper's experimental protocol on any biased
// oracle of package mlmc over []float64 vectors: a grid search of each
// estimator's settings on tuning seeds, reported trials on other seeds,
// the cost each method needs to reach each target gap, and the tables and
// JSON lines that report them (docs/definitions.md, section 9, states the
// protocol). Its figures are drawn by package experiment/plots, which holds
// the plotting dependencies: this package and package mlmc build without
// them.
//
// A Problem gives the oracle of each trial (per seed), the start x0, an
// optional projection and step scaling, and what progress is read on: the
// relative gap (F(x) - F*)/(F(x0) - F*) of an objective that is exact or
// estimated with a standard error, against an F* that is exact or the
// lowest value any run reached (Optimum.Reached, said so in the summary);
// or a problem's own Error (the pricing problem's |x - x*|/|x*|). A Method
// is typed: an mlmc.Kind with its mlmc.Config, a step size and decay;
// names for people ("VR RT-MLMC") are derived from the kind, never parsed.
//
// The cost to a target is counted in two ways. The headline is the cost
// after which a trial's gap stays at or below the target for the rest of
// its budget, checked at every logged point (Protocol.Points), so that a
// noisy step that crosses the target once by chance does not count as
// reaching it; the first touch (at every iterate where the problem allows
// it, else at the logged points) is kept beside it. Reading it at every
// iterate (Problem.EveryIterate) evaluates the objective after every
// iteration, which for an exact objective over a data set can cost more
// than the iterations: about three quarters of an RT-MLMC run's time on
// examples/ownoracle's problem. Each is reported as
// the median over trials, a distribution-free interval for the median from
// order statistics at a stated confidence (CIRanks), and the trials that
// reached it.
//
// Grid makes the candidate settings of a tuning grid (L x step x schedule
// x D1) for the estimator kinds asked for (Kinds: every one of mlmc's).
// Tune runs every candidate setting on the tuning seeds and keeps, per
// family (estimator kind), the overall-tuned setting (Protocol.Criterion)
// and the best setting for each target by each rule; it names chosen values
// that sit at an edge of their grid, where the grid must be widened.
// TuneReusing does the same but takes the scores of the settings that an
// earlier tuning record (PriorScores reads them from results files)
// already holds, so a widened grid runs only its new settings; TuneWidened
// widens the grid itself, round after round, along the Axes where a
// choice sits at an edge of what its family tried.
// Report runs the chosen settings on the reported seeds; Fixed and
// TuningFrom run hand-chosen settings or those of an earlier results file.
// WriteMarkdown, MeasureLevels (the per-level diagnostic of package mlmc
// at a point) and WriteLevels report them; plots.WritePNG draws them.
//
// Choose is Tune's choice rule over scored settings, and AtEdges its walk
// over the chosen settings at an edge of an Axis, for a search that scores
// settings in rounds its own way. ParseKinds reads a --methods list of
// estimators.
//
// The auto method. A Method whose Auto is set (AutoMethod, AutoFixed) is
// run by package mlmc/auto on the trial's problem, its stages' pilots
// counted in the trial's cost, the recorders reading the run's answer (the
// average of its stage's iterates); the trial keeps auto's record (every
// stage and plan with its reasons) with the true gap where it stopped and
// whether its own gap estimate held. A trial auto cannot serve is recorded
// as not reached, its record saying why. AddAutoFlags registers the
// examples' --method auto and --gap.
package experiment
