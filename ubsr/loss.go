package ubsr

import (
	"fmt"
	"math"
)

// Loss is the loss l of a shortfall risk: convex and nondecreasing, with its
// derivative. SR_lambda(theta) = inf { t : E l(-X(theta) - t) <= lambda }
// exists for every lambda strictly inside l's range (Inf, Sup).
type Loss struct {
	// Name says which loss it is ("entropic", ...), for logs and files.
	Name string
	// Value is l(x) and Deriv its derivative l'(x) (at a kink, any value
	// between the one-sided slopes).
	Value, Deriv func(x float64) float64
	// Inf and Sup are the infimum and supremum of l's values: lambda must
	// lie strictly between them, or no t satisfies E l(-X - t) = lambda
	// for every law of X.
	Inf, Sup float64
	// Gaussian, when not nil, returns the Gaussian integrals of the closed
	// forms for Y = a + s U, U ~ N(0, 1), s > 0:
	//
	//	E l(Y),  E l'(Y),  E[l'(Y) U].
	//
	// GaussianSR uses it (docs/definitions.md, section 12).
	Gaussian func(a, s float64) (el, eld, eldU float64)
}

// Entropic is l(x) = exp(beta x), beta > 0: the entropic risk, whose
// shortfall risk is (1/beta) log(E exp(-beta X) / lambda). Its range is
// (0, inf).
func Entropic(beta float64) Loss {
	return Loss{
		Name:  "entropic",
		Value: func(x float64) float64 { return math.Exp(beta * x) },
		Deriv: func(x float64) float64 { return beta * math.Exp(beta*x) },
		Inf:   0, Sup: math.Inf(1),
		Gaussian: func(a, s float64) (float64, float64, float64) {
			e := math.Exp(beta*a + beta*beta*s*s/2)
			// Stein: E[f(U) U] = E f'(U) with f(U) = beta exp(beta(a + sU)).
			return e, beta * e, beta * beta * s * e
		},
	}
}

// QuadraticHinge is l(x) = x + (gamma/2) max(x, 0)^2, gamma >= 0: linear
// for gains, quadratic penalty on losses. Its range is all of R.
func QuadraticHinge(gamma float64) Loss {
	return Loss{
		Name: "quadratic-hinge",
		Value: func(x float64) float64 {
			p := math.Max(x, 0)
			return x + gamma/2*p*p
		},
		Deriv: func(x float64) float64 { return 1 + gamma*math.Max(x, 0) },
		Inf:   math.Inf(-1), Sup: math.Inf(1),
		Gaussian: func(a, s float64) (float64, float64, float64) {
			z := a / s
			phi, cdf := normPDF(z), normCDF(z)
			// With z = a/s: E max(Y,0) = a Phi(z) + s phi(z),
			// E max(Y,0)^2 = (a^2 + s^2) Phi(z) + a s phi(z), and by Stein's
			// identity E[max(Y,0) U] = s P(Y > 0) = s Phi(z).
			pos1 := a*cdf + s*phi
			pos2 := (a*a+s*s)*cdf + a*s*phi
			return a + gamma/2*pos2, 1 + gamma*pos1, gamma * s * cdf
		},
	}
}

// Expectile is l(x) = (1 - alpha) x + (2 alpha - 1) max(x, 0), 1/2 <= alpha
// < 1: slope 1 - alpha for gains and alpha for losses, whose shortfall risk
// at lambda = 0 is minus the alpha-expectile of X. Its derivative jumps at 0.
// Its range is all of R.
func Expectile(alpha float64) Loss {
	k := 2*alpha - 1
	return Loss{
		Name:  "expectile",
		Value: func(x float64) float64 { return (1-alpha)*x + k*math.Max(x, 0) },
		Deriv: func(x float64) float64 {
			if x > 0 {
				return alpha
			}
			return 1 - alpha
		},
		Inf: math.Inf(-1), Sup: math.Inf(1),
		Gaussian: func(a, s float64) (float64, float64, float64) {
			z := a / s
			phi, cdf := normPDF(z), normCDF(z)
			// E[1{Y>0} U] = phi(a/s).
			return (1-alpha)*a + k*(a*cdf+s*phi), (1 - alpha) + k*cdf, k * phi
		},
	}
}

func normPDF(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
func normCDF(z float64) float64 { return math.Erfc(-z/math.Sqrt2) / 2 }

// check says what is wrong with l for the risk level lambda: a missing
// function, lambda outside l's range, or a derivative that is negative or
// disagrees with l's slopes on a grid of points. For a convex l every
// derivative lies between the one-sided difference quotients, kinks
// included, so the check needs no smoothness.
func (l Loss) check(lambda float64) error {
	name := l.Name
	if name == "" {
		name = "loss"
	}
	switch {
	case l.Value == nil || l.Deriv == nil:
		return fmt.Errorf("ubsr: %s: Value and Deriv must both be set", name)
	case math.IsNaN(lambda) || math.IsInf(lambda, 0):
		return fmt.Errorf("ubsr: %s: risk level lambda = %g is not a finite number", name, lambda)
	case !(lambda > l.Inf && lambda < l.Sup):
		return fmt.Errorf("ubsr: %s: risk level lambda = %g is outside the loss's range (%g, %g): "+
			"no t gives E l(-X - t) = lambda; choose lambda strictly inside it", name, lambda, l.Inf, l.Sup)
	}
	for i := -40; i <= 40; i++ {
		x := 0.5*float64(i) + 0.0371 // off any integer or half-integer kink
		v, d := l.Value(x), l.Deriv(x)
		if math.IsNaN(v) || math.IsNaN(d) {
			return fmt.Errorf("ubsr: %s: l(%g) = %g, l'(%g) = %g: not numbers", name, x, v, x, d)
		}
		if d < 0 {
			return fmt.Errorf("ubsr: %s: l'(%g) = %g is negative: the loss must be nondecreasing", name, x, d)
		}
		h := 1e-4 * math.Max(1, math.Abs(x))
		left, right := (v-l.Value(x-h))/h, (l.Value(x+h)-v)/h
		if math.IsInf(left, 0) || math.IsInf(right, 0) || math.IsNaN(left) || math.IsNaN(right) {
			continue // overflow far out: nothing to compare
		}
		slack := 1e-6*(math.Abs(left)+math.Abs(right)) + 1e-9
		if d < left-slack || d > right+slack {
			return fmt.Errorf("ubsr: %s: l'(%g) = %g lies outside l's one-sided slopes [%g, %g]: "+
				"Deriv is not the derivative of Value, or the loss is not convex", name, x, d, left, right)
		}
	}
	return nil
}
