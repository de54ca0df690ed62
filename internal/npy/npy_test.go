package npy

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

// The exact bytes of version 1.0 headers, spelled out by hand from NumPy's
// format description: magic, version 1.0, little-endian length, the dict
// as Python's repr writes it, spaces up to a multiple of 64 bytes, newline.
// (numpy.save of NumPy 1.24 writes these same bytes for these shapes.)
func TestHeaderBytes(t *testing.T) {
	tests := []struct {
		shape []int
		want  string
	}{
		// 10 + 59 + 1 = 70 bytes before padding: 58 spaces make 128.
		{[]int{3, 4}, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" + strings.Repeat(" ", 58) + "\n"},
		// A one-dimensional shape is a tuple of one: "(5,)".
		{[]int{5}, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }" + strings.Repeat(" ", 60) + "\n"},
		{[]int{}, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (), }" + strings.Repeat(" ", 62) + "\n"},
		{[]int{0, 512}, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (0, 512), }" + strings.Repeat(" ", 56) + "\n"},
		// A dict of 117 bytes ends exactly on 128: NumPy then pads a full 64.
		{append([]int{10}, slices.Repeat([]int{1}, 20)...), "\x93NUMPY\x01\x00\xb6\x00{'descr': '<f4', 'fortran_order': False, 'shape': (10" +
			strings.Repeat(", 1", 20) + "), }" + strings.Repeat(" ", 64) + "\n"},
	}
	for _, tc := range tests {
		got, err := Header(tc.shape)
		if err != nil {
			t.Fatalf("%v: %v", tc.shape, err)
		}
		if string(got) != tc.want {
			t.Errorf("shape %v: header\n%q\nwant\n%q", tc.shape, got, tc.want)
		}
		if len(got)%align != 0 {
			t.Errorf("shape %v: header of %d bytes, not a multiple of %d", tc.shape, len(got), align)
		}
	}
	if _, err := Header([]int{2, -1}); err == nil {
		t.Error("negative dimension: no error")
	}
}

// The padding rule at the boundary: whatever the shape's length, the data
// starts on a multiple of 64 and at least one space precedes the newline.
func TestHeaderPaddingAllLengths(t *testing.T) {
	for n := 0; n < 200; n++ {
		shape := []int{int(math.Pow10(n % 15)), n}
		h, err := Header(shape)
		if err != nil {
			t.Fatal(err)
		}
		if len(h)%align != 0 || h[len(h)-1] != '\n' || h[len(h)-2] != ' ' {
			t.Fatalf("shape %v: header %q", shape, h)
		}
		if got := int(h[8]) | int(h[9])<<8; got != len(h)-10 {
			t.Fatalf("shape %v: length field %d, header holds %d bytes", shape, got, len(h)-10)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	values := []float32{0, 1, -1, 0.1, float32(math.Inf(1)), math.SmallestNonzeroFloat32, math.MaxFloat32, -2.5e-7, 3, 4, 5, 6}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	// In pieces of uneven sizes, as batches arrive.
	for _, part := range [][]float32{values[:1], values[1:7], values[7:]} {
		if err := w.Write(part); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := 128 + 4*len(values); buf.Len() != want {
		t.Errorf("file of %d bytes, want %d", buf.Len(), want)
	}
	got, shape, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shape, []int{3, 4}) || !slices.Equal(got, values) {
		t.Errorf("read back shape %v values %v, want [3 4] %v", shape, got, values)
	}
	// Little-endian float32 right after the header: 1.0 is 00 00 80 3f.
	if b := buf.Bytes()[128+4 : 128+8]; !bytes.Equal(b, []byte{0, 0, 0x80, 0x3f}) {
		t.Errorf("1.0 stored as % x", b)
	}
}

func TestWriterCountsValues(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 2, 2)
	if err := w.Write(make([]float32, 5)); err == nil {
		t.Error("5 values into shape (2, 2): no error")
	}
	w.Write(make([]float32, 3))
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "3 of the 4") {
		t.Errorf("short array closed with %v, want an error saying 3 of the 4", err)
	}
}

// Headers as other NumPy versions write them (keys in another order,
// the growth padding of newer versions, version 2.0) read the same.
func TestReadOtherWriters(t *testing.T) {
	data := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40} // 1, 2
	for _, tc := range []struct {
		name, version, dict string
	}{
		{"reordered", "\x01\x00", "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}"},
		{"growth padding", "\x01\x00", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }                    "},
	} {
		hdr := tc.dict + "\n"
		b := []byte("\x93NUMPY" + tc.version)
		b = append(b, byte(len(hdr)), byte(len(hdr)>>8))
		b = append(append(b, hdr...), data...)
		got, _, err := Read(bytes.NewReader(b))
		if err != nil || !slices.Equal(got, []float32{1, 2}) {
			t.Errorf("%s: %v %v", tc.name, got, err)
		}
	}
	hdr := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"
	v2 := append([]byte("\x93NUMPY\x02\x00"), byte(len(hdr)), 0, 0, 0)
	v2 = append(append(v2, hdr...), data...)
	if got, _, err := Read(bytes.NewReader(v2)); err != nil || !slices.Equal(got, []float32{1, 2}) {
		t.Errorf("version 2.0: %v %v", got, err)
	}
	for _, bad := range []string{
		"not an npy file at all",
		"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'}",
	} {
		if _, _, err := Read(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, 2, 3)
	w.Write([]float32{1, 2, 3, 4, 5, 6})
	w.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		values, shape, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		if n != len(values) {
			t.Fatalf("shape %v with %d values", shape, len(values))
		}
	})
}
