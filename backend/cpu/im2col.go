package cpu

import "github.com/simclr-go/simclr/tensor"

// validRange is the range [lo, hi) of output columns o (0 <= o < outLen)
// whose input column o*stride - pad + off lies in [0, inLen).
func validRange(outLen, inLen, stride, pad, off int) (lo, hi int) {
	// o*stride >= pad-off  and  o*stride <= inLen-1+pad-off
	lo = max(0, ceilDiv(pad-off, stride))
	hi = min(outLen, floorDiv(inLen-1+pad-off, stride)+1)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func ceilDiv(a, b int) int {
	if a <= 0 {
		return -((-a) / b)
	}
	return (a + b - 1) / b
}

func floorDiv(a, b int) int {
	if a >= 0 {
		return a / b
	}
	return -((-a + b - 1) / b)
}

// im2col fills rows [qlo,qhi) of col (CRS, cnt*P) from images
// n0..n0+cnt-1 of x.
func im2col(s tensor.ConvShape, x []float32, n0, cnt int, col []float32, qlo, qhi int) {
	OH, OW := s.OutH(), s.OutW()
	P, HW, RS := OH*OW, s.H*s.W, s.R*s.S
	M := cnt * P
	for q := qlo; q < qhi; q++ {
		c, r, sx := q/RS, (q/s.S)%s.R, q%s.S
		wlo, whi := validRange(OW, s.W, s.Stride, s.Pad, sx)
		hlo, hhi := validRange(OH, s.H, s.Stride, s.Pad, r)
		for i := 0; i < cnt; i++ {
			plane := x[((n0+i)*s.C+c)*HW : ((n0+i)*s.C+c+1)*HW]
			dst := col[q*M+i*P : q*M+(i+1)*P]
			clear(dst[:hlo*OW])
			clear(dst[hhi*OW:])
			if sameWidth(s) {
				im2colShifted(dst, plane, s, OW, r, sx, hlo, hhi, wlo, whi)
				continue
			}
			for oh := hlo; oh < hhi; oh++ {
				ih := oh*s.Stride - s.Pad + r
				row := dst[oh*OW : (oh+1)*OW]
				src := plane[ih*s.W : (ih+1)*s.W]
				clearEdges(row, wlo, whi)
				if s.Stride == 1 {
					copy(row[wlo:whi], src[wlo-s.Pad+sx:])
					continue
				}
				iw := wlo*s.Stride - s.Pad + sx
				for ow := wlo; ow < whi; ow++ {
					row[ow] = src[iw]
					iw += s.Stride
				}
			}
		}
	}
}

// sameWidth reports whether output rows are as wide as input rows at
// stride 1 (a "same" convolution, S = 2 Pad + 1): then one kernel tap
// reads the input plane shifted by a constant, dst[j] = plane[j + off]
// with off = (r-Pad) W + (s-Pad), except in the columns where the shift
// wraps from one row into the next, which are padding.
func sameWidth(s tensor.ConvShape) bool {
	return s.Stride == 1 && s.S == 2*s.Pad+1
}

// im2colShifted fills rows [hlo,hhi) of one image's row of col for tap
// (r,sx) of a sameWidth convolution with one copy, then zeroes the padding
// columns [0,wlo) and [whi,OW) of each row.
func im2colShifted(dst, plane []float32, s tensor.ConvShape, OW, r, sx, hlo, hhi, wlo, whi int) {
	off := (r-s.Pad)*s.W + sx - s.Pad
	// On planes smaller than the kernel a tap may read nothing at all
	// (j1 <= j0); its rows are then all padding, cleared below.
	if j0, j1 := max(hlo*OW, -off), min(hhi*OW, len(plane)-off); j1 > j0 {
		copy(dst[j0:j1], plane[j0+off:j1+off])
	}
	for oh := hlo; oh < hhi; oh++ {
		row := dst[oh*OW : (oh+1)*OW]
		clearEdges(row, wlo, whi)
	}
}

// col2im writes into channels [clo,chi) of dx[n0:n0+cnt] the sum of dcol
// (CRS, cnt*P) over the kernel positions that read each input element: the
// adjoint of im2col. dcol is scratch: its padding entries may be zeroed.
func col2im(s tensor.ConvShape, dcol []float32, n0, cnt int, dx []float32, clo, chi int) {
	OH, OW := s.OutH(), s.OutW()
	P, HW := OH*OW, s.H*s.W
	M := cnt * P
	for c := clo; c < chi; c++ {
		for i := 0; i < cnt; i++ {
			plane := dx[((n0+i)*s.C+c)*HW : ((n0+i)*s.C+c+1)*HW]
			clear(plane)
			for r := 0; r < s.R; r++ {
				hlo, hhi := validRange(OH, s.H, s.Stride, s.Pad, r)
				for sx := 0; sx < s.S; sx++ {
					wlo, whi := validRange(OW, s.W, s.Stride, s.Pad, sx)
					q := (c*s.R+r)*s.S + sx
					src := dcol[q*M+i*P : q*M+(i+1)*P]
					if sameWidth(s) {
						col2imShifted(plane, src, s, OW, r, sx, hlo, hhi, wlo, whi)
						continue
					}
					for oh := hlo; oh < hhi; oh++ {
						ih := oh*s.Stride - s.Pad + r
						row := src[oh*OW : (oh+1)*OW]
						dst := plane[ih*s.W : (ih+1)*s.W]
						if s.Stride == 1 {
							addTo(dst[wlo-s.Pad+sx:], row[wlo:whi])
							continue
						}
						iw := wlo*s.Stride - s.Pad + sx
						for ow := wlo; ow < whi; ow++ {
							dst[iw] += row[ow]
							iw += s.Stride
						}
					}
				}
			}
		}
	}
}

// col2imShifted is the adjoint of im2colShifted: it zeroes the padding
// columns of src (so that the wrapped entries add nothing) and adds rows
// [hlo,hhi) into the plane shifted by off in one pass.
func col2imShifted(plane, src []float32, s tensor.ConvShape, OW, r, sx, hlo, hhi, wlo, whi int) {
	for oh := hlo; oh < hhi; oh++ {
		row := src[oh*OW : (oh+1)*OW]
		clearEdges(row, wlo, whi)
	}
	off := (r-s.Pad)*s.W + sx - s.Pad
	if j0, j1 := max(hlo*OW, -off), min(hhi*OW, len(plane)-off); j1 > j0 {
		addTo(plane[j0+off:], src[j0:j1])
	}
}

// clearEdges zeroes row[:lo] and row[hi:], the padding columns of one
// output row: usually a single element each (pad 1), where an index loop
// costs a fraction of two calls into memclr per row.
func clearEdges(row []float32, lo, hi int) {
	for j := 0; j < lo; j++ {
		row[j] = 0
	}
	for j := hi; j < len(row); j++ {
		row[j] = 0
	}
}

// addTo adds src into dst[:len(src)].
func addTo(dst, src []float32) {
	dst = dst[:len(src)]
	i := 0
	for ; i+4 <= len(src); i += 4 {
		d, v := dst[i:i+4:i+4], src[i:i+4:i+4]
		d[0] += v[0]
		d[1] += v[1]
		d[2] += v[2]
		d[3] += v[3]
	}
	for ; i < len(src); i++ {
		dst[i] += src[i]
	}
}
