package svhn

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// MATLAB 5.0 MAT-file reading, written from MathWorks' "MAT-File Format"
// document (level 5). A file is a 128-byte header then data elements; each
// element has an 8-byte tag (data type, byte count) or, when the byte count
// is at most 4, a "small element" tag packing both into 4 bytes followed by
// the data. Elements are padded to 8-byte boundaries except miCOMPRESSED,
// whose zlib stream decompresses to one further element (a miMATRIX).
//
// Everything is read as a stream: every declared length is checked against
// what can still be there (the rest of the file, or for compressed data the
// most that deflate can expand the compressed bytes to) before anything is
// allocated, so a corrupt or hostile file costs at most memory in proportion
// to its size, and a truncated one fails with one error.

// MAT data types (the "mi" types of the format document).
const (
	miINT8       = 1
	miUINT8      = 2
	miINT16      = 3
	miUINT16     = 4
	miINT32      = 5
	miUINT32     = 6
	miSINGLE     = 7
	miDOUBLE     = 9
	miINT64      = 12
	miUINT64     = 13
	miMATRIX     = 14
	miCOMPRESSED = 15
)

// MATLAB array classes (the "mx" classes) that hold numbers; lower classes
// are cell, struct, object, char and sparse arrays.
const (
	mxDOUBLE = 6
	mxUINT64 = 15
)

const (
	headerLen = 128
	// maxDeflateRatio bounds how many bytes deflate can produce per input
	// byte (258-byte matches coded in 2 bits give about 1032:1).
	maxDeflateRatio = 1032
	// maxImages bounds N: SVHN's largest file (extra) has 531,131 images.
	maxImages = 10_000_000
	// maxNameLen bounds a variable name (MATLAB allows 63 characters).
	maxNameLen = 4096
	// maxDims bounds the number of dimensions of an array.
	maxDims = 32
)

// Digits is what a SVHN MAT-file holds: images as N x 3 x 32 x 32 (CHW,
// rows top to bottom) and labels 0-9 (the file's 10 mapped to 0).
type Digits struct {
	Pix    []uint8
	Labels []int32
}

// ReadMAT reads an SVHN cropped-digits MAT-file of size bytes from r: a
// MATLAB 5.0 MAT-file holding X (uint8, 32x32x3xN) and y (Nx1, values 1-10).
// Other variables are skipped. Errors do not name the file (ReadFile does).
func ReadMAT(r io.Reader, size int64) (*Digits, error) {
	return readMAT(r, size, nil)
}

// readMAT is ReadMAT with the choice of where X's pixels go: alloc(n)
// returns n bytes to fill (nil means a new slice). Loading train and extra
// together uses it to decode extra straight into the combined array.
func readMAT(r io.Reader, size int64, alloc func(n int64) []uint8) (*Digits, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if size < headerLen {
		return nil, fmt.Errorf("%d bytes, too short for the 128-byte MAT-file header: truncated or not a MAT-file", size)
	}
	var hdr [headerLen]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, fmt.Errorf("reading the MAT-file header: %w", err)
	}
	order, err := parseHeader(hdr[:])
	if err != nil {
		return nil, err
	}
	m := &matFile{order: order, alloc: alloc}
	remaining := size - headerLen
	offset := int64(headerLen)
	for remaining > 0 {
		if remaining < 8 { // writers may pad the end of the file
			if _, err := io.CopyN(io.Discard, br, remaining); err != nil {
				return nil, truncated(offset, err)
			}
			break
		}
		typ, n, small, err := readTag(br, order)
		if err != nil {
			return nil, truncated(offset, err)
		}
		if small != nil { // a small element: its data was inside the tag
			n = 0
		}
		remaining -= 8
		// The element's data, padded to 8 bytes except compressed data.
		padded := int64(n)
		if typ != miCOMPRESSED {
			padded = pad8(int64(n))
		}
		if int64(n) > remaining {
			return nil, fmt.Errorf("truncated: the element at byte %d declares %d bytes but only %d remain in the file; download it again",
				offset, n, remaining)
		}
		if padded > remaining { // missing final padding only
			padded = remaining
		}
		body := io.LimitReader(br, int64(n))
		switch typ {
		case miCOMPRESSED:
			err = m.readCompressed(body, int64(n))
		case miMATRIX:
			err = m.readMatrix(body, int64(n))
		}
		if err != nil {
			return nil, fmt.Errorf("element at byte %d: %w", offset, err)
		}
		// Skip what the element did not consume, and its padding.
		if _, err := io.CopyN(io.Discard, br, padded-int64(n)+drain(body)); err != nil {
			return nil, truncated(offset, err)
		}
		remaining -= padded
		offset += 8 + padded
	}
	return m.result()
}

