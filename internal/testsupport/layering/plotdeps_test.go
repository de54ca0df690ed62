package layering

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// The numeric API (package mlmc, its subpackages and package experiment)
// builds without the plotting stack: a user's module that imports it needs
// no plotting, font or PDF module in its go.sum. Figures live in
// experiment/plots.
func TestNumericPackagesHaveNoPlottingDependencies(t *testing.T) {
	// go test puts its own go command first on the test's PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to list the dependencies with: %v", err)
	}
	for _, pkgs := range [][]string{{"./experiment", "./mlmc/sgd"}, {"./mlmc/..."}} {
		cmd := exec.Command(goTool, append([]string{"list", "-deps"}, pkgs...)...)
		cmd.Dir = testenv.ModuleRoot(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", strings.Join(pkgs, " "), err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s lists %d packages: %q", strings.Join(pkgs, " "), len(deps), deps)
		}
		for _, dep := range deps {
			if plotting(dep) {
				t.Errorf("%s depends on %s: plotting belongs in experiment/plots", strings.Join(pkgs, " "), dep)
			}
		}
	}
	// The check sees plotting packages where there are some.
	cmd := exec.Command(goTool, "list", "-deps", "./experiment/plots")
	cmd.Dir = testenv.ModuleRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./experiment/plots: %v\n%s", err, out)
	}
	found := 0
	for _, dep := range strings.Fields(string(out)) {
		if plotting(dep) {
			found++
		}
	}
	if found == 0 {
		t.Errorf("no plotting package among experiment/plots' dependencies: the check cannot see them")
	}
}

// plotting says an import path is part of the plotting stack: gonum's
// plot, a font or a PDF writer.
func plotting(path string) bool {
	return strings.HasPrefix(path, "gonum.org/v1/plot") || strings.Contains(path, "font") ||
		strings.Contains(path, "pdf") || strings.Contains(path, "go-latex")
}
