package nn_test

import (
	"math"
	"slices"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/nn"
)

func TestParamsLayoutAndViews(t *testing.T) {
	b := cpu.New()
	p := nn.NewParams()
	nn.NewConv2d(p, "conv", 2, 3, 3, 1, 1)
	nn.NewBatchNorm(p, "bn", 3)
	nn.NewLinear(p, "fc", 4, 2)
	p.Allocate(b)

	wantNames := []string{"conv.weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
		"bn.num_batches_tracked", "fc.weight", "fc.bias"}
	if got := p.Names(); !slices.Equal(got, wantNames) {
		t.Fatalf("Names() = %v, want %v", got, wantNames)
	}
	// Trainable: conv 3*2*3*3 = 54 at 0, bn weight 3 at 54, bias 3 at 57,
	// fc weight 8 at 60, bias 2 at 68. State: 3 + 3 + 1.
	cases := []struct {
		name        string
		kind        nn.Kind
		offset, len int
		shape       []int
	}{
		{"conv.weight", nn.Decayed, 0, 54, []int{3, 2, 3, 3}},
		{"bn.weight", nn.NotDecayed, 54, 3, []int{3}},
		{"bn.bias", nn.NotDecayed, 57, 3, []int{3}},
		{"bn.running_mean", nn.State, 0, 3, []int{3}},
		{"bn.running_var", nn.State, 3, 3, []int{3}},
		{"bn.num_batches_tracked", nn.State, 6, 1, []int{}},
		{"fc.weight", nn.Decayed, 60, 8, []int{2, 4}},
		{"fc.bias", nn.NotDecayed, 68, 2, []int{2}},
	}
	for _, tc := range cases {
		tt := p.Tensor(tc.name)
		if tt == nil || tt.Kind != tc.kind || tt.Offset != tc.offset || tt.Len != tc.len || !slices.Equal(tt.Shape, tc.shape) {
			t.Errorf("%s = %+v, want kind %v offset %d len %d shape %v", tc.name, tt, tc.kind, tc.offset, tc.len, tc.shape)
			continue
		}
		view, shape := p.Lookup(tc.name)
		if view.Len() != tc.len || !slices.Equal(shape, tc.shape) {
			t.Errorf("Lookup(%s) = %d elements %v", tc.name, view.Len(), shape)
		}
		// The view shares storage with its flat buffer.
		flat := p.Flat()
		if tc.kind == nn.State {
			flat = p.State()
		}
		cpu.Data(view)[0] = 42
		if cpu.Data(flat)[tc.offset] != 42 {
			t.Errorf("%s: view does not alias element %d of its flat buffer", tc.name, tc.offset)
		}
		if tt.Trainable() {
			cpu.Data(tt.Grad)[0] = 7
			if cpu.Data(p.Grad())[tc.offset] != 7 {
				t.Errorf("%s: gradient view does not alias element %d of Grad", tc.name, tc.offset)
			}
		} else if tt.Grad != nil {
			t.Errorf("%s: state tensor has a gradient view", tc.name)
		}
	}
	if p.Len() != 70 || p.Flat().Len() != 70 || p.Grad().Len() != 70 || p.StateLen() != 7 || p.State().Len() != 7 {
		t.Errorf("lengths: Len %d Flat %d Grad %d StateLen %d State %d, want 70 70 70 7 7",
			p.Len(), p.Flat().Len(), p.Grad().Len(), p.StateLen(), p.State().Len())
	}
	if v, s := p.Lookup("missing"); v != nil || s != nil {
		t.Error("Lookup of a missing name returned a tensor")
	}
}