// drain returns how many bytes of a LimitReader are left unread.
func drain(r io.Reader) int64 { return r.(*io.LimitedReader).N }

func truncated(offset int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated: the file ends inside the element at byte %d, before its stated size; download it again", offset)
	}
	return fmt.Errorf("element at byte %d: %w", offset, err)
}

func pad8(n int64) int64 { return (n + 7) &^ 7 }

// parseHeader checks the descriptive text, version and endian indicator.
func parseHeader(hdr []byte) (binary.ByteOrder, error) {
	text := hdr[:116]
	switch {
	case bytes.HasPrefix(text, []byte("MATLAB 7.3 MAT-file")):
		return nil, errors.New("a MATLAB 7.3 (HDF5) MAT-file: this reader needs the MATLAB 5.0 format of the official SVHN files (save with -v7)")
	case !bytes.HasPrefix(text, []byte("MATLAB 5.0 MAT-file")):
		return nil, errors.New(`no "MATLAB 5.0 MAT-file" header: not a MATLAB 5.0 MAT-file (the official SVHN files are)`)
	}
	var order binary.ByteOrder
	switch string(hdr[126:128]) {
	case "IM":
		order = binary.LittleEndian
	case "MI":
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("endian indicator %q, want \"IM\" or \"MI\": corrupt MAT-file header", hdr[126:128])
	}
	if v := order.Uint16(hdr[124:126]); v != 0x0100 {
		return nil, fmt.Errorf("MAT-file version 0x%04x, want 0x0100: corrupt or unsupported MAT-file", v)
	}
	return order, nil
}

// readTag reads an element tag. For a small element (byte count <= 4 packed
// in the first word) the data bytes are returned in small and consumed.
func readTag(r io.Reader, order binary.ByteOrder) (typ, n uint32, small []byte, err error) {
	var tag [8]byte
	if _, err := io.ReadFull(r, tag[:]); err != nil {
		return 0, 0, nil, err
	}
	first := order.Uint32(tag[:4])
	if first>>16 != 0 {
		typ, n = first&0xffff, first>>16
		if n > 4 {
			return 0, 0, nil, fmt.Errorf("small data element declares %d bytes, at most 4 fit: corrupt MAT-file", n)
		}
		return typ, n, tag[4 : 4+n], nil
	}
	return first, order.Uint32(tag[4:]), nil, nil
}

// matFile collects the variables X and y as they are read.
type matFile struct {
	order  binary.ByteOrder
	alloc  func(n int64) []uint8 // where X goes; nil: a new slice
	pix    []uint8               // from X
	haveX  bool
	labels []int32 // from y
	haveY  bool
}

// readCompressed reads a miCOMPRESSED element of n bytes: a zlib stream of
// one miMATRIX element, whose declared size must fit what n compressed bytes
// can decompress to.
func (m *matFile) readCompressed(r io.Reader, n int64) error {
	zr, err := zlib.NewReader(r)
	if err != nil {
		return fmt.Errorf("compressed variable: %w: corrupt; download the file again", err)
	}
	defer zr.Close()
	inner := bufio.NewReaderSize(zr, 1<<16)
	typ, size, _, err := readTag(inner, m.order)
	if err != nil {
		return decompressErr(err)
	}
	if typ != miMATRIX {
		return fmt.Errorf("compressed element holds data type %d, want a miMATRIX (14): corrupt or unsupported MAT-file", typ)
	}
	if limit := maxDeflateRatio * n; int64(size) > limit {
		return fmt.Errorf("compressed variable declares %d bytes but %d compressed bytes decompress to at most %d: corrupt MAT-file",
			size, n, limit)
	}
	body := io.LimitReader(inner, int64(size))
	if err := m.readMatrix(body, int64(size)); err != nil {
		return decompressErr(err)
	}
	// Read to the end of the stream so zlib verifies its checksum.
	if _, err := io.Copy(io.Discard, inner); err != nil {
		return decompressErr(err)
	}
	return nil
}

func decompressErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("compressed variable ends early: the file is truncated or corrupt; download it again")
	}
	var corrupt flate.CorruptInputError
	if errors.As(err, &corrupt) || errors.Is(err, zlib.ErrChecksum) {
		return fmt.Errorf("decompressing a variable: %v: the file is corrupt; download it again", err)
	}
	return err
}

// subReader reads the sub-elements of a miMATRIX, tracking the bytes left
// in it so every declared length is checked before it is trusted.
type subReader struct {
	r     io.Reader
	order binary.ByteOrder
	left  int64
}

