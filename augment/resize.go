package augment

import "fmt"

// axisCoeffs holds the resampling taps of one axis: output o reads inputs
// start[o] .. start[o]+count[o]-1 (crop-relative) with weights
// weight[o*stride : o*stride+count[o]]. When no output needs more than two
// taps (always the case when enlarging, as RandomResizedCrop does on
// same-size output), the taps are also laid out as pairs: output o is
// w0[o] in[i0[o]] + w1[o] in[i1[o]].
type axisCoeffs struct {
	start, count []int
	weight       []float32
	stride       int
	scratch      []float64 // one output's taps in float64
	maxCount     int       // most taps any output uses
	i0, i1       []int
	w0, w1       []float32
}

// maxTaps bounds the taps of a bilinear (triangle filter) resampling from at
// most inSize inputs to outSize outputs: the filter's support is
// max(1, in/out) on each side of the centre.
func maxTaps(inSize, outSize int) int {
	support := max(1, float64(inSize)/float64(outSize))
	return int(2*support) + 3
}

func newAxisCoeffs(maxIn, out int) axisCoeffs {
	stride := maxTaps(maxIn, out)
	return axisCoeffs{
		start:   make([]int, out),
		count:   make([]int, out),
		weight:  make([]float32, out*stride),
		stride:  stride,
		scratch: make([]float64, stride),
		i0:      make([]int, out),
		i1:      make([]int, out),
		w0:      make([]float32, out),
		w1:      make([]float32, out),
	}
}

// set computes PIL's bilinear resampling coefficients (ImagingResample's
// precompute_coeffs, which torchvision's antialiased bilinear resize matches)
// for inSize inputs and len(start) outputs: output o is centred at input
// coordinate (o + 0.5) in/out, the triangle filter is widened by in/out when
// shrinking (antialiasing), taps outside [0, inSize) are dropped and the rest
// renormalised. Taps of weight 0 at either end are dropped. Each weight is
// multiplied by gain. With mirror set, output o gets the coefficients of
// output len-1-o (a horizontal flip).
func (a *axisCoeffs) set(inSize int, mirror bool, gain float32) {
	out := len(a.start)
	scale := float64(inSize) / float64(out)
	filterScale := max(scale, 1)
	support := filterScale // the triangle's support is 1
	w := a.scratch
	a.maxCount = 0
	for o := range out {
		center := (float64(o) + 0.5) * scale
		lo := max(int(center-support+0.5), 0)
		hi := min(int(center+support+0.5), inSize)
		n := hi - lo
		if n > a.stride {
			panic(fmt.Sprintf("augment: %d resampling taps exceed the %d planned (in %d, out %d)", n, a.stride, inSize, out))
		}
		var total float64
		for k := range n {
			x := (float64(lo+k) - center + 0.5) / filterScale
			if x < 0 {
				x = -x
			}
			tap := 0.0
			if x < 1 {
				tap = 1 - x
			}
			w[k] = tap
			total += tap
		}
		first := 0
		for first < n-1 && w[first] == 0 {
			first++
		}
		for n > first+1 && w[n-1] == 0 {
			n--
		}
		dst := o
		if mirror {
			dst = out - 1 - o
		}
		count := n - first
		a.start[dst] = lo + first
		a.count[dst] = count
		a.maxCount = max(a.maxCount, count)
		ws := a.weight[dst*a.stride : dst*a.stride+count]
		for k := range count {
			ws[k] = float32(w[first+k] / total * float64(gain))
		}
		a.i0[dst], a.w0[dst] = lo+first, ws[0]
		a.i1[dst], a.w1[dst] = lo+first, 0
		if count > 1 {
			a.i1[dst], a.w1[dst] = lo+first+1, ws[1]
		}
	}
}

// cropResize writes the crop box of p, resized to outH x outW (mirrored when
// p.Flip), of the 3 x inH x inW uint8 image img into the planar float32 dst
// (3 x outH x outW, values in [0,1]). Separable: rows first into tmp
// (3 x CropH x outW), then columns.
func (t *Transform) cropResize(img []uint8, p *Params, dst []float32) {
	inH, inW, outH, outW := t.inH, t.inW, t.outH, t.outW
	if p.CropH <= 0 || p.CropW <= 0 || p.Top < 0 || p.Left < 0 || p.Top+p.CropH > inH || p.Left+p.CropW > inW {
		panic(fmt.Sprintf("augment: crop box top %d left %d h %d w %d outside the %dx%d image", p.Top, p.Left, p.CropH, p.CropW, inH, inW))
	}
	xc, yc := &t.xc, &t.yc
	xc.set(p.CropW, p.Flip, 1)
	yc.set(p.CropH, false, 1.0/255)
	row := t.row[:p.CropW]
	tmp := t.tmp[:3*p.CropH*outW]
	for c := range 3 {
		plane := img[c*inH*inW:]
		for y := range p.CropH {
			src := plane[(p.Top+y)*inW+p.Left:][:p.CropW]
			for i, v := range src {
				row[i] = float32(v)
			}
			out := tmp[(c*p.CropH+y)*outW:][:outW]
			if xc.maxCount <= 2 {
				i0, i1, w0, w1 := xc.i0[:outW], xc.i1[:outW], xc.w0[:outW], xc.w1[:outW]
				for o := range out {
					out[o] = w0[o]*row[i0[o]] + w1[o]*row[i1[o]]
				}
				continue
			}
			for o := range out {
				ws := xc.weight[o*xc.stride:][:xc.count[o]]
				in := row[xc.start[o]:][:len(ws)]
				var s float32
				for k, wk := range ws {
					s += wk * in[k]
				}
				out[o] = s
			}
		}
	}
	for c := range 3 {
		src := tmp[c*p.CropH*outW:]
		for o := range outH {
			out := dst[(c*outH+o)*outW:][:outW]
			if yc.maxCount <= 2 {
				w0, w1 := yc.w0[o], yc.w1[o]
				in0 := src[yc.i0[o]*outW:][:len(out)]
				in1 := src[yc.i1[o]*outW:][:len(out)]
				for x := range out {
					out[x] = w0*in0[x] + w1*in1[x]
				}
				continue
			}
			clear(out)
			for k, wk := range yc.weight[o*yc.stride:][:yc.count[o]] {
				in := src[(yc.start[o]+k)*outW:][:len(out)]
				for x := range out {
					out[x] += wk * in[x]
				}
			}
		}
	}
}
