package svhn

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"math"
)

// A small MAT-file writer for tests: it writes what the format document
// describes (and what MATLAB writes), with switches to produce the edge
// cases and corruptions a reader must handle.

type matVar struct {
	name     string
	class    uint32 // mx class, e.g. 9 for uint8, 6 for double
	complex  bool
	dims     []int32
	dataType uint32 // mi type of the real part
	data     []byte // real part, already in the file's byte order
	// sizeDelta is added to the declared miMATRIX size (to corrupt it).
	sizeDelta int64
}

type matOptions struct {
	bigEndian  bool
	compressed bool
	text       string // header text; "" means a MATLAB 5.0 header
	version    uint16 // 0 means 0x0100
	endian     string // "" means the right indicator
}

// byteOrder is what the writer needs of binary.LittleEndian / BigEndian.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func (o matOptions) order() byteOrder {
	if o.bigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// element appends a tag and data padded to 8 bytes; small elements (<= 4
// bytes) use the packed tag form.
func element(b []byte, order byteOrder, typ uint32, data []byte) []byte {
	if len(data) <= 4 && len(data) > 0 {
		b = order.AppendUint32(b, uint32(len(data))<<16|typ)
		var pad [4]byte
		copy(pad[:], data)
		return append(b, pad[:]...)
	}
	b = order.AppendUint32(b, typ)
	b = order.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

func matrix(order byteOrder, v matVar) []byte {
	var body []byte
	flags := v.class
	if v.complex {
		flags |= 0x0800
	}
	fl := order.AppendUint32(nil, flags)
	fl = order.AppendUint32(fl, 0)
	body = element(body, order, miUINT32, fl)
	var dims []byte
	for _, d := range v.dims {
		dims = order.AppendUint32(dims, uint32(d))
	}
	body = element(body, order, miINT32, dims)
	body = element(body, order, miINT8, []byte(v.name))
	body = element(body, order, v.dataType, v.data)
	if v.complex {
		body = element(body, order, v.dataType, v.data)
	}
	out := order.AppendUint32(nil, miMATRIX)
	out = order.AppendUint32(out, uint32(int64(len(body))+v.sizeDelta))
	return append(out, body...)
}

func writeMAT(o matOptions, vars ...matVar) []byte {
	order := o.order()
	hdr := make([]byte, headerLen)
	for i := range hdr[:116] {
		hdr[i] = ' '
	}
	text := o.text
	if text == "" {
		text = "MATLAB 5.0 MAT-file, Platform: test, Created by: matwriter_test.go"
	}
	copy(hdr, text)
	version := o.version
	if version == 0 {
		version = 0x0100
	}
	order.PutUint16(hdr[124:], version)
	endian := o.endian
	if endian == "" {
		endian = "IM"
		if o.bigEndian {
			endian = "MI"
		}
	}
	copy(hdr[126:], endian)
	b := hdr
	for _, v := range vars {
		m := matrix(order, v)
		if !o.compressed {
			b = append(b, m...)
			continue
		}
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(m)
		w.Close()
		b = order.AppendUint32(b, miCOMPRESSED)
		b = order.AppendUint32(b, uint32(z.Len()))
		b = append(b, z.Bytes()...)
	}
	return b
}

// pixel is the test images' value at image i, channel ch, row r, column c.
func pixel(i, ch, r, c int) byte { return byte(i*37 + ch*101 + r*7 + c*3) }

// xVar is X for n images of the pixel pattern, column-major 32x32x3xN.
func xVar(n int) matVar {
	data := make([]byte, 0, n*3072)
	for i := 0; i < n; i++ {
		for ch := 0; ch < 3; ch++ {
			for c := 0; c < 32; c++ {
				for r := 0; r < 32; r++ {
					data = append(data, pixel(i, ch, r, c))
				}
			}
		}
	}
	return matVar{name: "X", class: 9, dims: []int32{32, 32, 3, int32(n)}, dataType: miUINT8, data: data}
}

// yVar is y holding labels (values 1-10) stored as uint8.
func yVar(labels ...byte) matVar {
	return matVar{name: "y", class: 9, dims: []int32{int32(len(labels)), 1}, dataType: miUINT8, data: labels}
}

// yDouble is y holding labels as MATLAB doubles.
func yDouble(order byteOrder, labels ...float64) matVar {
	var data []byte
	for _, l := range labels {
		data = order.AppendUint64(data, math.Float64bits(l))
	}
	return matVar{name: "y", class: 6, dims: []int32{int32(len(labels)), 1}, dataType: miDOUBLE, data: data}
}
