package testenv

import "testing"

// recorder is a testing.TB that records whether Missing skipped or failed.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Skip(...any)           { r.skipped = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestMissingFailsOnlyUnderCI(t *testing.T) {
	for _, tc := range []struct {
		ci           string
		skip, failed bool
	}{
		{"", true, false},
		{"false", true, false},
		{"1", true, false}, // only the exact value CI runners set counts
		{"true", false, true},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			Missing(r, "no %s here", "OpenBLAS")
			if r.skipped != tc.skip || r.failed != tc.failed {
				t.Errorf("CI=%q: skipped %v, failed %v; want skipped %v, failed %v", tc.ci, r.skipped, r.failed, tc.skip, tc.failed)
			}
		})
	}
}
