package ref

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

func to64(z []float32) []float64 {
	out := make([]float64, len(z))
	for i, v := range z {
		out[i] = float64(v)
	}
	return out
}

// sogclrRowU is each view's u_i of a SogCLR step, from the definition:
// (1 - g) u_k + g m_i, g = 1 where u_k is 0.
func sogclrRowU(n, d int, tau, gamma float64, old []float32, z []float64) []float64 {
	unit := normalize64(n, d, z)
	rowU := make([]float64, 2*n)
	for i := range 2 * n {
		var mean float64
		for v := range 2 * n {
			if v != i && v != i^1 {
				mean += math.Exp(dot64(unit, i, v, d)/tau) / float64(2*n-2)
			}
		}
		g := gamma
		if old[i/2] == 0 {
			g = 1
		}
		rowU[i] = (1-g)*float64(old[i/2]) + g*mean
	}
	return rowU
}

// checkFiniteDifferences compares dz with central differences of f at z.
func checkFiniteDifferences(t *testing.T, z []float64, dz []float32, f func([]float64) float64) {
	t.Helper()
	// dz is float32 (rel 1e-6), the O(h^2) truncation ~1e-10.
	const h = 1e-5
	step := 1
	if len(z) > 200 {
		step = len(z) / 41
	}
	for i := 0; i < len(z); i += step {
		orig := z[i]
		z[i] = orig + h
		up := f(z)
		z[i] = orig - h
		down := f(z)
		z[i] = orig
		fd := (up - down) / (2 * h)
		if got := float64(dz[i]); math.Abs(got-fd) > 1e-5+1e-4*math.Abs(fd) {
			t.Errorf("dz[%d] = %.8g, finite difference %.8g", i, got, fd)
		}
	}
}

func TestDecoupledGradientFiniteDifferences(t *testing.T) {
	cases := []struct {
		name   string
		n, d   int
		tau    float64
		sogclr bool
		gamma  float64
		seen   bool // u starts at positive values (not a first visit)
	}{
		{"DCL n=2 d=3", 2, 3, 0.5, false, 0, false},
		{"DCL n=5 d=7", 5, 7, 0.2, false, 0, false},
		{"DCL large parallel n=40 d=200", 40, 200, 0.5, false, 0, false},
		{"SogCLR first visit n=3 d=4", 3, 4, 0.5, true, 0.9, false},
		{"SogCLR seen gamma=0.9 n=4 d=5", 4, 5, 0.2, true, 0.9, true},
		{"SogCLR seen gamma=0.5 n=6 d=3", 6, 3, 0.1, true, 0.5, true},
		{"SogCLR large parallel n=40 d=200", 40, 200, 0.5, true, 0.7, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.d)))
			z := randomZ(rng, 2*tc.n, tc.d)
			z64 := to64(z)
			dz := make([]float32, len(z))
			if !tc.sogclr {
				value := new(NTXentWorkspace).Decoupled(tc.n, tc.d, tc.tau, 0, nil, z, dz)
				if ref := DCLLoss64(tc.n, tc.d, tc.tau, z64); math.Abs(value-ref) > 1e-9*math.Max(1, math.Abs(ref)) {
					t.Fatalf("value %.12f, float64 reference %.12f", value, ref)
				}
				checkFiniteDifferences(t, z64, dz, func(z []float64) float64 { return DCLLoss64(tc.n, tc.d, tc.tau, z) })
				return
			}
			u := make([]float32, tc.n)
			if tc.seen {
				for k := range u {
					u[k] = float32(0.5 + rng.Float64())
				}
			}
			old := append([]float32(nil), u...)
			rowU := sogclrRowU(tc.n, tc.d, tc.tau, tc.gamma, old, z64)
			value := new(NTXentWorkspace).Decoupled(tc.n, tc.d, tc.tau, tc.gamma, u, z, dz)
			var want float64
			for i, ui := range rowU {
				want += math.Log(float64(2*tc.n-2)*ui) - dot64(normalize64(tc.n, tc.d, z64), i, i^1, tc.d)/tc.tau
			}
			want /= float64(2 * tc.n)
			if math.Abs(value-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Fatalf("value %.12f, from the definition %.12f", value, want)
			}
			for k := range u {
				mean := (rowU[2*k] + rowU[2*k+1]) / 2
				if math.Abs(float64(u[k])-mean) > 1e-6*mean {
					t.Fatalf("u[%d] = %.8g after the step, want the mean of its views' %.8g and %.8g = %.8g", k, u[k], rowU[2*k], rowU[2*k+1], mean)
				}
			}
			checkFiniteDifferences(t, z64, dz, func(z []float64) float64 { return SogCLRSurrogate64(tc.n, tc.d, tc.tau, rowU, z) })
		})
	}
}

