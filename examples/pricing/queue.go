package main

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Model constants of docs/definitions.md, section 8 "Pricing and staffing" (the
// paper's section 4.2).
const (
	demandA   = 0.1 // a in lambda(p)
	demandChi = 10  // chi in lambda(p)
	staffC0   = 0.1 // c(mu) = c0 mu^2
	holdingH0 = 1   // h0
)

// Law is a service-time law V (mean about 1) scaled by 1/mu in the queue.
type Law struct {
	Name string
	// Mean and Second are E[V] and E[V^2], exact.
	Mean, Second float64
	// Sample draws V.
	Sample func(r *rand.Rand) float64
}

// Var is Var V.
func (l Law) Var() float64 { return l.Second - l.Mean*l.Mean }

// Laws are the three service laws of docs/definitions.md, section 8
// "Pricing and staffing".
func Laws() []Law {
	const erlangK = 10 // Erlang(k, rate k): mean 1, variance 1/k = 0.1
	hyperRates := make([]float64, 10)
	var hyperMean, hyperSecond float64
	for i := range hyperRates {
		r := 0.155 * float64((i+1)*(i+1))
		hyperRates[i] = r
		hyperMean += 0.1 / r
		hyperSecond += 0.1 * 2 / (r * r)
	}
	return []Law{
		{Name: "erlang", Mean: 1, Second: 1 + 1.0/erlangK, Sample: func(r *rand.Rand) float64 {
			s := 0.0
			for range erlangK {
				s += r.ExpFloat64()
			}
			return s / erlangK
		}},
		{Name: "exponential", Mean: 1, Second: 2, Sample: func(r *rand.Rand) float64 { return r.ExpFloat64() }},
		// The rates 0.155 i^2 give mean 0.99985, not exactly 1; the
		// closed form below uses the exact moments (mean and E[V^2]).
		{Name: "hyperexponential", Mean: hyperMean, Second: hyperSecond, Sample: func(r *rand.Rand) float64 {
			return r.ExpFloat64() / hyperRates[r.IntN(len(hyperRates))]
		}},
	}
}

// LawByName finds one of Laws.
func LawByName(name string) (Law, error) {
	for _, l := range Laws() {
		if l.Name == name {
			return l, nil
		}
	}
	return Law{}, fmt.Errorf("unknown service law %q: use erlang, exponential or hyperexponential", name)
}

// lambda is the arrival rate at price p: chi e^(a-p) / (1 + e^(a-p)).
func lambda(p float64) float64 { return demandChi / (1 + math.Exp(p-demandA)) }

// dLambda is lambda'(p) = -lambda (1 - lambda/chi).
func dLambda(p float64) float64 {
	l := lambda(p)
	return -l * (1 - l/demandChi)
}

// Objective is F(mu, p) = h0 E[Q] + c0 mu^2 - p lambda(p) in closed form,
// +Inf where the queue is unstable. Poisson arrivals make the queue M/G/1;
// with service S = V/mu and rho = lambda E[S], the Pollaczek-Khinchine
// formula gives E[W] = lambda E[S^2] / (2 (1 - rho)) and by Little's law
// E[Q] = lambda (E[W] + E[S]) = rho + lambda^2 E[V^2] / (2 mu^2 (1 - rho)),
// which for E[V] = 1 is rho + rho^2 (1 + Var V) / (2 (1 - rho)).
func Objective(law Law, mu, p float64) float64 {
	lam := lambda(p)
	rho := lam * law.Mean / mu
	if rho >= 1 || mu <= 0 {
		return math.Inf(1)
	}
	eq := rho + lam*lam*law.Second/(2*mu*mu*(1-rho))
	return holdingH0*eq + staffC0*mu*mu - p*lam
}

// ClosedZ is Z = E[W_inf + X_inf] in closed form. With k = E[V^2]/2 and
// m = E[V], E[W] = lambda k / (mu (mu - lambda m)), and
// E[X] = lambda dE[W]/dlambda = lambda k / (mu - lambda m)^2.
func ClosedZ(law Law, mu, p float64) float64 {
	lam := lambda(p)
	k := law.Second / 2
	gap := mu - lam*law.Mean
	return lam*k/(mu*gap) + lam*k/(gap*gap)
}

// GradAffine writes grad F(mu, p) = alpha + beta Z as alpha and beta, with
// Z = E[W_inf + X_inf]. The derivation (the paper's way, through E[W + X]):
//
// Lindley's recursion in units of the service rate reads
// mu W_n = (mu W_(n-1) + V_n - U_n mu/lambda)^+, so mu W_n = G_n(mu/lambda)
// for a function G_n of the trajectory (U, V). Differentiating W = G(mu/lambda)/mu:
//
//	dW/dlambda = -G'/lambda^2,   dW/dmu = -W/mu + G'/(lambda mu) = -(W + X)/mu,
//
// where X = lambda dW/dlambda obeys X_n = 1{W_n > 0} (X_(n-1) + U_n/lambda)
// (differentiate the recursion: it is the X of docs/definitions.md, section 8
// "Pricing and staffing"). Taking expectations (the pathwise derivatives are
// dominated for a stable queue), with E[Q] = lambda (E[W] + m/mu), m = E[V]:
//
//	dF/dmu = h0 lambda (dE[W]/dmu - m/mu^2) + 2 c0 mu
//	       = -h0 (lambda/mu) (Z + m/mu) + 2 c0 mu
//	dF/dp  = h0 lambda' (E[W] + m/mu) + h0 lambda (dE[W]/dlambda) lambda' - lambda - p lambda'
//	       = lambda' (h0 (Z + m/mu) - p) - lambda
//
// so both components are affine in the one unknown Z, and an unbiased
// estimate of Z gives an unbiased estimate of the gradient.
func GradAffine(law Law, mu, p float64) (alpha, beta [2]float64) {
	lam, dlam := lambda(p), dLambda(p)
	alpha = [2]float64{
		-holdingH0*lam*law.Mean/(mu*mu) + 2*staffC0*mu,
		dlam*(holdingH0*law.Mean/mu-p) - lam,
	}
	beta = [2]float64{-holdingH0 * lam / mu, holdingH0 * dlam}
	return alpha, beta
}

// ClosedGrad is grad F from GradAffine and ClosedZ.
func ClosedGrad(law Law, mu, p float64) [2]float64 {
	a, b := GradAffine(law, mu, p)
	z := ClosedZ(law, mu, p)
	return [2]float64{a[0] + b[0]*z, a[1] + b[1]*z}
}

// Optimum is the minimiser of Objective by exhaustive search: a grid over
// the box, then grids 10 times finer around the best point until the
// spacing is below 1e-7.
func Optimum(law Law) (mu, p float64) {
	lo, hi := [2]float64{box.muMin, box.pMin}, [2]float64{box.muMax, box.pMax}
	const n = 400
	best := math.Inf(1)
	for h := [2]float64{(hi[0] - lo[0]) / n, (hi[1] - lo[1]) / n}; h[0] > 1e-7; h[0], h[1] = h[0]/10, h[1]/10 {
		for i := 0; i <= n; i++ {
			for j := 0; j <= n; j++ {
				m, q := lo[0]+float64(i)*h[0], lo[1]+float64(j)*h[1]
				if f := Objective(law, m, q); f < best {
					best, mu, p = f, m, q
				}
			}
		}
		lo = [2]float64{mu - n/20*h[0], p - n/20*h[1]}
		hi = [2]float64{mu + n/20*h[0], p + n/20*h[1]}
	}
	return mu, p
}

// box is the feasible set of the projected steps: mu and p in a box that
// holds every optimum and the start (9, 9) with room, and a load
// rho = lambda(p) E[V]/mu <= rhoMax, so that every simulated queue is
// stable and its trajectories do not explode.
var box = struct{ muMin, muMax, pMin, pMax, rhoMax float64 }{0.5, 15, 0, 15, 0.9}

// project clamps (mu, p) into the box, then raises p where needed so that
// lambda(p) <= rhoMax mu / E[V] (lambda decreases in p).
func project(law Law, x [2]float64) [2]float64 {
	mu := math.Min(math.Max(x[0], box.muMin), box.muMax)
	p := math.Min(math.Max(x[1], box.pMin), box.pMax)
	if maxLam := box.rhoMax * mu / law.Mean; lambda(p) > maxLam {
		// lambda(p) = maxLam  <=>  p = a + log(chi/maxLam - 1).
		p = math.Min(demandA+math.Log(demandChi/maxLam-1), box.pMax)
	}
	return [2]float64{mu, p}
}
