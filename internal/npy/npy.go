// Package npy writes and reads float32 arrays in NumPy's .npy format,
// version 1.0, so that numpy.load (and anything else that reads .npy files)
// opens the features `simclr embed` writes.
//
// The format (NumPy's format.py, "Format Version 1.0"): the magic bytes
// "\x93NUMPY", the version bytes 1 and 0, a little-endian uint16 giving the
// length of the header, then the header itself: an ASCII Python dict literal
// "{'descr': '<f4', 'fortran_order': False, 'shape': (N, D), }" padded with
// spaces and ended by a newline so that the data that follows starts on a
// multiple of 64 bytes. The data is the array in C (row-major) order,
// little-endian float32.
package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// magic opens every .npy file; version 1.0 follows it.
const magic = "\x93NUMPY"

// maxHeader bounds the header length Read accepts (NumPy's own reader
// refuses headers above 10,000 bytes by default).
const maxHeader = 1 << 16

// align is the multiple of bytes at which the data starts (NumPy's
// ARRAY_ALIGN).
const align = 64

// Header returns the complete version 1.0 header (magic, version, length
// and dict) of a little-endian float32 array of the given shape in C
// order. Every dimension must be non-negative.
func Header(shape []int) ([]byte, error) {
	dims := make([]string, len(shape))
	for i, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("npy: dimension %d of shape %v is negative", i, shape)
		}
		dims[i] = strconv.Itoa(d)
	}
	// Python's repr of a tuple: "()", "(5,)", "(5, 3)".
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': " + tuple + ", }"
	// Pad with spaces so that magic (6) + version (2) + length (2) + dict +
	// padding + newline is a multiple of align; NumPy always pads by at
	// least one space.
	pad := align - (len(magic)+2+2+len(dict)+1)%align
	n := len(dict) + pad + 1
	if n > math.MaxUint16 {
		return nil, fmt.Errorf("npy: shape %v needs a header of %d bytes, more than version 1.0 holds", shape, n)
	}
	var b bytes.Buffer
	b.WriteString(magic)
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(n))
	b.WriteString(dict)
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// Writer streams a float32 array of a shape fixed in advance into an .npy
// stream: the header first, then the values in C order as they come.
type Writer struct {
	w       *bufio.Writer
	shape   []int
	want    int64 // number of values the shape holds
	written int64
	buf     [4]byte
}

