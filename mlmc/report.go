package mlmc

// LevelStat is what K independent queries tell about one level's
// estimate Y: H^l above the minimum level, h^l at it (and for the top row
// of the telescoping check).
type LevelStat struct {
	Level int  `json:"level"`
	Diff  bool `json:"diff"` // Y is H^l (true) or h^l
	Draws int  `json:"draws"`
	// MeanNorm is |mean of the K draws|.
	MeanNorm float64 `json:"mean_norm"`
	// Var is the unbiased estimate of E|Y - E Y|^2, the trace of Y's
	// covariance; VarSE its standard error.
	Var   float64 `json:"var"`
	VarSE float64 `json:"var_se"`
	// Moment2 is the mean of |Y|^2 over the draws, an unbiased estimate of
	// E|Y|^2.
	Moment2 float64 `json:"moment2"`
	// Images is the mean cost of a query in samples (the oracle's count:
	// 2^l images for SimCLR); Seconds the mean wall time of a query (draw
	// and evaluation) with its standard error.
	Images    float64 `json:"images"`
	Seconds   float64 `json:"seconds"`
	SecondsSE float64 `json:"seconds_se"`
	// With LevelsConfig.Previous: CorrMoment2 is the mean of
	// |Y(x_t; s) - Y(x_(t-1); s)|^2 over the draws, and CorrSeconds the mean
	// time of the evaluation at x_(t-1).
	CorrMoment2 float64 `json:"corr_moment2,omitempty"`
	CorrSeconds float64 `json:"corr_seconds,omitempty"`
}

// RateFit is a rate fitted by least squares on log2: log2 y_l = k + s l,
// with s = -b for variances and s = c for costs.
type RateFit struct {
	Rate float64 `json:"rate"`
	SE   float64 `json:"se"`
	// From and To are the levels fitted.
	From int `json:"from"`
	To   int `json:"to"`
	// Note says why a fit is missing or how it was made, when not plain.
	Note string `json:"note,omitempty"`
}

// Telescope compares D = sum_l mean Y_l with the mean of h^L: for an
// oracle whose H^l telescope (E sum_l Y_l = E h^L) D is noise only.
type Telescope struct {
	// DiffNorm is |sum_l mean Y_l - mean h^L|; NoiseNorm is
	// sqrt(E|D|^2) under exact telescoping, sqrt(sum_l Var_l/K + Var h^L/K),
	// the size of D expected from noise alone; SumNorm is |sum_l mean Y_l|
	// and TopNorm |mean h^L|.
	DiffNorm  float64 `json:"diff_norm"`
	NoiseNorm float64 `json:"noise_norm"`
	SumNorm   float64 `json:"sum_norm"`
	TopNorm   float64 `json:"top_norm"`
	// Z holds D's projections on random directions, each divided by its
	// standard error (from the projections of the single draws).
	Z []float64 `json:"z"`
	// Critical is the two-sided normal quantile at Confidence, Bonferroni
	// corrected for len(Z) tests; Pass says max |Z| < Critical.
	Confidence float64 `json:"confidence"`
	Critical   float64 `json:"critical"`
	Pass       bool    `json:"pass"`
}

// Prediction is an estimator's variance and expected cost per iteration,
// computed from the measured levels.
type Prediction struct {
	Name string `json:"name"`
	// Var is E|v - E v|^2; Images and Seconds the expected cost of one
	// estimate.
	Var     float64 `json:"var"`
	Images  float64 `json:"images"`
	Seconds float64 `json:"seconds"`
	// RelImages and RelSeconds are Var x cost relative to L-SGD's (one
	// draw of h^L): below 1 the estimator reaches the same variance at a
	// smaller cost.
	RelImages  float64 `json:"rel_images"`
	RelSeconds float64 `json:"rel_seconds"`
	Note       string  `json:"note,omitempty"`
}

// LevelsReport is MeasureLevels' result.
type LevelsReport struct {
	MinLevel int     `json:"min_level"`
	MaxLevel int     `json:"max_level"`
	Draws    int     `json:"draws"`
	B        float64 `json:"assumed_b"`
	C        float64 `json:"assumed_c"`
	// D1, D2 and QE are the VR settings of the vr- predictions (zero when
	// the corrections were not measured, or the measurement was Brief).
	D1         int          `json:"d1,omitempty"`
	D2         int          `json:"d2,omitempty"`
	QE         int          `json:"qe,omitempty"`
	Levels     []LevelStat  `json:"levels"`
	Top        LevelStat    `json:"top"` // h^L, for the telescoping check and L-SGD
	FitB       RateFit      `json:"fit_b"`
	FitCImages RateFit      `json:"fit_c_images"`
	FitCTime   RateFit      `json:"fit_c_seconds"`
	Telescope  Telescope    `json:"telescope"`
	Estimators []Prediction `json:"estimators"`
	// NoBiasVisible says H^l vanished (to rounding) at every level above
	// the minimum at the point measured: every level gives the same
	// gradient there, so no bias, no rate b and no advantage of one method
	// over another can be seen from this measurement, and the verdict
	// recommends none.
	NoBiasVisible bool   `json:"no_bias_visible,omitempty"`
	Verdict       string `json:"verdict"`
}
