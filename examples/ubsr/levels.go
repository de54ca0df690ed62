package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// Sizes of the per-level diagnostic.
const (
	levelsMax   = 12  // Var H^l and cost on levels 0..levelsMax
	levelsDraws = 400 // queries per level for mlmc.MeasureLevels
	biasMax     = 9   // the bias on levels 0..biasMax
	biasDraws0  = 64  // draws of h^0 for the bias; level l takes biasDraws0 2^l
	levelsSeed  = 5
	// z95 makes the 95% intervals of the diagnostic.
	z95 = 1.959964
)

// biasRow is one level's bias E h^l - grad SR and Var h^l.
type biasRow struct {
	Level int `json:"level"`
	Draws int `json:"draws"`
	// Bias is |E h^l - grad SR| with a 95% interval, from Bias2 =
	// |mean - grad|^2 - tr(Cov)/K, the unbiased estimate of the squared
	// bias, and its standard error.
	Bias    float64 `json:"bias"`
	BiasLo  float64 `json:"bias_lo"`
	BiasHi  float64 `json:"bias_hi"`
	Bias2   float64 `json:"bias2"`
	Bias2SE float64 `json:"bias2_se"`
	// VarH is Var h^l, the trace of its covariance, with its standard error.
	VarH   float64 `json:"var_h"`
	VarHSE float64 `json:"var_h_se"`
}

// interval is a fitted rate with its 95% interval, as [value, lo, hi].
type interval [3]float64

// MarshalJSON writes non-finite ends (a fit that could not be made) as null.
func (iv interval) MarshalJSON() ([]byte, error) {
	out := make([]*float64, 3)
	for i, v := range iv {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[i] = &v
		}
	}
	return json.Marshal(out)
}

func rateInterval(f mlmc.RateFit) interval {
	return interval{f.Rate, f.Rate - z95*f.SE, f.Rate + z95*f.SE}
}

// levelsReport is the --levels output of one instance and loss.
type levelsReport struct {
	Instance string    `json:"instance"`
	Loss     string    `json:"loss"`
	At       string    `json:"at"`
	Theta    []float64 `json:"theta"`
	SR       float64   `json:"SR"`
	GradNorm float64   `json:"grad_norm"`
	GradRef  string    `json:"grad_reference"`
	Bias     []biasRow `json:"bias"`
	// Fitted rates with 95% intervals: a on the squared bias (the paper's
	// convention), b on Var H^l, c on the cost, v on Var h^l (the paper
	// bounds Var h^l by a constant: v = 0).
	A, B, C, V interval           `json:"-"`
	Rates      map[string]any     `json:"rates"`
	Paper      map[string]float64 `json:"paper"`
	Levels     *mlmc.LevelsReport `json:"levels"`
}

// measureLevels runs the diagnostic at in.X0: mlmc.MeasureLevels for Var
// H^l and the cost, and biasDraws0 2^l draws of h^l per level for the bias
// against the gradient of in.SR.
func measureLevels(in *instance) (*levelsReport, error) {
	d := len(in.X0)
	theta := append([]float64(nil), in.X0...)
	grad := make([]float64, d)
	sr, err := in.SR(theta, grad)
	if err != nil {
		return nil, err
	}
	rep := &levelsReport{Instance: in.Name, Loss: in.Loss.Name, At: "x0, the uniform portfolio", Theta: theta, SR: sr,
		GradNorm: math.Sqrt(mlmc.Float64Ops{}.Dot(grad, grad)),
		Paper:    map[string]float64{"a": 1, "b": 1, "c": 1}}
	rep.GradRef = "the closed form"
	if !in.Exact {
		rep.GradRef = "the gradient of the sample-average SR on the reference sample (its own error is not removed)"
	}
	o, err := in.oracle(levelsSeed)
	if err != nil {
		return nil, err
	}
	o.SetPoints(theta, theta)
	rep.Levels, err = mlmc.MeasureLevels[[]float64](o, mlmc.Float64Ops{Dim: d},
		mlmc.LevelsConfig{MinLevel: 0, MaxLevel: levelsMax, Draws: levelsDraws, B: 2, C: 1, Seed: levelsSeed})
	if err != nil {
		return nil, err
	}
	var ls, b2, b2se, vh, vhse []float64
	for l := 0; l <= biasMax; l++ {
		row, err := biasAt(o, grad, l, biasDraws0<<l)
		if err != nil {
			return nil, err
		}
		rep.Bias = append(rep.Bias, row)
		ls = append(ls, float64(l))
		vh, vhse = append(vh, row.VarH), append(vhse, row.VarHSE)
	}
	// a is fitted on the levels whose squared bias is significant (its
	// interval above 0); beyond them the noise hides it.
	var la []float64
	for _, r := range rep.Bias {
		if r.Bias2-z95*r.Bias2SE > 0 {
			la, b2, b2se = append(la, float64(r.Level)), append(b2, r.Bias2), append(b2se, r.Bias2SE)
		}
	}
	fa := mlmc.FitLog2(la, b2, b2se)
	fa.Rate = -fa.Rate
	fv := mlmc.FitLog2(ls, vh, vhse)
	fv.Rate = -fv.Rate
	rep.A, rep.B, rep.C, rep.V = rateInterval(fa), rateInterval(rep.Levels.FitB), rateInterval(rep.Levels.FitCImages), rateInterval(fv)
	rep.Rates = map[string]any{"a": rep.A, "b": rep.B, "c": rep.C, "v": rep.V,
		"a_levels": []int{fa.From, fa.To}, "b_levels": []int{rep.Levels.FitB.From, rep.Levels.FitB.To}}
	return rep, nil
}

