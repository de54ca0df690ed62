package main

import (
	"math"
	"math/rand/v2"

	"github.com/simclr-go/simclr/cso"
)

// objective is F(x), exact or estimated with its standard error, and how
// it is computed, for the report.
type objective struct {
	Value func(x []float64) (f, se float64)
	About string
}

// objective is the closed form as the harness reads it: exact, cheap
// enough for every iterate.
func (e *exactLinear) objective() objective {
	return objective{About: "exact: the closed form over all rows",
		Value: func(x []float64) (float64, float64) { return e.value(x), 0 }}
}

// crnObjective estimates F for the MLP from a fixed set of rows and inner
// draws (common random numbers): every point of every run is scored on the
// same draws, so differences between points carry no sampling noise from
// the evaluation, and the level F is F^l of docs/definitions.md, section 9,
// at l = log2(inner draws), on those rows.
type crnObjective struct {
	data  *Data
	model predictor
	rows  []int
	zs    [][][]float64 // zs[r][j]: inner draw j of row rows[r]
}

func newCRNObjective(data *Data, model predictor, rows, innerLevel int, seed uint64) *crnObjective {
	r := rand.New(rand.NewPCG(seed, 0xc0ffee))
	p := newSinkhorn(data, model)
	o := &crnObjective{data: data, model: model}
	for range rows {
		i := p.DrawOuter(r)
		o.rows = append(o.rows, i)
		zs := make([][]float64, 1<<innerLevel)
		for j := range zs {
			zs[j] = p.DrawInner(r, i, nil)
		}
		o.zs = append(o.zs, zs)
	}
	return o
}

// objective is the estimate as the harness reads it.
func (o *crnObjective) objective() objective {
	return objective{About: "estimated: the plug-in value on a fixed sample of rows and inner draws", Value: o.valueSE}
}

// valueSE is the estimate and its standard error over rows.
func (o *crnObjective) valueSE(x []float64) (float64, float64) {
	p := newSinkhorn(o.data, o.model)
	var sum, sum2 float64
	for k, i := range o.rows {
		v := p.PlugIn(x, i, o.zs[k], 0, nil)
		sum += v
		sum2 += v * v
	}
	n := float64(len(o.rows))
	mean := sum / n
	return mean, math.Sqrt(math.Max(sum2/n-mean*mean, 0) / (n - 1))
}

var _ cso.Problem[int, []float64] = (*sinkhorn)(nil)