// next reads a sub-element tag; for small elements the data is returned.
// The caller must consume the n data bytes (and padding) through read/skip.
func (s *subReader) next() (typ uint32, n int64, small []byte, err error) {
	if s.left < 8 {
		return 0, 0, nil, fmt.Errorf("array ends inside a sub-element tag (%d bytes left): corrupt MAT-file", s.left)
	}
	typ, n32, small, err := readTag(s.r, s.order)
	if err != nil {
		return 0, 0, nil, err
	}
	s.left -= 8
	if small != nil {
		return typ, int64(n32), small, nil
	}
	if pad8(int64(n32)) > s.left {
		return 0, 0, nil, fmt.Errorf("sub-element declares %d bytes but the array has %d left: corrupt MAT-file", n32, s.left)
	}
	return typ, int64(n32), nil, nil
}

// read reads n data bytes and their padding into a new slice (n is bounded
// by the caller).
func (s *subReader) read(n int64) ([]byte, error) {
	b := make([]byte, pad8(n))
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, err
	}
	s.left -= pad8(n)
	return b[:n], nil
}

// readMatrix reads a miMATRIX element body of n bytes: array flags,
// dimensions, name, then the real part. Only X and y are kept.
func (m *matFile) readMatrix(r io.Reader, n int64) error {
	s := &subReader{r: r, order: m.order, left: n}
	// Array flags: miUINT32, 8 bytes; class in the low byte of the first word.
	typ, size, _, err := s.next()
	if err != nil {
		return err
	}
	if typ != miUINT32 || size != 8 {
		return fmt.Errorf("array flags have data type %d and %d bytes, want miUINT32 (6) and 8: corrupt MAT-file", typ, size)
	}
	flags, err := s.read(8)
	if err != nil {
		return err
	}
	word := m.order.Uint32(flags[:4])
	class := word & 0xff
	isComplex := word&0x0800 != 0
	// Dimensions: miINT32, at least two.
	typ, size, small, err := s.next()
	if err != nil {
		return err
	}
	if typ != miINT32 || size%4 != 0 || size < 8 || size > 4*maxDims {
		return fmt.Errorf("array dimensions have data type %d and %d bytes, want miINT32 (5) with 2 to %d dimensions: corrupt MAT-file",
			typ, size, maxDims)
	}
	raw := small
	if raw == nil {
		if raw, err = s.read(size); err != nil {
			return err
		}
	}
	dims := make([]int64, size/4)
	for i := range dims {
		dims[i] = int64(int32(m.order.Uint32(raw[4*i:])))
		if dims[i] < 0 {
			return fmt.Errorf("array dimension %d is %d: corrupt MAT-file", i, dims[i])
		}
	}
	// Name: miINT8 (often a small element).
	typ, size, small, err = s.next()
	if err != nil {
		return err
	}
	if typ != miINT8 || size > maxNameLen {
		return fmt.Errorf("array name has data type %d and %d bytes, want miINT8 (1) and at most %d: corrupt MAT-file", typ, size, maxNameLen)
	}
	name := small
	if name == nil {
		if name, err = s.read(size); err != nil {
			return err
		}
	}
	if string(name) != "X" && string(name) != "y" {
		return nil // another variable: the caller skips the rest
	}
	if class < mxDOUBLE || class > mxUINT64 {
		return fmt.Errorf("variable %s has MATLAB class %d, not a numeric array: not an SVHN file", name, class)
	}
	if isComplex {
		return fmt.Errorf("variable %s is complex: not an SVHN file", name)
	}
	if string(name) == "X" {
		return m.readX(s, dims)
	}
	return m.readY(s, dims)
}

// readX streams X (32x32x3xN uint8, column-major: row fastest, then
// column, channel, image) into N x 3 x 32 x 32 row-major pixels.
func (m *matFile) readX(s *subReader, dims []int64) error {
	if m.haveX {
		return errors.New("a second variable X: not an SVHN file")
	}
	if len(dims) != 4 || dims[0] != 32 || dims[1] != 32 || dims[2] != 3 {
		return fmt.Errorf("variable X has dimensions %v, want 32x32x3xN (SVHN cropped digits)", dims)
	}
	n := dims[3]
	if n < 1 || n > maxImages {
		return fmt.Errorf("variable X holds %d images, want 1 to %d: corrupt MAT-file", n, maxImages)
	}
	typ, size, _, err := s.next()
	if err != nil {
		return err
	}
	if typ != miUINT8 {
		return fmt.Errorf("variable X is stored as data type %d, this reader needs uint8 pixels (miUINT8, 2) as in the official SVHN files", typ)
	}
	const imageBytes = 3 * 32 * 32
	if size != n*imageBytes {
		return fmt.Errorf("variable X declares %d data bytes, want %d for %d images: corrupt MAT-file", size, n*imageBytes, n)
	}
	// size <= s.left was checked by next, so this allocation is bounded by
	// the declared and checked array size.
	var pix []uint8
	if m.alloc != nil {
		pix = m.alloc(size)
	} else {
		pix = make([]uint8, size)
	}
	var src [imageBytes]byte
	for i := int64(0); i < n; i++ {
		if _, err := io.ReadFull(s.r, src[:]); err != nil {
			return err
		}
		dst := pix[i*imageBytes : (i+1)*imageBytes]
		for ch := 0; ch < 3; ch++ {
			plane := src[ch*1024 : (ch+1)*1024]
			out := dst[ch*1024 : (ch+1)*1024]
			for col := 0; col < 32; col++ {
				column := plane[col*32 : col*32+32]
				for row, v := range column {
					out[row*32+col] = v
				}
			}
		}
	}
	s.left -= size
	m.pix, m.haveX = pix, true
	return nil
}