func TestParamsMisusePanics(t *testing.T) {
	cases := map[string]func(){
		"duplicate name": func() {
			p := nn.NewParams()
			p.Add("a", nn.Decayed, nn.Init{}, 2)
			p.Add("a", nn.Decayed, nn.Init{}, 2)
		},
		"add after allocate": func() {
			p := nn.NewParams()
			p.Allocate(cpu.New())
			p.Add("a", nn.Decayed, nn.Init{}, 2)
		},
		"flat before allocate": func() { nn.NewParams().Flat() },
		"zero dimension":       func() { nn.NewParams().Add("a", nn.Decayed, nn.Init{}, 2, 0) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

func TestInitializeLawsAndDeterminism(t *testing.T) {
	b := cpu.New()
	build := func(seed uint64) *nn.Params {
		p := nn.NewParams()
		p.Add("ones", nn.NotDecayed, nn.Init{Kind: nn.InitOne}, 10)
		p.Add("normal", nn.Decayed, nn.Init{Kind: nn.InitNormal, Scale: 0.5}, 20000)
		p.Add("uniform", nn.Decayed, nn.Init{Kind: nn.InitUniform, Scale: 0.25}, 20000)
		p.Add("var", nn.State, nn.Init{Kind: nn.InitOne}, 3)
		p.Allocate(b)
		p.Initialize(seed)
		return p
	}
	p := build(1)
	data := func(name string) []float32 { v, _ := p.Lookup(name); return cpu.Data(v) }
	for _, v := range append(data("ones"), data("var")...) {
		if v != 1 {
			t.Fatalf("InitOne gave %g", v)
		}
	}
	// Sample sd of 20000 draws: relative sd 1/sqrt(40000) = 0.5%; allow 3%.
	sd := func(x []float32) float64 {
		var s float64
		for _, v := range x {
			s += float64(v) * float64(v)
		}
		return math.Sqrt(s / float64(len(x)))
	}
	if got := sd(data("normal")); math.Abs(got/0.5-1) > 0.03 {
		t.Errorf("InitNormal scale 0.5: sd %.4f", got)
	}
	for _, v := range data("uniform") {
		if math.Abs(float64(v)) > 0.25 {
			t.Fatalf("InitUniform scale 0.25 gave %g", v)
		}
	}
	if got := sd(data("uniform")); math.Abs(got/(0.25/math.Sqrt(3))-1) > 0.03 {
		t.Errorf("InitUniform scale 0.25: sd %.4f, want %.4f", got, 0.25/math.Sqrt(3))
	}
	if !slices.Equal(cpu.Data(p.Flat()), cpu.Data(build(1).Flat())) {
		t.Error("same seed, different values")
	}
	if slices.Equal(cpu.Data(p.Flat()), cpu.Data(build(2).Flat())) {
		t.Error("different seeds, same values")
	}
}

func TestLayersWriteTheirGradients(t *testing.T) {
	// Linear on (2,3) -> (2,2) with known numbers, through the wrapper:
	// y = x W^T + b, dW = dy^T x, db = sum of dy rows, dx = dy W.
	b := cpu.New()
	p := nn.NewParams()
	lin := nn.NewLinear(p, "fc", 3, 2)
	bn := nn.NewBatchNorm(p, "bn", 2)
	p.Allocate(b)
	b.Upload(lin.Weight.Value, []float32{1, 2, 3, 4, 5, 6})
	b.Upload(lin.Bias.Value, []float32{0.5, -1})
	x := b.Alloc(6)
	b.Upload(x, []float32{1, 0, -1, 2, 1, 0})
	y := b.Alloc(4)
	lin.Forward(b, 2, x, y)
	if got, want := cpu.Data(y), []float32{-1.5, -3, 4.5, 12}; !slices.Equal(got, want) {
		t.Fatalf("Linear forward %v, want %v", got, want)
	}
	dy := b.Alloc(4)
	b.Upload(dy, []float32{1, 0, 0, 1})
	dx := b.Alloc(6)
	lin.Backward(b, 2, x, dy, dx)
	if got, want := cpu.Data(lin.Weight.Grad), []float32{1, 0, -1, 2, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("Linear dW %v, want %v", got, want)
	}
	if got, want := cpu.Data(lin.Bias.Grad), []float32{1, 1}; !slices.Equal(got, want) {
		t.Errorf("Linear db %v, want %v", got, want)
	}
	if got, want := cpu.Data(dx), []float32{1, 2, 3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("Linear dx %v, want %v", got, want)
	}
	// BatchNorm1d on y (N=2, C=2): counts batches only when asked.
	p.Initialize(1)
	saved := bn.NewBNSaved(b)
	out := b.Alloc(4)
	bn.ForwardTrain(b, bn.Shape(2, 1), y, out, saved, false)
	bn.ForwardTrain(b, bn.Shape(2, 1), y, out, saved, true)
	bn.ForwardTrain(b, bn.Shape(2, 1), y, out, saved, true)
	if got := cpu.Data(bn.NumBatchesTracked.Value)[0]; got != 2 {
		t.Errorf("num_batches_tracked = %g after two counted batches, want 2", got)
	}
	// Channel 0 holds -1.5 and 4.5: normalised to -1 and 1 (up to eps).
	if got := cpu.Data(out); math.Abs(float64(got[0])+1) > 1e-3 || math.Abs(float64(got[2])-1) > 1e-3 {
		t.Errorf("BatchNorm1d output %v, want channel 0 = (-1, 1)", got)
	}
}