// NewWriter writes the header of a float32 array of the given shape to w
// and returns the writer of its values. Close checks that exactly the
// shape's number of values was written.
func NewWriter(w io.Writer, shape ...int) (*Writer, error) {
	h, err := Header(shape)
	if err != nil {
		return nil, err
	}
	want := int64(1)
	for _, d := range shape {
		want *= int64(d)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.Write(h); err != nil {
		return nil, err
	}
	return &Writer{w: bw, shape: append([]int(nil), shape...), want: want}, nil
}

// Write appends values (the next values of the array in C order).
func (w *Writer) Write(values []float32) error {
	if w.written+int64(len(values)) > w.want {
		return fmt.Errorf("npy: %d values written to an array of shape %v, which holds %d", w.written+int64(len(values)), w.shape, w.want)
	}
	for _, v := range values {
		binary.LittleEndian.PutUint32(w.buf[:], math.Float32bits(v))
		if _, err := w.w.Write(w.buf[:]); err != nil {
			return err
		}
	}
	w.written += int64(len(values))
	return nil
}

// Close flushes the values to the underlying writer (which it does not
// close) and reports an array left short of its shape.
func (w *Writer) Close() error {
	if err := w.w.Flush(); err != nil {
		return err
	}
	if w.written != w.want {
		return fmt.Errorf("npy: %d of the %d values of an array of shape %v were written", w.written, w.want, w.shape)
	}
	return nil
}

// Read reads a version 1.0 (or 2.0) .npy stream holding a little-endian
// float32 array in C order, as Writer and numpy.save write one, and returns
// its values and shape.
func Read(r io.Reader) (values []float32, shape []int, err error) {
	br := bufio.NewReader(r)
	pre := make([]byte, len(magic)+2)
	if _, err := io.ReadFull(br, pre); err != nil {
		return nil, nil, fmt.Errorf("npy: read magic: %w", err)
	}
	if string(pre[:len(magic)]) != magic {
		return nil, nil, errors.New("npy: not an .npy file (no \\x93NUMPY magic)")
	}
	var n int
	switch major := pre[len(magic)]; major {
	case 1:
		var l uint16
		if err := binary.Read(br, binary.LittleEndian, &l); err != nil {
			return nil, nil, fmt.Errorf("npy: read header length: %w", err)
		}
		n = int(l)
	case 2:
		var l uint32
		if err := binary.Read(br, binary.LittleEndian, &l); err != nil {
			return nil, nil, fmt.Errorf("npy: read header length: %w", err)
		}
		n = int(l)
	default:
		return nil, nil, fmt.Errorf("npy: format version %d.%d is not supported (1.0 and 2.0 are)", major, pre[len(magic)+1])
	}
	if n > maxHeader {
		return nil, nil, fmt.Errorf("npy: header of %d bytes; a float32 array's needs far fewer than %d", n, maxHeader)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, nil, fmt.Errorf("npy: read header: %w", err)
	}
	shape, err = parseHeader(string(hdr))
	if err != nil {
		return nil, nil, err
	}
	count := 1
	for _, d := range shape {
		if d > 0 && count > math.MaxInt/4/d {
			return nil, nil, fmt.Errorf("npy: shape %v holds too many values", shape)
		}
		count *= d
	}
	// Read what is there rather than allocate what the header claims, so
	// that a damaged header cannot ask for gigabytes.
	raw, err := io.ReadAll(io.LimitReader(br, int64(4*count)))
	if err != nil {
		return nil, nil, fmt.Errorf("npy: read %d values of shape %v: %w", count, shape, err)
	}
	if len(raw) != 4*count {
		return nil, nil, fmt.Errorf("npy: the file ends after %d of the %d values of shape %v", len(raw)/4, count, shape)
	}
	values = make([]float32, count)
	for i := range values {
		values[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, nil, fmt.Errorf("npy: data continues past the %d values of shape %v", count, shape)
	}
	return values, shape, nil
}

// parseHeader reads the shape from a header dict, requiring the dtype and
// order Read supports. It accepts the keys in any order and any spacing,
// as NumPy's own writers of different versions produce.
func parseHeader(h string) ([]int, error) {
	h = strings.TrimSpace(h)
	if !strings.HasPrefix(h, "{") || !strings.HasSuffix(h, "}") {
		return nil, fmt.Errorf("npy: header %q is not a dict", h)
	}
	field := func(key string) (string, bool) {
		_, rest, ok := strings.Cut(h, "'"+key+"':")
		return strings.TrimSpace(rest), ok
	}
	descr, ok := field("descr")
	if !ok || !strings.HasPrefix(descr, "'<f4'") {
		return nil, fmt.Errorf("npy: header %q: only little-endian float32 ('<f4') arrays are supported", h)
	}
	order, ok := field("fortran_order")
	if !ok || !strings.HasPrefix(order, "False") {
		return nil, fmt.Errorf("npy: header %q: only C-order arrays are supported", h)
	}
	s, ok := field("shape")
	if !ok || !strings.HasPrefix(s, "(") {
		return nil, fmt.Errorf("npy: header %q has no shape tuple", h)
	}
	s, _, ok = strings.Cut(s[1:], ")")
	if !ok {
		return nil, fmt.Errorf("npy: header %q: unterminated shape", h)
	}
	var shape []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("npy: header %q: bad dimension %q", h, f)
		}
		shape = append(shape, d)
	}
	return shape, nil
}