// readY reads y (Nx1 or 1xN, any numeric storage type) as labels: values
// 1-10 with 10 standing for the digit 0.
func (m *matFile) readY(s *subReader, dims []int64) error {
	if m.haveY {
		return errors.New("a second variable y: not an SVHN file")
	}
	if len(dims) != 2 || (dims[1] != 1 && dims[0] != 1) {
		return fmt.Errorf("y has dimensions %v, want Nx1", dims)
	}
	n := dims[0] * dims[1]
	if n < 1 || n > maxImages {
		return fmt.Errorf("y holds %d labels, want 1 to %d: corrupt MAT-file", n, maxImages)
	}
	typ, size, small, err := s.next()
	if err != nil {
		return err
	}
	width := map[uint32]int64{miINT8: 1, miUINT8: 1, miINT16: 2, miUINT16: 2, miINT32: 4, miUINT32: 4,
		miSINGLE: 4, miDOUBLE: 8, miINT64: 8, miUINT64: 8}[typ]
	if width == 0 {
		return fmt.Errorf("y is stored as data type %d, not a numeric type: corrupt MAT-file", typ)
	}
	if size != n*width {
		return fmt.Errorf("y declares %d data bytes, want %d for %d labels of %d bytes: corrupt MAT-file", size, n*width, n, width)
	}
	raw := small
	if raw == nil {
		if raw, err = s.read(size); err != nil { // bounded by s.left, checked in next
			return err
		}
	}
	labels := make([]int32, n)
	for i := range labels {
		v := decodeNumber(raw[int64(i)*width:], typ, m.order)
		if v != math.Trunc(v) || v < 1 || v > 10 {
			return fmt.Errorf("label %d (0-based) is %v, SVHN labels are 1-10 (10 for the digit 0): not an SVHN file", i, v)
		}
		labels[i] = int32(v) % 10
	}
	m.labels, m.haveY = labels, true
	return nil
}

// decodeNumber converts one stored number of type typ to float64.
func decodeNumber(b []byte, typ uint32, order binary.ByteOrder) float64 {
	switch typ {
	case miINT8:
		return float64(int8(b[0]))
	case miUINT8:
		return float64(b[0])
	case miINT16:
		return float64(int16(order.Uint16(b)))
	case miUINT16:
		return float64(order.Uint16(b))
	case miINT32:
		return float64(int32(order.Uint32(b)))
	case miUINT32:
		return float64(order.Uint32(b))
	case miSINGLE:
		return float64(math.Float32frombits(order.Uint32(b)))
	case miDOUBLE:
		return math.Float64frombits(order.Uint64(b))
	case miINT64:
		return float64(int64(order.Uint64(b)))
	case miUINT64:
		return float64(order.Uint64(b))
	}
	panic(fmt.Sprintf("svhn: decodeNumber of non-numeric type %d", typ))
}

// result checks that X and y were both found and agree.
func (m *matFile) result() (*Digits, error) {
	switch {
	case !m.haveX && !m.haveY:
		return nil, errors.New("no variables X and y: not an SVHN cropped-digits (*_32x32.mat) file")
	case !m.haveX:
		return nil, errors.New("no variable X (the images): not an SVHN cropped-digits file")
	case !m.haveY:
		return nil, errors.New("no variable y (the labels): not an SVHN cropped-digits file")
	}
	if n := len(m.pix) / 3072; n != len(m.labels) {
		return nil, fmt.Errorf("variable X holds %d images but y %d labels: corrupt MAT-file", n, len(m.labels))
	}
	return &Digits{Pix: m.pix, Labels: m.labels}, nil
}
