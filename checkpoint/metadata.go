package checkpoint

import (
	"fmt"
	"strconv"
)

// MetaValue is a type a metadata field may be parsed as.
type MetaValue interface{ int | int64 | float64 | bool }

// ParseMeta parses the __metadata__ field key of meta, read from the file
// at path, as a T. A missing field gives ok = false and no error (older
// files may lack it); a field that does not parse is an error naming the
// file, the field and its value, never a silent zero.
func ParseMeta[T MetaValue](path string, meta map[string]string, key string) (v T, ok bool, err error) {
	s, present := meta[key]
	if !present {
		return v, false, nil
	}
	var kind string
	switch p := any(&v).(type) {
	case *int:
		kind = "an integer"
		*p, err = strconv.Atoi(s)
	case *int64:
		kind = "an integer"
		*p, err = strconv.ParseInt(s, 10, 64)
	case *float64:
		kind = "a number"
		*p, err = strconv.ParseFloat(s, 64)
	case *bool:
		kind = "true or false"
		*p, err = strconv.ParseBool(s)
	}
	if err != nil {
		var zero T
		return zero, false, fmt.Errorf("checkpoint %s: metadata field %q is %q, not %s: the file is damaged or was not written by simclr", path, key, s, kind)
	}
	return v, true, nil
}

// RequireMeta is ParseMeta for a field the file must have: a missing field
// is an error naming the file and the field too.
func RequireMeta[T MetaValue](path string, meta map[string]string, key string) (T, error) {
	v, ok, err := ParseMeta[T](path, meta, key)
	if err == nil && !ok {
		err = fmt.Errorf("checkpoint %s: metadata field %q is missing: the file is damaged or was not written by simclr", path, key)
	}
	return v, err
}