// biasAt draws k queries of h^l at the oracle's current parameters and
// returns the bias against grad and Var h^l.
func biasAt(o interface {
	mlmc.Oracle[[]float64]
}, grad []float64, l, k int) (biasRow, error) {
	d := len(grad)
	mean := make([]float64, d)
	cov := make([]float64, d*d) // running sum of outer products of deviations
	y := make([]float64, d)
	for i := 1; i <= k; i++ {
		s, _, err := o.Draw(l)
		if err != nil {
			return biasRow{}, err
		}
		clear(y)
		err = o.Eval(s, mlmc.Current, false, 1, y)
		o.Release(s)
		if err != nil {
			return biasRow{}, fmt.Errorf("bias at level %d: %w", l, err)
		}
		// Welford in vector form: delta = y - M_(i-1).
		for j := range y {
			y[j] -= grad[j] + mean[j]
		}
		for j := range y {
			for m := range y {
				cov[j*d+m] += y[j] * y[m] * float64(i-1) / float64(i)
			}
		}
		for j := range y {
			mean[j] += y[j] / float64(i)
		}
	}
	kf := float64(k)
	for j := range cov {
		cov[j] /= kf - 1
	}
	tr, tr2, quad, m2 := 0.0, 0.0, 0.0, 0.0
	for j := range d {
		tr += cov[j*d+j]
		m2 += mean[j] * mean[j]
		for m := range d {
			tr2 += cov[j*d+m] * cov[m*d+j]
			quad += mean[j] * cov[j*d+m] * mean[m]
		}
	}
	row := biasRow{Level: l, Draws: k, Bias2: m2 - tr/kf, VarH: tr,
		// Var of |mean|^2 for a Gaussian mean: 4 m'Cm/K + 2 tr(C^2)/K^2;
		// Var of the trace estimate: about 2 tr(C^2)/(K-1).
		Bias2SE: math.Sqrt(4*quad/kf + 2*tr2/(kf*kf)),
		VarHSE:  math.Sqrt(2 * tr2 / (kf - 1))}
	row.Bias = math.Sqrt(math.Max(row.Bias2, 0))
	row.BiasLo = math.Sqrt(math.Max(row.Bias2-z95*row.Bias2SE, 0))
	row.BiasHi = math.Sqrt(math.Max(row.Bias2+z95*row.Bias2SE, 0))
	return row, nil
}

func (r *levelsReport) print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s, %s loss: per-level diagnostic at %s (SR = %.8g, |grad SR| = %.4g, %s)\n",
		r.Instance, r.Loss, r.At, r.SR, r.GradNorm, r.GradRef)
	head := fmt.Sprintf(" | %8s %11s %23s %11s", "draws", "|bias|", "95% interval", "Var h^l")
	experiment.WriteLevels(w, r.Levels, head, func(i int) string {
		if i >= len(r.Bias) {
			return " |"
		}
		b := r.Bias[i]
		return fmt.Sprintf(" | %8d %11.4g [%10.4g, %10.4g] %11.4g", b.Draws, b.Bias, b.BiasLo, b.BiasHi, b.VarH)
	})
	fmt.Fprintf(w, "Y = h^0 at level 0, H^l above. Fitted rates (95%%): a = %.2f [%.2f, %.2f] (squared bias, levels %v), "+
		"b = %.2f [%.2f, %.2f], c = %.2f [%.2f, %.2f], Var h^l ~ 2^(-v l) with v = %.2f [%.2f, %.2f]; the paper: a = b = c = 1\n",
		r.A[0], r.A[1], r.A[2], r.Rates["a_levels"], r.B[0], r.B[1], r.B[2], r.C[0], r.C[1], r.C[2], r.V[0], r.V[1], r.V[2])
}
