package checkpoint

import (
	"strings"
	"testing"
)

func TestParseMeta(t *testing.T) {
	meta := map[string]string{"iteration": "12", "bad_int": "12x", "wall": "3.5", "bad_float": "fast",
		"finished": "true", "bad_bool": "maybe", "empty": "", "big": "9007199254740993"}
	const path = "run/state.safetensors"
	tests := []struct {
		name    string
		parse   func() (any, bool, error)
		want    any
		wantOK  bool
		wantErr string // "" for none
	}{
		{"int", func() (any, bool, error) { return ParseMeta[int](path, meta, "iteration") }, 12, true, ""},
		{"int64", func() (any, bool, error) { return ParseMeta[int64](path, meta, "big") }, int64(9007199254740993), true, ""},
		{"float", func() (any, bool, error) { return ParseMeta[float64](path, meta, "wall") }, 3.5, true, ""},
		{"bool", func() (any, bool, error) { return ParseMeta[bool](path, meta, "finished") }, true, true, ""},
		{"missing", func() (any, bool, error) { return ParseMeta[int](path, meta, "absent") }, 0, false, ""},
		{"corrupt int", func() (any, bool, error) { return ParseMeta[int](path, meta, "bad_int") }, 0, false, `checkpoint run/state.safetensors: metadata field "bad_int" is "12x", not an integer`},
		{"float as int", func() (any, bool, error) { return ParseMeta[int](path, meta, "wall") }, 0, false, `field "wall" is "3.5", not an integer`},
		{"corrupt float", func() (any, bool, error) { return ParseMeta[float64](path, meta, "bad_float") }, 0.0, false, `field "bad_float" is "fast", not a number`},
		{"corrupt bool", func() (any, bool, error) { return ParseMeta[bool](path, meta, "bad_bool") }, false, false, `field "bad_bool" is "maybe", not true or false`},
		{"empty int", func() (any, bool, error) { return ParseMeta[int](path, meta, "empty") }, 0, false, `field "empty" is "", not an integer`},
		{"required missing", func() (any, bool, error) { v, err := RequireMeta[int](path, meta, "absent"); return v, err == nil, err },
			0, false, `checkpoint run/state.safetensors: metadata field "absent" is missing`},
	}
	for _, tc := range tests {
		v, ok, err := tc.parse()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
		} else if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if v != tc.want || ok != tc.wantOK {
			t.Errorf("%s: (%v, %v), want (%v, %v)", tc.name, v, ok, tc.want, tc.wantOK)
		}
	}
}