// At gamma = 1 every u_i is its batch mean m_i, so SogCLR's step is tau
// times DCL's gradient, and its value DCL's.
func TestSogCLRAtGammaOneIsTauTimesDCL(t *testing.T) {
	for _, tau := range []float64{0.1, 0.5} {
		t.Run(fmt.Sprint("tau=", tau), func(t *testing.T) {
			const n, d = 12, 9
			rng := rand.New(rand.NewPCG(7, 8))
			z := randomZ(rng, 2*n, d)
			dcl, sog := make([]float32, len(z)), make([]float32, len(z))
			u := make([]float32, n)
			for k := range u {
				u[k] = float32(1 + 3*rng.Float64()) // seen: gamma = 1 forgets them
			}
			vd := new(NTXentWorkspace).Decoupled(n, d, tau, 0, nil, z, dcl)
			vs := new(NTXentWorkspace).Decoupled(n, d, tau, 1, u, z, sog)
			if math.Abs(vd-vs) > 1e-12*math.Abs(vd) {
				t.Fatalf("values: DCL %.15g, SogCLR at gamma 1 %.15g", vd, vs)
			}
			var maxAbs float64
			for i := range dcl {
				maxAbs = math.Max(maxAbs, math.Abs(float64(dcl[i])))
			}
			for i := range dcl {
				if diff := math.Abs(float64(sog[i]) - tau*float64(dcl[i])); diff > 1e-6*tau*maxAbs {
					t.Errorf("dz[%d]: SogCLR %.8g, tau x DCL %.8g", i, sog[i], tau*float64(dcl[i]))
				}
			}
		})
	}
}

// A small gamma keeps u near its old value, so the step's weights differ
// from DCL's: the test above is not true of every gamma.
func TestSogCLRGammaMatters(t *testing.T) {
	const n, d, tau = 6, 5, 0.5
	rng := rand.New(rand.NewPCG(3, 4))
	z := randomZ(rng, 2*n, d)
	dcl, sog := make([]float32, len(z)), make([]float32, len(z))
	u := make([]float32, n)
	for k := range u {
		u[k] = 10 // far from any batch mean of exp(s/0.5) <= e^2
	}
	new(NTXentWorkspace).Decoupled(n, d, tau, 0, nil, z, dcl)
	new(NTXentWorkspace).Decoupled(n, d, tau, 0.1, u, z, sog)
	var worst float64
	for i := range dcl {
		worst = math.Max(worst, math.Abs(float64(sog[i])-tau*float64(dcl[i])))
	}
	if worst < 1e-3 {
		t.Fatalf("gamma 0.1 with u far from the batch means: step within %g of tau x DCL", worst)
	}
}

func TestDecoupledPanicsOnBadInput(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		gamma float64
		u     []float32
	}{
		{"one image", 1, 0, nil},
		{"gamma 0", 2, 0, make([]float32, 2)},
		{"gamma above 1", 2, 1.5, make([]float32, 2)},
		{"u of the wrong length", 2, 0.5, make([]float32, 3)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			z := make([]float32, 2*tc.n*3)
			new(NTXentWorkspace).Decoupled(tc.n, 3, 0.5, tc.gamma, tc.u, z, make([]float32, len(z)))
		})
	}
}

// TestDecoupledMatchesNumPy compares both losses with testdata/decoupled.py,
// written in LibAUC's layout (the two views as two blocks of rows, each
// anchor's candidates as [other block | own block]) rather than ours
// (interleaved views), over two SogCLR steps so that the second sees the
// u the first left.
func TestDecoupledMatchesNumPy(t *testing.T) {
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import numpy").CombinedOutput(); err != nil {
		testenv.Missing(t, "NumPy for %s: %v (%s); install it with apt-get install python3-numpy", python, err, out)
		return
	}
	const n, d, tau, gamma = 5, 4, 0.3, 0.8
	rng := rand.New(rand.NewPCG(11, 12))
	steps := [][]float32{randomZ(rng, 2*n, d), randomZ(rng, 2*n, d)}
	// float64 values: JSON's shortest form of a float32 reads back as
	// another float64.
	in := map[string]any{"n": n, "d": d, "tau": tau, "gamma": gamma, "z": [][]float64{to64(steps[0]), to64(steps[1])}}
	dir := t.TempDir()
	inPath := filepath.Join(dir, "in.json")
	raw, _ := json.Marshal(in)
	if err := os.WriteFile(inPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, filepath.Join("testdata", "decoupled.py"), inPath).CombinedOutput()
	if err != nil {
		t.Fatalf("decoupled.py: %v\n%s", err, out)
	}
	var want struct {
		DCL []struct {
			Loss float64
			Dz   []float64
		} `json:"dcl"`
		SogCLR []struct {
			Loss float64
			Dz   []float64
			U    []float64
		} `json:"sogclr"`
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("decoupled.py output: %v\n%s", err, out)
	}
	close := func(what string, got []float32, want []float64) {
		t.Helper()
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("%s[%d] = %.8g, NumPy %.8g", what, i, got[i], want[i])
			}
		}
	}
	u := make([]float32, n)
	for step, z := range steps {
		dz := make([]float32, len(z))
		v := new(NTXentWorkspace).Decoupled(n, d, tau, 0, nil, z, dz)
		if math.Abs(v-want.DCL[step].Loss) > 1e-9 {
			t.Fatalf("step %d DCL loss %.12g, NumPy %.12g", step, v, want.DCL[step].Loss)
		}
		close(fmt.Sprintf("step %d DCL dz", step), dz, want.DCL[step].Dz)
		v = new(NTXentWorkspace).Decoupled(n, d, tau, gamma, u, z, dz)
		if math.Abs(v-want.SogCLR[step].Loss) > 1e-6 {
			t.Fatalf("step %d SogCLR loss %.12g, NumPy %.12g", step, v, want.SogCLR[step].Loss)
		}
		close(fmt.Sprintf("step %d SogCLR dz", step), dz, want.SogCLR[step].Dz)
		close(fmt.Sprintf("step %d SogCLR u", step), u, want.SogCLR[step].U)
	}
}
